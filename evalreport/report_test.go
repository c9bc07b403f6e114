package evalreport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/eval"
	"github.com/trioagent/trio/evalreport"
	"github.com/trioagent/trio/llm"
)

// evalOut is a real eval of two shipped tasks, made once: py-roman passes,
// py-intervals says COMPLETED while its hidden tests fail.
var evalOut struct {
	once sync.Once
	dir  string
	err  error
}

func realEval(t *testing.T) string {
	t.Helper()
	e := &evalOut
	e.once.Do(func() {
		s, err := eval.Load("../evals")
		if err != nil {
			e.err = err
			return
		}
		tasks, err := s.Select([]string{"py-roman", "py-intervals"}, nil)
		if err != nil {
			e.err = err
			return
		}
		if e.dir, e.err = os.MkdirTemp("", "trio-evalreport-"); e.err != nil {
			return
		}
		replay := func(_ context.Context, t eval.Task) (llm.Model, func(), error) {
			s, err := eval.ReplayScript(t)
			return s, func() {}, err
		}
		ev, err := eval.New(replay, eval.WithOut(e.dir), eval.WithParallel(2),
			eval.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxLocal}),
			eval.WithPrices(map[string]eval.Price{"*": {Prompt: 0.4, Completion: 1.6}}))
		if err != nil {
			e.err = err
			return
		}
		_, e.err = ev.Run(context.Background(), s, tasks)
	})
	if e.err != nil {
		t.Fatal(e.err)
	}
	return e.dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if evalOut.dir != "" {
		os.RemoveAll(evalOut.dir)
	}
	os.Exit(code)
}

// pageData reads the JSON the page embeds.
func pageData(t *testing.T, path string) evalreport.Data {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, `id="report-data">`)
	j := strings.Index(s[i:], "</script>")
	if i < 0 || j < 0 {
		t.Fatalf("no report-data block in %s", path)
	}
	var d evalreport.Data
	if err := json.Unmarshal([]byte(s[i+len(`id="report-data">`):i+j]), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// The page of a real eval: its numbers are eval.json's, the disagreement
// links to a view page that exists, and nothing in it reaches the network.
func TestReportOfRealEval(t *testing.T) {
	out := realEval(t)
	page := filepath.Join(t.TempDir(), "elsewhere", "report.html")
	os.MkdirAll(filepath.Dir(page), 0o755)
	path, err := evalreport.WriteFile(out, page)
	if err != nil {
		t.Fatal(err)
	}
	var rep eval.Report
	b, _ := os.ReadFile(filepath.Join(out, eval.ReportJSON))
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	d := pageData(t, path)
	if d.Runs != len(rep.Tasks) || d.Passed != rep.Totals.HiddenPass || d.Completed != rep.Totals.Completed ||
		d.FalseCompleted != rep.Totals.FalseCompleted || fmt.Sprintf("%.3f", d.PassAt1.Value) != fmt.Sprintf("%.3f", rep.Totals.PassAt1) {
		t.Errorf("page data %+v, eval.json totals %+v", d, rep.Totals)
	}
	if len(d.Disagreements) != 1 || d.Disagreements[0].Task != "py-intervals" || d.Disagreements[0].Kind != "false_success" {
		t.Fatalf("disagreements %+v, want py-intervals' false success", d.Disagreements)
	}
	dis := d.Disagreements[0]
	if strings.HasPrefix(dis.View, "/") || !strings.HasSuffix(dis.View, "/view.html") {
		t.Errorf("the view link %q is not a relative path to view.html", dis.View)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), filepath.FromSlash(dis.View))); err != nil {
		t.Errorf("the view link %q does not resolve from the page: %v", dis.View, err)
	}
	if d.CostKind != "cost_usd" || len(d.PerTask) != 2 || d.PerTask[0].MeanCost <= 0 {
		t.Errorf("cost kind %s, per task %+v", d.CostKind, d.PerTask)
	}
	for _, tr := range d.Tags {
		runs, passed := 0, 0
		for _, r := range rep.Tasks {
			for _, tag := range r.Tags {
				if tag == tr.Tag {
					runs++
					if r.Hidden.Pass {
						passed++
					}
				}
			}
		}
		if tr.Runs != runs || tr.Passed != passed || tr.Rate.Low > tr.Rate.Value || tr.Rate.High < tr.Rate.Value {
			t.Errorf("tag %s: %+v, eval.json has %d/%d", tr.Tag, tr, passed, runs)
		}
	}
	html, _ := os.ReadFile(path)
	for _, bad := range []string{"http://", "https://", "src=\"//"} {
		if strings.Contains(strings.ReplaceAll(string(html), "http://www.w3.org/2000/svg", ""), bad) {
			t.Errorf("the page names %q: it must need no network", bad)
		}
	}
}

