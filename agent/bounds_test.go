package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/llm/llmtest"
	"github.com/trioagent/trio/summarizer"
)

// A goal too large or not text is refused before any model call, and
// leaves no run folder.
func TestGoalRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, goal, want string
	}{
		{"50 MB", strings.Repeat("Build a calculator. ", 50<<20/20), "the goal is 50.0 MiB (52428800 bytes), more than the limit of 256.0 KiB"},
		{"binary", "Build\x00\xff\xfe\x01 it", "not UTF-8 text (invalid byte 0xff at offset 6)"},
		{"NUL", "Build it\x00", "NUL byte at offset 8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			m := newFake()
			a, err := agent.New(m, nil, e.opts()...)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := a.Run(context.Background(), tt.goal)
			if rep != nil || !errors.Is(err, agent.ErrInvalidInput) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run: %v, %v; want an invalid-input error with %q", rep, err, tt.want)
			}
			if len(m.requests) != 0 {
				t.Errorf("%d model calls", len(m.requests))
			}
			if _, err := os.Stat(e.runs); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the runs folder exists: %v", err)
			}
		})
	}
}

// A Planner or test-designer request over the context window or the
// token budget stops the run with a named reason, and is never sent.
func TestRequestsHeldBeforeSent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := newFake().add(agent.RolePlanner, calcPlan())
	// A 12 KiB goal is some 2500 tokens: more than a 1024-token window.
	goal := strings.Repeat("The calculator adds two numbers. ", 12<<10/33)
	a, _ := agent.New(m, nil, e.opts(agent.WithWindow(summarizer.Config{ContextLimit: 1024}))...)
	rep, err := a.Run(context.Background(), goal)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Reason != agent.StopContextBudget || !strings.Contains(rep.Detail, "the planner request of about") ||
		!strings.Contains(rep.Detail, "context window of 1024 tokens") || !strings.Contains(rep.Detail, "not sent") {
		t.Errorf("stopped with %s (%s), want context_budget naming the planner's request", rep.Reason, rep.Detail)
	}
	if len(m.requests) != 0 {
		t.Errorf("%d requests sent", len(m.requests))
	}

	// The Planner reports 5700 tokens: the test designer's request (its
	// prompt alone is longer than 300) would pass a budget of 6000.
	e = newEnv(t)
	m = newFake().add(agent.RolePlanner, withUsage(calcPlan(), 5700, 0)).add(agent.RoleTestDesigner, calcSuite())
	rep = run(t, m, nil, e.opts(agent.WithBudgets(agent.Budgets{MaxTokens: 6000}))...)
	if rep.Reason != agent.StopBudgetTokens || !strings.Contains(rep.Detail, "the test_designer request of about") ||
		!strings.Contains(rep.Detail, "5700 of 6000 spent") {
		t.Errorf("stopped with %s (%s), want budget_tokens naming the test designer's request", rep.Reason, rep.Detail)
	}
	if n := len(m.requestsOf(agent.RoleTestDesigner)); n != 0 {
		t.Errorf("%d test-designer requests sent", n)
	}
	trace, _ := agent.ReadTrace(filepath.Join(e.runs, "run"))
	refused := 0
	for _, te := range trace {
		if te.Kind == "model_refused" && te.Role == agent.RoleTestDesigner && te.Reason == agent.StopBudgetTokens {
			refused++
		}
	}
	if refused != 1 {
		t.Errorf("%d model_refused trace entries for the test designer, want 1", refused)
	}
}

// Each retried attempt is a trace event with its status, attempt and
// wait, counted per role in the report.
func TestRetriesRecorded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fake := newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
		add(agent.RoleWorker, calls("", write("go.mod", goMod), write("calc.go", calcGood), finish("done")))
	srv := llmtest.NewServer(t, llmtest.WithModel(fake, nil))
	srv.Enqueue(llmtest.RateLimited("0"), llmtest.ServerError()) // the Planner's first two attempts
	models := map[string]string{}
	for _, r := range []string{agent.RolePlanner, agent.RoleTestDesigner, agent.RoleWorker, agent.RoleCritic, agent.RoleSummarizer} {
		models[r] = r
	}
	p, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL(), APIKey: "k", Model: "worker", Models: models,
		MaxRetries: 3, BackoffBase: 1, BackoffMax: 1})
	if err != nil {
		t.Fatal(err)
	}
	var retryEvents []agent.Event
	rep := run(t, p, nil, e.opts(agent.WithObserver(func(ev agent.Event) {
		if ev.Kind == agent.EventModelRetry {
			retryEvents = append(retryEvents, ev)
		}
	}))...)
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("%s (%s)", rep.Reason, rep.Detail)
	}
	if got := rep.Metrics.Roles[agent.RolePlanner].Retries; got != 2 {
		t.Errorf("planner retries %d, want 2", got)
	}
	if got := rep.Metrics.Roles[agent.RoleWorker].Retries; got != 0 {
		t.Errorf("worker retries %d, want 0", got)
	}
	trace, _ := agent.ReadTrace(filepath.Join(e.runs, "run"))
	var statuses []int
	for _, te := range trace {
		if te.Kind == "model_retry" {
			if te.Role != agent.RolePlanner || te.Attempt != len(statuses)+1 || te.Error == "" {
				t.Errorf("retry entry %+v", te)
			}
			statuses = append(statuses, te.Status)
		}
	}
	if len(statuses) != 2 || statuses[0] != 429 || statuses[1] != 500 {
		t.Errorf("retry statuses %v, want [429 500]", statuses)
	}
	if len(retryEvents) != 2 || !strings.Contains(retryEvents[0].Message, "attempt 1 failed (HTTP 429)") {
		t.Errorf("retry events %+v", retryEvents)
	}
	if md := readFile(t, filepath.Join(e.runs, "run", agent.ReportMD)); !strings.Contains(md, "| planner | 1 | 2 |") {
		t.Errorf("report.md does not count the planner's retries:\n%s", md)
	}
}
