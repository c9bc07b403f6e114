"use strict";
(function () {
  const D = JSON.parse(document.getElementById("run-data").textContent);
  let outputs = null; // parsed on first use
  const roles = ["planner", "test_designer", "worker", "critic", "summarizer"];
  const colors = { planner: "#7b61ff", test_designer: "#c27c0e", worker: "#1f77b4", critic: "#d62728", summarizer: "#2ca02c" };

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else if (k === "style") e.style.cssText = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
    }
    for (const k of kids) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
    return e;
  }
  function dur(ms) { return ms < 1000 ? ms + " ms" : (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s"; }
  function num(n) { return (n || 0).toLocaleString("en-US"); }
  function money(x) { return x.toFixed(4); }
  const total = Math.max(D.end_ms, 1);
  function pct(ms) { return (100 * Math.max(0, ms) / total).toFixed(3) + "%"; }
  function stepTitle(n) { const s = (D.steps || []).find(s => s.n === n); return s ? s.title : ""; }
  function phaseLabel(p) {
    const m = /^build step (\d+)$/.exec(p.name);
    return m ? "step " + m[1] + ": " + stepTitle(+m[1]) : p.name;
  }

  // Header.
  const head = document.getElementById("head");
  head.append(el("h1", {}, "Run " + D.run_id + " ", el("span", { class: "badge " + D.status }, D.status)),
    el("div", { class: "goal" }, (D.goal || "").split("\n").slice(0, 2).join("\n")),
    el("div", { class: "totals" },
      el("span", {}, D.reason + (D.explanation ? " — " + D.explanation : "")),
      el("span", {}, "wall " + dur(D.totals.wall_ms)),
      el("span", {}, num(D.totals.model_calls) + " model calls"),
      el("span", {}, num(D.totals.prompt) + " prompt / " + num(D.totals.completion) + " completion tokens"),
      D.totals.priced ? el("span", {}, "cost " + money(D.totals.cost)) : null,
      el("span", {}, num(D.totals.tool_calls) + " tool calls"),
      el("span", {}, D.totals.repair_rounds + " repair rounds"),
      el("span", {}, "sandbox " + D.sandbox)));

  // Plan.
  const steps = document.getElementById("steps");
  for (const s of D.steps || []) {
    steps.append(el("li", { class: "step", "data-state": s.state }, el("span", { class: "badge " + s.state }, s.state), " ", s.title,
      s.files && s.files.length ? el("span", { class: "meta" }, "  (" + s.files.join(", ") + ")") : null));
  }

  // Timeline: a lane of phases, then one lane per role.
  const tl = document.getElementById("timeline");
  const phaseLane = el("div", { class: "lane phases" }, el("span", { class: "label" }, "phase"));
  const ptrack = el("div", { class: "track" });
  phaseLane.append(ptrack);
  for (const p of D.phases || []) {
    const kind = p.name.startsWith("repair") ? "repair" : p.name === "check" ? "check" : "";
    ptrack.append(el("div", { class: "phase " + kind, style: "left:" + pct(p.start_ms) + ";width:" + pct(p.end_ms - p.start_ms), title: phaseLabel(p) + " · " + dur(p.end_ms - p.start_ms) }, phaseLabel(p)));
  }
  tl.append(phaseLane);
  const lanes = {};
  for (const r of roles) {
    const lane = el("div", { class: "lane", "data-role": r }, el("span", { class: "label" }, el("span", { class: "dot", style: "background:" + colors[r] }), r));
    lanes[r] = el("div", { class: "track" });
    lane.append(lanes[r]);
    tl.append(lane);
  }
  const frag = {};
  for (const r of roles) frag[r] = document.createDocumentFragment();
  (D.models || []).forEach((m, i) => {
    if (!frag[m.role]) return;
    frag[m.role].append(el("div", { class: "seg model", style: "left:" + pct(m.start_ms) + ";width:" + pct(m.dur_ms) + ";background:" + colors[m.role],
      title: "model call " + (i + 1) + " · " + m.role + " · " + dur(m.dur_ms) + " · " + num(m.prompt) + "/" + num(m.completion) + " tokens", onclick: () => show("model-" + i) }));
  });
  (D.tools || []).forEach((t, i) => {
    if (!frag[t.role]) return;
    frag[t.role].append(el("div", { class: "seg tool" + (t.ok ? "" : " bad"), style: "left:" + pct(t.start_ms) + ";width:" + pct(t.dur_ms),
      title: t.name + " " + (t.target || "") + " · " + t.decision + " · " + dur(t.dur_ms), onclick: () => { show("tool-" + i, true); } }));
  });
  for (const v of D.verdicts || []) {
    frag.critic.append(el("div", { class: "mark " + v.verdict, style: "left:calc(" + pct(v.at_ms) + " - 30px)", title: v.summary }, v.verdict));
  }
  for (const r of roles) lanes[r].append(frag[r]);
  const pt = document.getElementById("phases");
  pt.append(el("tr", {}, el("th", {}, "phase"), el("th", {}, "role"), el("th", {}, "start"), el("th", {}, "duration")));
  for (const p of D.phases || []) pt.append(el("tr", {}, el("td", {}, phaseLabel(p)), el("td", {}, p.role), el("td", { class: "n" }, dur(p.start_ms)), el("td", { class: "n" }, dur(p.end_ms - p.start_ms))));

  // Chart: prompt tokens per call, summaries marked.
  const NS = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, text) { const e = document.createElementNS(NS, tag); for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v); if (text) e.textContent = text; return e; }
  const models = D.models || [];
  const W = Math.max(600, Math.min(1400, models.length * 14 + 80)), H = 220, L = 56, B = 24;
  const maxP = Math.max(1, ...models.map(m => m.prompt));
  const bw = (W - L - 10) / Math.max(1, models.length);
  const chart = svg("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "prompt tokens per model call" });
  chart.append(svg("line", { x1: L, y1: H - B, x2: W - 5, y2: H - B, stroke: "#999" }));
  for (const f of [0.5, 1]) {
    const y = H - B - f * (H - B - 16);
    chart.append(svg("text", { x: L - 6, y: y + 4, "text-anchor": "end", "font-size": 10, fill: "#666" }, num(Math.round(f * maxP))));
    chart.append(svg("line", { x1: L, y1: y, x2: W - 5, y2: y, stroke: "#eee" }));
  }
  models.forEach((m, i) => {
    const h = (H - B - 16) * m.prompt / maxP;
    const r = svg("rect", { class: "bar", x: L + i * bw + 1, y: H - B - h, width: Math.max(1, bw - 2), height: h, fill: colors[m.role] || "#888" });
    r.append(svg("title", {}, "call " + (i + 1) + " (" + m.role + "): " + num(m.prompt) + " prompt tokens"));
    chart.append(r);
  });
  for (const s of D.summaries || []) {
    const x = L + s.next_call * bw;
    chart.append(svg("line", { class: "summary-line", x1: x, y1: 10, x2: x, y2: H - B, stroke: "#2ca02c", "stroke-dasharray": "4 3", "stroke-width": 2 }));
    const left = x > W - 140;
    chart.append(svg("text", { class: "summary-label", x: left ? x - 3 : x + 3, y: 20, "text-anchor": left ? "end" : "start", "font-size": 10, fill: "#2ca02c" }, s.kind + " " + num(s.before) + "→" + num(s.after) + " tokens"));
  }
  chart.append(svg("text", { x: L, y: H - 6, "font-size": 10, fill: "#666" }, "model calls in order (colour: role)"));
  document.getElementById("chart").append(chart);

  // Verdicts and repairs.
  const vs = document.getElementById("verdicts");
  for (const v of D.verdicts || []) {
    const box = el("div", { class: "verdict " + v.verdict, id: "verdict-" + v.n },
      el("div", {}, el("b", {}, "Check " + v.n + " "), el("span", { class: "badge " + v.verdict }, v.verdict), " at " + dur(v.at_ms) + " — " + (v.summary || "")));
    if (v.failures && v.failures.length) {
      const t = el("table", { class: "grid" }, el("tr", {}, el("th", {}, "test"), el("th", {}, "location"), el("th", {}, "expected"), el("th", {}, "actual")));
      for (const f of v.failures) t.append(el("tr", {}, el("td", {}, f.test_id), el("td", {}, f.location), el("td", {}, el("pre", {}, f.expected)), el("td", {}, el("pre", {}, f.actual))));
      box.append(t);
    }
    const ct = el("table", { class: "grid" });
    for (const c of v.checks || []) ct.append(el("tr", {}, el("td", {}, el("span", { class: "badge " + (c.ok ? "ok" : "fail") }, c.ok ? "ok" : "fail")), el("td", {}, c.name), el("td", {}, c.detail)));
    box.append(ct);
    vs.append(box);
  }
  const rp = document.getElementById("repairs");
  for (const r of D.repairs || []) rp.append(el("div", { class: "analysis", id: "repair-" + r.n }, el("b", {}, "Repair round " + r.n + ": "), r.analysis));

  // Model calls.
  const rt = document.getElementById("roles");
  rt.append(el("tr", {}, el("th", {}, "role"), el("th", {}, "calls"), el("th", {}, "prompt"), el("th", {}, "completion"), el("th", {}, "cached"), el("th", {}, "cost")));
  for (const r of D.roles || []) rt.append(el("tr", {}, el("td", {}, r.name), el("td", { class: "n" }, r.calls), el("td", { class: "n" }, num(r.prompt)), el("td", { class: "n" }, num(r.completion)), el("td", { class: "n" }, num(r.cached)), el("td", { class: "n" }, r.priced ? money(r.cost) : "—")));
  const mt = document.getElementById("models");
  mt.append(el("tr", {}, el("th", {}, "#"), el("th", {}, "role"), el("th", {}, "start"), el("th", {}, "duration"), el("th", {}, "prompt"), el("th", {}, "completion"), el("th", {}, "cached"), el("th", {}, "note")));
  const mf = document.createDocumentFragment();
  models.forEach((m, i) => mf.append(el("tr", { id: "model-" + i }, el("td", { class: "n" }, i + 1), el("td", {}, m.role), el("td", { class: "n" }, dur(m.start_ms)), el("td", { class: "n" }, dur(m.dur_ms)),
    el("td", { class: "n" }, num(m.prompt)), el("td", { class: "n" }, num(m.completion)), el("td", { class: "n" }, num(m.cached)), el("td", {}, m.error || (m.estimated ? "estimated" : m.finish || "")))));
  mt.append(mf);

  // Tool calls: a line each; the output is read from its block on the first click.
  const tf = document.createDocumentFragment();
  (D.tools || []).forEach((t, i) => {
    const where = t.role === "worker" ? (t.repair ? "repair " + t.repair : "step " + t.step) : t.role;
    const body = el("div", { class: "body" });
    const box = el("div", { class: "toolcall", id: "tool-" + i, "data-tool": t.name });
    const btn = el("button", { type: "button", "aria-expanded": "false" },
      el("span", { class: "badge " + (t.ok ? "ok" : "fail") }, t.ok ? "ok" : "failed"), " ", where + " · " + t.name + " ",
      el("span", { class: "meta" }, (t.target || "") + " · " + t.decision + (t.rule ? " (" + t.rule + ")" : "") + " · " + dur(t.dur_ms)));
    btn.addEventListener("click", () => toggle(box, btn, body, t));
    box.append(btn, body);
    tf.append(box);
  });
  document.getElementById("tools").append(tf);
  function toggle(box, btn, body, t) {
    if (!body.dataset.loaded) {
      body.dataset.loaded = "1";
      body.append(el("div", {}, "call " + t.call_id + " · decision " + t.decision + (t.rule ? " · rule " + t.rule : "") + (t.reason ? " · " + t.reason : "")));
      if (t.args) body.append(el("div", {}, "arguments"), el("pre", { class: "args" }, t.args));
      if (t.out >= 0) {
        if (outputs === null) outputs = JSON.parse(document.getElementById("run-outputs").textContent);
        body.append(el("div", {}, "output"), el("pre", { class: "output" }, outputs[t.out]));
      }
    }
    const open = box.classList.toggle("open");
    btn.setAttribute("aria-expanded", open ? "true" : "false");
  }
  function show(id, expand) {
    const e = document.getElementById(id);
    if (!e) return;
    if (expand && !e.classList.contains("open")) e.querySelector("button").click();
    e.scrollIntoView({ block: "center" });
  }

  // Files.
  const fl = document.getElementById("files");
  for (const f of D.files || []) {
    const meta = [];
    if (f.status) meta.push(f.status + " +" + (f.added || 0) + " −" + (f.removed || 0));
    if (f.writes) meta.push("written " + f.writes + "×");
    if (f.note) meta.push(f.note);
    const li = el("li", { class: "file" }, f.path, meta.length ? el("span", { class: "meta" }, "  " + meta.join(" · ")) : null);
    if (f.diff >= 0) {
      const btn = el("button", { class: "diff-toggle", "aria-expanded": "false" }, "diff");
      const pre = el("pre", { class: "diff" });
      pre.hidden = true;
      btn.addEventListener("click", () => {
        if (!pre.dataset.loaded) {
          pre.dataset.loaded = "1";
          if (outputs === null) outputs = JSON.parse(document.getElementById("run-outputs").textContent);
          for (const line of outputs[f.diff].split("\n")) {
            const c = line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : "";
            pre.append(el("span", { class: c }, line + "\n"));
          }
        }
        pre.hidden = !pre.hidden;
        btn.setAttribute("aria-expanded", pre.hidden ? "false" : "true");
      });
      li.append(" ", btn, pre);
    }
    fl.append(li);
  }
  document.body.dataset.ready = "1";
})();