// An eval.json with statistics (samples, intervals, per-task rates) is
// shown with its own numbers; one without them gets Wilson's intervals; a
// run folder that is gone leaves its disagreement unlinked, saying why.
func TestReportToleratesShapes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(v any) {
		b, _ := json.Marshal(v)
		os.WriteFile(filepath.Join(dir, "eval.json"), b, 0o644)
	}
	run := func(id string, sample int, pass, completed bool, tags ...string) map[string]any {
		return map[string]any{"id": id, "sample": sample, "tags": tags, "run_id": fmt.Sprintf("%s-%d", id, sample), "run_dir": "/nowhere/" + id,
			"hidden": map[string]any{"pass": pass, "detail": "failed: test_x"}, "status": "completed", "reason": "completed", "completed": completed, "tokens": 1000 * sample, "isolated": true}
	}
	runs := []any{run("a", 1, true, true, "x"), run("a", 2, false, true, "x"), run("a", 3, true, true, "x"), run("b", 1, false, false, "x", "y"), run("b", 2, false, false, "x", "y"), run("b", 3, true, false, "x", "y")}
	write(map[string]any{"suite": "s", "sandbox": "userns", "samples": 3, "tasks": runs})
	d, err := evalreport.Load(dir, filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Tasks != 2 || d.Runs != 6 || d.Passed != 3 || d.CostKind != "tokens" || len(d.PerTask) != 2 || d.PerTask[0].Runs != 3 || d.PerTask[0].MeanTokens != 2000 {
		t.Errorf("without statistics: %+v", d)
	}
	// Wilson's 95 % interval of 3/6 is [0.188, 0.812].
	if got := fmt.Sprintf("%.3f %.3f %.3f", d.PassAt1.Value, d.PassAt1.Low, d.PassAt1.High); got != "0.500 0.188 0.812" {
		t.Errorf("pass@1 %s, want Wilson's 0.500 0.188 0.812", got)
	}
	if len(d.Tags) != 2 || d.Tags[0].Tag != "x" || d.Tags[0].Runs != 6 || d.Tags[1].Tag != "y" || d.Tags[1].Passed != 1 || d.Tags[1].Tasks != 1 {
		t.Errorf("tags %+v", d.Tags)
	}
	if len(d.Disagreements) != 2 || d.Disagreements[0].Sample != 2 || d.Disagreements[0].View != "" || !strings.Contains(d.Disagreements[0].Missing, "not under") ||
		d.Disagreements[1].Kind != "missed_success" {
		t.Errorf("disagreements %+v", d.Disagreements)
	}

	est := func(v, lo, hi float64) map[string]any {
		return map[string]any{"value": v, "low": lo, "high": hi, "method": "wilson"}
	}
	write(map[string]any{"suite": "s", "samples": 3, "tasks": runs,
		"stats":    map[string]any{"pass_at_1": est(0.5, 0.2, 0.8), "pass_at_k": []any{map[string]any{"k": 2, "value": 0.7, "low": 0.5, "high": 0.9}}, "agreement": est(0.4, 0.1, 0.7)},
		"per_task": []any{map[string]any{"id": "a", "runs": 3, "passed": 2, "pass_rate": est(0.667, 0.21, 0.94), "mean_cost_usd": 0.25, "mean_tokens": 2000}}})
	d, err = evalreport.Load(dir, filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if d.PassAt1.Low != 0.2 || d.Agreement.High != 0.7 || len(d.PassAtK) != 1 || d.PassAtK[0].K != 2 || d.PerTask[0].Rate.Low != 0.21 || d.PerTask[0].MeanCost != 0.25 {
		t.Errorf("with statistics: %+v", d)
	}

	if _, err := evalreport.Load(t.TempDir(), "r.html"); err == nil {
		t.Errorf("a folder without eval.json loaded")
	}
}
