package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/agent"
)

// A demo run with a price table in trio.yaml reports money per role in
// report.md, in trio inspect and on the --json stream's final event.
func TestDemoReportsCost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "trio.yaml")
	// The demo's calls are made as models.default; the summarizer's model
	// has no price, so it is named as left out.
	if err := os.WriteFile(cfg, []byte("models:\n  default: demo-model\n  critic: other-model\nprices:\n  demo-model: {input: 2.5, cached_input: 1.25, output: 10}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, runs := filepath.Join(dir, "ws"), filepath.Join(dir, "runs")
	r := trio(t, dir, nil, "demo", "--config", cfg, "--json", "--sandbox", "local", "--workspace", ws, "--runs-dir", runs)
	if r.code != 0 {
		t.Fatalf("demo: exit %d\n%s", r.code, r.stderr)
	}
	var last agent.Event
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
			t.Fatalf("event %q: %v", sc.Text(), err)
		}
	}
	c := last.Cost
	if last.Kind != agent.EventRunFinished || c == nil || !c.Priced || c.Total <= 0 || c.Roles[agent.RoleWorker] <= 0 {
		t.Fatalf("final event %+v (cost %+v), want run_finished with a positive priced cost", last, c)
	}
	if _, ok := c.Roles[agent.RoleCritic]; ok || !strings.Contains(strings.Join(c.UnpricedRoles, ","), agent.RoleCritic) {
		t.Errorf("critic has no price but cost %+v", c)
	}
	if !strings.Contains(r.stderr, "cost: ") {
		t.Errorf("the end-of-run report has no cost line:\n%s", r.stderr)
	}
	ids, _ := os.ReadDir(runs)
	if len(ids) != 1 {
		t.Fatalf("runs: %v", ids)
	}
	runDir := filepath.Join(runs, ids[0].Name())
	rep, err := agent.LoadReport(runDir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Metrics.Cost != c.Total || rep.Metrics.Roles[agent.RoleWorker].Cost != c.Roles[agent.RoleWorker] {
		t.Errorf("report.json cost %v (worker %v), final event %v (worker %v)", rep.Metrics.Cost, rep.Metrics.Roles[agent.RoleWorker].Cost, c.Total, c.Roles[agent.RoleWorker])
	}
	md, err := os.ReadFile(filepath.Join(runDir, agent.ReportMD))
	if err != nil {
		t.Fatal(err)
	}
	if want := "| cost | " + rep.Metrics.CostText() + " |"; !strings.Contains(string(md), want) || !strings.Contains(string(md), rep.Metrics.Roles[agent.RoleWorker].CostText()) {
		t.Errorf("report.md lacks %q and the worker's cost:\n%s", want, md)
	}
	in := trio(t, dir, nil, "inspect", runDir)
	if in.code != 0 || !strings.Contains(in.stdout, "Cost: "+rep.Metrics.CostText()) || !strings.Contains(in.stdout, rep.Metrics.Roles[agent.RoleWorker].CostText()) {
		t.Errorf("inspect: exit %d, want the cost %s:\n%s%s", in.code, rep.Metrics.CostText(), in.stdout, in.stderr)
	}
}
