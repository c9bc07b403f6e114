package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/cmd/trio/config"
	"github.com/trioagent/trio/eval"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/llm/llmtest"
	"github.com/trioagent/trio/sandbox"
)

// copySuite writes a suite of the shipped tasks ids under dir; replays
// maps a task id to the shipped task whose replay.yaml it takes instead of
// its own.
func copySuite(t *testing.T, dir string, ids []string, replays map[string]string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("version: 1\nname: small\ntasks:\n")
	for _, id := range ids {
		fmt.Fprintf(&b, "  - id: %s\n", id)
		if err := sandbox.CopyTree(filepath.Join(suiteDir(t), id), filepath.Join(dir, id)); err != nil {
			t.Fatal(err)
		}
		if from, ok := replays[id]; ok {
			r, err := os.ReadFile(filepath.Join(suiteDir(t), from, eval.ReplayFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, id, eval.ReplayFile), r, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, eval.SuiteFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func readReport(t *testing.T, out string) eval.Report {
	t.Helper()
	var rep eval.Report
	b, err := os.ReadFile(filepath.Join(out, eval.ReportJSON))
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestEvalSamplesAndCompare runs two evals of two shipped tasks (one whose
// hidden tests pass, py-intervals whose run says COMPLETED while they
// fail) with --samples 2: A with the shipped replays, B with py-slugify
// driven by py-roman's replay. It checks the statistics with their
// intervals in the summary and eval.json, the provenance, the unpriced
// roles, the exit codes of --fail-under and of a different configuration
// in the same folder, and trio eval compare's per-task changes, paired
// difference and McNemar test (text and --json).
func TestEvalSamplesAndCompare(t *testing.T) {
	dir := t.TempDir()
	ids := []string{"py-slugify", "py-intervals"}
	suiteA := copySuite(t, filepath.Join(dir, "a"), ids, nil)
	suiteB := copySuite(t, filepath.Join(dir, "b"), ids, map[string]string{"py-slugify": "py-roman"})
	outA, outB := filepath.Join(dir, "out-a"), filepath.Join(dir, "out-b")
	common := []string{"--samples", "2", "--sandbox", "local", "--parallel", "2", "--price", "worker=1,2"}

	r := trio(t, dir, nil, append([]string{"eval", suiteA, "--out", outA}, common...)...)
	if r.code != 0 {
		t.Fatalf("eval A: exit %d\n%s", r.code, r.stderr)
	}
	rep := readReport(t, outA)
	st := rep.Stats
	if rep.Samples != 2 || len(rep.Tasks) != 4 || st.Runs != 4 || st.Tasks != 2 || len(st.PassAtK) != 2 {
		t.Fatalf("eval.json: %d samples, %d runs, stats %+v; want 2 tasks × 2 samples and pass@1, pass@2", rep.Samples, len(rep.Tasks), st)
	}
	dirs := map[string]bool{}
	for _, tr := range rep.Tasks {
		want := eval.SampleDir(outA, tr.ID, tr.Sample)
		if !strings.HasPrefix(tr.RunDir, want+string(filepath.Separator)) || dirs[tr.RunDir] {
			t.Errorf("run %s#%d in %s, want its own folder under %s", tr.ID, tr.Sample, tr.RunDir, want)
		}
		dirs[tr.RunDir] = true
	}
	if p := st.PassAt1; p.Successes != 2 || p.Trials != 4 || p.Method != eval.MethodWilson || !(p.Low < 0.5 && p.High > 0.5) {
		t.Errorf("pass@1 %+v: want 2/4 with a Wilson interval around 0.5", p)
	}
	lo, hi := eval.Wilson(2, 4)
	if st.PassAt1.Low != lo || st.PassAt1.High != hi {
		t.Errorf("pass@1 interval [%v, %v], want Wilson's [%v, %v]", st.PassAt1.Low, st.PassAt1.High, lo, hi)
	}
	if k := st.PassAtK[1]; k.K != 2 || k.Value != 0.5 || k.Method != eval.MethodBootstrap || k.Low > k.Value || k.High < k.Value {
		t.Errorf("pass@2 %+v", k)
	}
	if f := st.FalseSuccess; f.Successes != 2 || f.Trials != 4 {
		t.Errorf("false success %+v: want py-intervals' 2 COMPLETED runs of 4", f)
	}
	if st.Seed != eval.DefaultSeed || st.Cost.P50 <= 0 || st.Tokens.P90 <= 0 {
		t.Errorf("stats seed %d, cost %+v, tokens %+v", st.Seed, st.Cost, st.Tokens)
	}
	// Only the worker has a price (its replies name the model "worker").
	if strings.Join(st.UnpricedRoles, ",") != "planner,test_designer" {
		t.Errorf("unpriced roles %v, want planner, test_designer (the critic makes no call in these replays)", st.UnpricedRoles)
	}
	for _, want := range []string{"| pass@1 (hidden tests, Wilson) | 0.500 [", "(2/4)", "| pass@2 (unbiased, bootstrap) | 0.500 [",
		"| false success (COMPLETED, hidden fail) | 0.500 [", "p50", "**Unpriced roles: planner, test_designer**",
		"| py-intervals | 0/2 |", "configuration " + rep.Provenance.ConfigHash} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the summary lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "unpriced roles: planner, test_designer") {
		t.Errorf("stderr does not name the unpriced roles:\n%s", r.stderr)
	}
	pv := rep.Provenance
	if pv.ConfigHash == "" || pv.ModelSource != "replay" || pv.Roles["worker"].Provider != "replay" || pv.Sandbox.Kind != "local" ||
		len(pv.Sandbox.NotEnforced) == 0 || pv.Trio.Version == "" || pv.Trio.GoVersion == "" || pv.SuiteHash == "" ||
		pv.Policy.SHA256 == "" || pv.Config.SHA256 == "" || pv.Samples != 2 || pv.Finished.Before(pv.Started) || pv.Prices["model worker"].Completion != 2 {
		t.Errorf("provenance %+v", pv)
	}

	// The same command again: every run is reused; pass@1 0.5 is below 0.9.
	r = trio(t, dir, nil, append([]string{"eval", suiteA, "--out", outA, "--fail-under", "0.9"}, common...)...)
	if r.code != exitBelowRate || !strings.Contains(r.stderr, "below --fail-under 0.9") || strings.Count(r.stderr, "(finished earlier, skipped)") != 4 {
		t.Errorf("--fail-under 0.9: exit %d, want %d after 4 skipped runs:\n%s", r.code, exitBelowRate, r.stderr)
	}
	r = trio(t, dir, nil, append([]string{"eval", suiteA, "--out", outA, "--fail-under", "0.5"}, common...)...)
	if r.code != 0 {
		t.Errorf("--fail-under 0.5 with pass@1 0.5: exit %d, want 0:\n%s", r.code, r.stderr)
	}
	// Another configuration in the same folder is refused, then mixed.
	// Not ./trio.yaml: the evals below read that when no --config is given.
	cfg := filepath.Join(dir, "other.yaml")
	os.WriteFile(cfg, []byte("temperature: 0.3\n"), 0o644)
	r = trio(t, dir, nil, append([]string{"eval", suiteA, "--out", outA, "--config", cfg}, common...)...)
	if r.code != exitConfig || !strings.Contains(r.stderr, "--mix") || !strings.Contains(r.stderr, pv.ConfigHash) {
		t.Errorf("another configuration: exit %d, want 3 naming the folder's configuration and --mix:\n%s", r.code, r.stderr)
	}
	if readReport(t, outA).Provenance.ConfigHash != pv.ConfigHash {
		t.Errorf("the refused eval rewrote eval.json")
	}

	r = trio(t, dir, nil, append([]string{"eval", suiteB, "--out", outB}, common...)...)
	if r.code != 0 {
		t.Fatalf("eval B: exit %d\n%s", r.code, r.stderr)
	}
	if b := readReport(t, outB); b.Stats.PassAt1.Successes != 0 {
		t.Fatalf("eval B: %d hidden passes, want none (py-slugify runs py-roman's replay)", b.Stats.PassAt1.Successes)
	}

	r = trio(t, dir, nil, "eval", "compare", outA, filepath.Join(outB, eval.ReportJSON))
	if r.code != 0 {
		t.Fatalf("compare: exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"| py-slugify | 2/2 | 0/2 | **broken** |", "| py-intervals | 0/2 | 0/2 | same |", "pass rate: -0.500 [",
		"McNemar's exact test over 4 paired runs: 2 passed only in A, 0 passed only in B, p = 0.5"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("compare lacks %q:\n%s", want, r.stdout)
		}
	}
	r = trio(t, dir, nil, "eval", "compare", outA, outB, "--json")
	var c eval.Comparison
	if err := json.Unmarshal([]byte(r.stdout), &c); err != nil || r.code != 0 {
		t.Fatalf("compare --json: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	if c.Common != 2 || c.PassRateDiff.Value != -0.5 || c.PassRateDiff.High > 0 || c.McNemar.APassBFail != 2 || c.McNemar.P != 0.5 ||
		c.SameConfig != true || c.Tasks[0].Change != eval.ChangeBroken || c.PassRateDiff.Method != eval.MethodPaired {
		t.Errorf("compare --json: %+v", c)
	}
	if r := trio(t, dir, nil, "eval", "compare", outA, dir); r.code != exitConfig || !strings.Contains(r.stderr, dir) {
		t.Errorf("compare with a folder holding no eval: exit %d, want 3 naming it:\n%s", r.code, r.stderr)
	}
}

// TestEvalNeverRecordsKey runs an eval against an OpenAI-compatible
// endpoint on loopback with an API key in the environment: eval.json,
// eval.md and the provenance name the provider, host and models but never
// the key.
func TestEvalNeverRecordsKey(t *testing.T) {
	dir := t.TempDir()
	suite := copySuite(t, filepath.Join(dir, "suite"), []string{"py-slugify"}, nil)
	script, err := llm.LoadScript(filepath.Join(suite, "py-slugify", eval.ReplayFile))
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.Start(llmtest.WithModel(script, nil))
	defer srv.Close()
	const key = "sk-eval-SECRET-4f9c2e"
	cfg := filepath.Join(dir, "trio.yaml")
	var b strings.Builder
	b.WriteString("endpoint:\n  api_key_env: EVAL_TEST_KEY\n  max_retries: 0\nmodels:\n")
	for _, role := range config.Roles {
		fmt.Fprintf(&b, "  %s: %s\n", role, role) // the server replays the role the model names
	}
	b.WriteString("prices:\n  worker: {input: 1, output: 2}\n")
	os.WriteFile(cfg, []byte(b.String()), 0o644)
	out := filepath.Join(dir, "out")
	env := cleanEnv("EVAL_TEST_KEY="+key, "OPENAI_BASE_URL="+srv.URL())
	r := trio(t, dir, env, "eval", suite, "--model", "endpoint", "--config", cfg, "--sandbox", "local", "--out", out)
	if r.code != 0 {
		t.Fatalf("eval --model endpoint: exit %d\n%s", r.code, r.stderr)
	}
	rep := readReport(t, out)
	w := rep.Provenance.Roles["worker"]
	if w.Provider != config.KindOpenAI || !strings.HasPrefix(w.Host, "127.0.0.1:") || w.Model != "worker" {
		t.Errorf("worker provenance %+v, want openai at 127.0.0.1", w)
	}
	if rep.Tasks[0].Roles["worker"].Cost <= 0 || rep.Tasks[0].Roles["planner"].Priced {
		t.Errorf("roles %+v: want the worker priced from the table and the planner not", rep.Tasks[0].Roles)
	}
	files, _ := filepath.Glob(filepath.Join(out, eval.ProvenanceDir, "*.json"))
	files = append(files, filepath.Join(out, eval.ReportJSON), filepath.Join(out, eval.ReportMD))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), key) || strings.Contains(string(b), "SECRET") {
			t.Errorf("%s holds the API key", f)
		}
	}
	if !strings.Contains(rep.Provenance.Config.Text, "EVAL_TEST_KEY") {
		t.Errorf("the effective configuration lacks the key's variable name:\n%s", rep.Provenance.Config.Text)
	}
}

// TestEffectiveConfigRedacts: values that could hold a secret (headers,
// env, a URL's user, path and query) never reach the recorded
// configuration; the names do.
func TestEffectiveConfigRedacts(t *testing.T) {
	temp := 0.2
	f := &config.File{
		Endpoint:    config.Endpoint{BaseURL: "https://user:pw-SECRET@llm.example:8443/v1?key=SECRET"},
		Temperature: &temp,
		Telemetry:   config.Telemetry{Endpoint: "http://otel.example:4318", Headers: map[string]string{"Authorization": "Bearer SECRET"}},
	}
	text, err := effectiveConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "SECRET") || !strings.Contains(text, "https://llm.example:8443") || !strings.Contains(text, "Authorization") ||
		!strings.Contains(text, `"temperature": 0.2`) {
		t.Errorf("effective configuration:\n%s", text)
	}
	if hostOf(f.Endpoint.BaseURL) != "llm.example:8443" {
		t.Errorf("hostOf = %q", hostOf(f.Endpoint.BaseURL))
	}
}

// TestEvalUsageErrorsExit3: bad values of the new flags stop before any
// run, naming the flag.
func TestEvalUsageErrorsExit3(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct{ flag, value string }{
		{"--samples", "0"}, {"--fail-under", "1.5"}, {"--price", "gpt=cheap"}, {"--price", "=1,2"}, {"--price", "1"},
	} {
		r := trio(t, dir, nil, "eval", suiteDir(t), "--out", filepath.Join(dir, "out"), c.flag, c.value)
		if r.code != exitConfig || !strings.Contains(r.stderr, c.flag) {
			t.Errorf("%s %s: exit %d, want 3 naming the flag:\n%s", c.flag, c.value, r.code, r.stderr)
		}
	}
	r := trio(t, dir, nil, "eval", "--help")
	for _, want := range []string{"Exit codes:", "  4    --fail-under", "  1    a task run could not be run or judged", "--samples", "--mix"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("trio eval --help lacks %q", want)
		}
	}
}
