"use strict";
(function () {
  const D = JSON.parse(document.getElementById("report-data").textContent);
  const SVG = "http://www.w3.org/2000/svg";

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else e.setAttribute(k, v);
    }
    for (const k of kids) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
    return e;
  }
  function svg(tag, attrs, ...kids) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    for (const k of kids) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
    return e;
  }
  // Rates are shown with three decimals everywhere, so that the page's
  // text can be compared with eval.json's numbers.
  function rate(x) { return (x || 0).toFixed(3); }
  function interval(e) { return rate(e.value) + " [" + rate(e.low) + ", " + rate(e.high) + "]"; }
  function money(x) { return (x || 0).toFixed(4); }
  function row(table, cells, head) {
    const tr = el("tr");
    for (const c of cells) {
      const numeric = typeof c === "number" || (typeof c === "string" && /^[\d.\[\], ]+$/.test(c));
      tr.append(el(head ? "th" : "td", numeric && !head ? { class: "n" } : {}, c));
    }
    table.append(tr);
    return tr;
  }

  // Header.
  const head = document.getElementById("head");
  head.append(el("h1", {}, "Eval " + D.suite),
    el("div", { class: "meta" },
      el("span", {}, D.tasks + " tasks"),
      el("span", {}, D.samples + (D.samples === 1 ? " sample" : " samples") + " each"),
      el("span", {}, D.runs + " runs"),
      el("span", {}, "sandbox " + D.sandbox),
      D.config_hash ? el("span", {}, "configuration " + D.config_hash) : null),
    D.unisolated > 0 ? el("div", { class: "warn", id: "unisolated" }, "UNISOLATED: " + D.unisolated + " of " + D.runs + " runs ran without isolation (the local sandbox)") : null);

  // Summary.
  const sum = document.getElementById("summary");
  row(sum, ["statistic", "value [95 % interval]", "count"], true);
  row(sum, ["pass@1 (hidden tests)", interval(D.pass_at_1), D.passed + "/" + D.runs]).id = "sum-pass-at-1";
  for (const k of D.pass_at_k) if (k.k > 1) row(sum, ["pass@" + k.k, interval(k), ""]).id = "sum-pass-at-" + k.k;
  row(sum, ["Critic agrees with hidden tests", interval(D.agreement), D.agreed + "/" + D.runs]).id = "sum-agreement";
  row(sum, ["COMPLETED but hidden tests fail", interval(D.false_success), D.false_completed + "/" + D.completed]).id = "sum-false-success";

  // Pass rate per tag: bars with their intervals, then the table.
  const tagRows = D.tags;
  const bw = 560, barH = 22, left = 140, top = 24;
  const th = top + tagRows.length * (barH + 6) + 30;
  const tsvg = svg("svg", { width: left + bw + 40, height: th, id: "tags-svg", role: "img", "aria-label": "pass rate per tag" });
  const x = v => left + v * bw;
  for (let g = 0; g <= 10; g += 2) {
    tsvg.append(svg("line", { class: "grid", x1: x(g / 10), x2: x(g / 10), y1: top - 6, y2: th - 24 }),
      svg("text", { x: x(g / 10), y: th - 8, "text-anchor": "middle" }, (g / 10).toFixed(1)));
  }
  tagRows.forEach((t, i) => {
    const y = top + i * (barH + 6);
    const g = svg("g", { class: "tag", "data-tag": t.tag });
    g.append(svg("text", { x: left - 8, y: y + barH / 2 + 4, "text-anchor": "end" }, t.tag),
      svg("rect", { class: "bar", x: left, y: y, width: Math.max(1, t.rate.value * bw), height: barH },
        svg("title", {}, t.tag + ": " + interval(t.rate) + ", " + t.passed + "/" + t.runs + " runs")),
      svg("line", { class: "whisker", x1: x(t.rate.low), x2: x(t.rate.high), y1: y + barH / 2, y2: y + barH / 2 }),
      svg("line", { class: "whisker", x1: x(t.rate.low), x2: x(t.rate.low), y1: y + 5, y2: y + barH - 5 }),
      svg("line", { class: "whisker", x1: x(t.rate.high), x2: x(t.rate.high), y1: y + 5, y2: y + barH - 5 }));
    tsvg.append(g);
  });
  tsvg.append(svg("line", { class: "axis", x1: left, x2: left, y1: top - 6, y2: th - 24 }));
  document.getElementById("tags-chart").append(tsvg);
  const tags = document.getElementById("tags");
  row(tags, ["tag", "tasks", "passed / runs", "pass rate [95 %]"], true);
  for (const t of tagRows) row(tags, [t.tag, t.tasks, t.passed + "/" + t.runs, interval(t.rate)]).dataset.tag = t.tag;

  // Cost against pass rate, one point per task.
  const useCost = D.cost_kind === "cost_usd";
  const cost = p => useCost ? p.mean_cost_usd : p.mean_tokens;
  const W = 640, H = 360, L = 60, R = 20, T = 16, B = 44;
  const maxC = Math.max(1e-9, ...D.per_task.map(cost)) * 1.1;
  const px = c => L + (c / maxC) * (W - L - R), py = r => T + (1 - r) * (H - T - B);
  const csvg = svg("svg", { width: W, height: H, id: "cost-svg", role: "img", "aria-label": "cost against pass rate per task" });
  for (let g = 0; g <= 4; g++) {
    const r = g / 4;
    csvg.append(svg("line", { class: "grid", x1: L, x2: W - R, y1: py(r), y2: py(r) }), svg("text", { x: L - 6, y: py(r) + 4, "text-anchor": "end" }, r.toFixed(2)));
    const c = maxC * g / 4;
    csvg.append(svg("text", { x: px(c), y: H - B + 16, "text-anchor": "middle" }, useCost ? c.toFixed(4) : Math.round(c)));
  }
  csvg.append(svg("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }), svg("line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }),
    svg("text", { x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle" }, useCost ? "mean cost per run (US $)" : "mean tokens per run (no prices)"),
    svg("text", { x: 14, y: (T + H - B) / 2, transform: "rotate(-90 14 " + (T + H - B) / 2 + ")", "text-anchor": "middle" }, "pass rate"));
  for (const p of D.per_task) {
    const g = svg("g", { class: "task", "data-task": p.id });
    if (p.runs > 1) g.append(svg("line", { class: "whisker", x1: px(cost(p)), x2: px(cost(p)), y1: py(p.rate.low), y2: py(p.rate.high) }));
    g.append(svg("circle", { class: "point " + (p.rate.value === 1 ? "pass" : p.rate.value === 0 ? "fail" : ""), cx: px(cost(p)), cy: py(p.rate.value), r: 6 },
      svg("title", {}, p.id + ": pass rate " + interval(p.rate) + " (" + p.passed + "/" + p.runs + "), mean cost $" + money(p.mean_cost_usd) + ", mean tokens " + Math.round(p.mean_tokens))),
      svg("text", { x: px(cost(p)) + 8, y: py(p.rate.value) - 6 }, p.id));
    csvg.append(g);
  }
  document.getElementById("cost-chart").append(csvg);
  const tasks = document.getElementById("tasks");
  row(tasks, ["task", "tags", "passed / runs", "pass rate [95 %]", "mean cost $", "mean tokens"], true);
  for (const p of D.per_task) row(tasks, [p.id, (p.tags || []).join(", "), p.passed + "/" + p.runs, interval(p.rate), money(p.mean_cost_usd), Math.round(p.mean_tokens)]).dataset.task = p.id;

  // Disagreements, each linked to its run's page.
  const dis = document.getElementById("disagreements");
  if (D.disagreements.length === 0) {
    document.getElementById("disagreements-none").hidden = false;
    dis.hidden = true;
  } else {
    row(dis, ["task", "sample", "run said", "hidden tests", "run"], true);
    for (const d of D.disagreements) {
      const tr = el("tr", { "data-task": d.task, "data-kind": d.kind });
      tr.append(el("td", {}, d.task), el("td", { class: "n" }, d.sample),
        el("td", {}, el("span", { class: "badge " + d.kind }, d.kind === "false_success" ? "COMPLETED" : d.status), " ", d.reason),
        el("td", { class: "detail" }, d.hidden),
        el("td", {}, d.view ? el("a", { href: d.view }, "trio view " + d.run_id) : el("span", { class: "detail" }, d.run_id + " (" + d.missing + ")")));
      dis.append(tr);
    }
  }
  document.body.dataset.ready = "1";
})();
