package agent_test

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/llm"
)

// TestCostPerRole runs the calc repair with the Worker's replies reporting
// cached prompt tokens and prices for two roles: the report, report.md and
// Inspect give tokens, cached tokens and money per role, and name the
// roles that had no price.
func TestCostPerRole(t *testing.T) {
	t.Parallel()
	m := buggyThenFixed()
	for i := range m.replies[agent.RoleWorker] {
		m.replies[agent.RoleWorker][i].Usage = llm.Usage{PromptTokens: 1000, CachedPromptTokens: 800, CompletionTokens: 50}
	}
	e := newEnv(t)
	prices := map[string]llm.Price{
		agent.RoleWorker:  {Input: 2, CachedInput: 0.5, Output: 8},
		agent.RolePlanner: {Input: 2, CachedInput: 0.5, Output: 8},
	}
	var finished *agent.Cost
	observe := agent.WithObserver(func(ev agent.Event) {
		if ev.Kind == agent.EventRunFinished {
			finished = ev.Cost
		}
	})
	rep := run(t, m, nil, e.opts(agent.WithPrices(prices), observe)...)
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("reason %s (%s)", rep.Reason, rep.Detail)
	}
	// Worker: 3 calls of 200 uncached, 800 cached, 50 completion tokens.
	wantWorker := 3 * (200*2 + 800*0.5 + 50*8) / 1e6
	wantPlanner := (100*2 + 10*8) / 1e6
	w := rep.Metrics.Roles[agent.RoleWorker]
	if w.CachedPromptTokens != 2400 || !w.Priced || math.Abs(w.Cost-wantWorker) > 1e-12 {
		t.Errorf("worker usage %+v, want 2400 cached tokens and cost %v", w, wantWorker)
	}
	if c := rep.Metrics.Roles[agent.RoleCritic]; c.Priced || c.Cost != 0 {
		t.Errorf("critic has no price but reports %+v", c)
	}
	if got := rep.Metrics.Cost; math.Abs(got-(wantWorker+wantPlanner)) > 1e-12 {
		t.Errorf("total cost %v, want %v", got, wantWorker+wantPlanner)
	}
	if got := strings.Join(rep.Metrics.UnpricedRoles, ","); got != "critic,test_designer" {
		t.Errorf("unpriced roles %q, want critic,test_designer", got)
	}

	if finished == nil || !finished.Priced || finished.Total != rep.Metrics.Cost || finished.Roles[agent.RoleWorker] != w.Cost || finished.CachedPromptTokens != 2400 {
		t.Errorf("run_finished cost %+v, want the report's %v", finished, rep.Metrics.Cost)
	}

	dir := filepath.Join(e.runs, "run")
	var disk struct {
		Metrics struct {
			Cost               float64 `json:"cost"`
			CachedPromptTokens int     `json:"cached_prompt_tokens"`
			Roles              map[string]struct {
				Cost float64 `json:"cost"`
			} `json:"roles"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, agent.ReportJSON))), &disk); err != nil {
		t.Fatal(err)
	}
	if disk.Metrics.Cost != rep.Metrics.Cost || disk.Metrics.CachedPromptTokens != 2400 || disk.Metrics.Roles[agent.RoleWorker].Cost != w.Cost {
		t.Errorf("report.json metrics %+v disagree with the report", disk.Metrics)
	}
	md := readFile(t, filepath.Join(dir, agent.ReportMD))
	for _, want := range []string{"| cost | 0.0039 (without critic, test_designer: no price) |", "| worker | 3 | 0 | 3000 | 2400 / 0 | 150 | 0.0036 |", "| critic | 1 | 0 | 100 | 0 / 0 | 10 | — |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	ins, err := agent.Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ins.Metrics.Cost != rep.Metrics.Cost || ins.Metrics.Roles[agent.RoleWorker].Cost != w.Cost {
		t.Errorf("Inspect cost %v / worker %v, want %v / %v", ins.Metrics.Cost, ins.Metrics.Roles[agent.RoleWorker].Cost, rep.Metrics.Cost, w.Cost)
	}
}
