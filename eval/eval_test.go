package eval_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/eval"
	"github.com/trioagent/trio/llm"
)

// shipped is the suite in evals/, loaded once.
func shipped(t *testing.T) *eval.Suite {
	t.Helper()
	s, err := eval.Load("../evals")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// replay is a ModelFunc handing each task its own replay script.
func replay(_ context.Context, t eval.Task) (llm.Model, func(), error) {
	s, err := eval.ReplayScript(t)
	if err != nil {
		return nil, nil, err
	}
	return s, func() {}, nil
}

func runSuite(t *testing.T, ctx context.Context, s *eval.Suite, tasks []eval.Task, out string, parallel int, obs func(eval.Event)) (*eval.Report, error) {
	t.Helper()
	opts := []eval.Option{eval.WithOut(out), eval.WithParallel(parallel), eval.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxLocal})}
	if obs != nil {
		opts = append(opts, eval.WithObserver(obs))
	}
	e, err := eval.New(replay, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e.Run(ctx, s, tasks)
}

// want is what each shipped replay must come to: the run's own verdict and
// the hidden tests'.
var want = map[string]struct{ completed, hidden bool }{
	"py-slugify": {true, true}, "py-wc-cli": {true, true}, "py-roman": {true, true},
	"py-csvsum-cli": {true, true}, "py-rpn": {true, true}, "py-intervals": {true, false},
	"py-inventory-seed": {true, true}, "py-median-stuck": {false, false},
	"go-reverse": {true, true}, "go-wordfreq": {true, true}, "go-upper-cli": {true, true},
	"go-mean-repair": {true, true},
}

// parallel4 is the shipped suite run once with 4 tasks at a time, shared
// by the tests that read it (a run of the suite takes half a minute here).
var parallel4 struct {
	once sync.Once
	out  string
	rep  *eval.Report
	wall time.Duration
	err  error
}

func runParallel4(t *testing.T) (*eval.Report, string, time.Duration) {
	t.Helper()
	p := &parallel4
	p.once.Do(func() {
		s := shipped(t)
		var err error
		if p.out, err = os.MkdirTemp("", "trio-eval-test-"); err != nil {
			p.err = err
			return
		}
		start := time.Now()
		p.rep, p.err = runSuite(t, context.Background(), s, s.Tasks, p.out, 4, nil)
		p.wall = time.Since(start)
	})
	if p.err != nil {
		t.Fatal(p.err)
	}
	return p.rep, p.out, p.wall
}

func TestMain(m *testing.M) {
	code := m.Run()
	if parallel4.out != "" {
		os.RemoveAll(parallel4.out)
	}
	os.Exit(code)
}

func TestShippedSuite(t *testing.T) {
	s := shipped(t)
	if len(s.Tasks) < 12 {
		t.Fatalf("%d tasks, want at least 12", len(s.Tasks))
	}
	rep, out, wall := runParallel4(t)
	t.Logf("whole suite, parallel 4, local sandbox: %s", wall)
	if len(rep.Tasks) != len(s.Tasks) {
		t.Fatalf("%d results, want %d", len(rep.Tasks), len(s.Tasks))
	}
	for _, r := range rep.Tasks {
		w, ok := want[r.ID]
		if !ok {
			t.Errorf("task %s: no expectation in this test", r.ID)
			continue
		}
		if r.Completed != w.completed || r.Hidden.Pass != w.hidden {
			t.Errorf("task %s: completed %v (%s) hidden pass %v (%s), want %v and %v", r.ID, r.Completed, r.Reason, r.Hidden.Pass, r.Hidden.Detail, w.completed, w.hidden)
		}
		// The eval's numbers are the run folder's report's.
		disk, err := agent.LoadReport(r.RunDir)
		if err != nil {
			t.Fatal(err)
		}
		m := disk.Metrics
		if r.Completed != m.Completed || r.FirstPass != m.FirstPass || r.RepairRounds != m.RepairRounds ||
			r.Tokens != m.PromptTokens+m.CompletionTokens || r.ToolCalls != m.ToolCalls || r.ToolFailures != m.ToolFailures ||
			r.WallTime != m.WallTime || r.Steps != m.Steps || r.WorkerTurns != m.WorkerTurns || r.Reason != string(disk.Reason) {
			t.Errorf("task %s: result %+v differs from its report's metrics %+v", r.ID, r, m)
		}
		for role, u := range m.Roles {
			if got := r.Roles[role]; got.PromptTokens != u.PromptTokens || got.CompletionTokens != u.CompletionTokens || got.Calls != u.Calls {
				t.Errorf("task %s role %s: %+v, report %+v", r.ID, role, got, u)
			}
		}
		// The hidden tests never reached the run: not its trace, not its
		// workspace.
		task := taskByID(t, s, r.ID)
		trace, err := os.ReadFile(filepath.Join(r.RunDir, agent.TraceFile))
		if err != nil {
			t.Fatal(err)
		}
		filepath.WalkDir(task.HiddenPath(), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(task.HiddenPath(), p)
			b, _ := os.ReadFile(p)
			if strings.Contains(string(trace), filepath.Base(p)) || strings.Contains(string(trace), firstTestName(string(b))) {
				t.Errorf("task %s: the trace mentions hidden test %s", r.ID, rel)
			}
			if _, err := os.Stat(filepath.Join(disk.Workspace, rel)); err == nil {
				t.Errorf("task %s: hidden test %s is in the run's workspace", r.ID, rel)
			}
			return nil
		})
	}
	tot := rep.Totals
	if tot.FalseCompleted < 1 || tot.Agreement == 1 {
		t.Errorf("totals %+v: want at least one COMPLETED run whose hidden tests fail", tot)
	}
	if tot.Tasks != 12 || tot.HiddenPass != 10 || tot.Completed != 11 || tot.FalseCompleted != 1 {
		t.Errorf("totals %+v", tot)
	}
	if tot.MeanRepairRounds == 0 || tot.ToolCalls == 0 || tot.ToolFailures == 0 {
		t.Errorf("totals %+v: want repair rounds, tool calls and tool failures", tot)
	}
	// eval.json holds the same report.
	var disk eval.Report
	b, err := os.ReadFile(filepath.Join(out, eval.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &disk); err != nil {
		t.Fatal(err)
	}
	if disk.Totals != tot {
		t.Errorf("eval.json totals %+v, want %+v", disk.Totals, tot)
	}
	md, err := os.ReadFile(filepath.Join(out, eval.ReportMD))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| py-intervals | FAIL (1/3) UNISOLATED | completed | **no** |") {
		t.Errorf("eval.md does not show the disagreement:\n%s", md)
	}
}

func taskByID(t *testing.T, s *eval.Suite, id string) eval.Task {
	for _, x := range s.Tasks {
		if x.ID == id {
			return x
		}
	}
	t.Fatalf("no task %s", id)
	return eval.Task{}
}

// firstTestName is the first "def test_" or "func Test" name of a file, a
// string that only the hidden file holds.
func firstTestName(src string) string {
	for _, pre := range []string{"func TestHidden", "class Hidden"} {
		if i := strings.Index(src, pre); i >= 0 {
			rest := src[i+len(pre)-len("Hidden"):]
			if j := strings.IndexAny(rest, "(:"); j > 0 {
				return rest[:j]
			}
		}
	}
	return "\x00never"
}

// TestParallelSameResults runs the suite with 1 and 4 tasks at a time: the
// outcomes are the same, and the wall-time ratio is logged, not asserted.
func TestParallelSameResults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole suite once more, one task at a time")
	}
	s := shipped(t)
	times := map[int]time.Duration{}
	outcomes := map[int][]eval.TaskResult{}
	rep4, _, wall4 := runParallel4(t)
	start := time.Now()
	rep1, err := runSuite(t, t.Context(), s, s.Tasks, t.TempDir(), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	times[1], times[4] = time.Since(start), wall4
	for n, rep := range map[int]*eval.Report{1: rep1, 4: rep4} {
		for _, r := range rep.Tasks {
			o := r.Outcome()
			o.RunID = "" // random, so that concurrent evals never share a container name
			outcomes[n] = append(outcomes[n], o)
		}
	}
	a, _ := json.Marshal(outcomes[1])
	b, _ := json.Marshal(outcomes[4])
	if string(a) != string(b) {
		t.Errorf("parallel 1 and 4 differ:\n%s\n%s", a, b)
	}
	t.Logf("wall time: parallel 1 %s, parallel 4 %s, ratio %.2f", times[1], times[4], float64(times[1])/float64(times[4]))
}

// TestInterruptAndResume cancels an eval once some tasks finished, then
// runs it again: the finished tasks are skipped, not run again, and the
// totals equal those of an uninterrupted eval.
func TestInterruptAndResume(t *testing.T) {
	s := shipped(t)
	tasks, err := s.Select(nil, []string{"python"})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	var mu sync.Mutex
	var first []string
	_, err = runSuite(t, ctx, s, tasks, out, 2, func(ev eval.Event) {
		if ev.Kind == eval.EventTaskFinished {
			mu.Lock()
			first = append(first, ev.Task)
			if len(first) == 3 {
				cancel()
			}
			mu.Unlock()
		}
	})
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted eval: %v, want context.Canceled", err)
	}
	if len(first) < 3 || len(first) >= len(tasks) {
		t.Fatalf("%d tasks finished before the interruption, want 3 up to %d", len(first), len(tasks)-1)
	}
	var started []string
	rep, err := runSuite(t, t.Context(), s, tasks, out, 2, func(ev eval.Event) {
		if ev.Kind == eval.EventTaskStarted {
			mu.Lock()
			started = append(started, ev.Task)
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range first {
		for _, s := range started {
			if s == id {
				t.Errorf("task %s finished before the interruption and ran again", id)
			}
		}
	}
	if len(rep.Skipped) != len(first) || len(started) != len(tasks)-len(first) {
		t.Errorf("skipped %v, started %v; finished first %v", rep.Skipped, started, first)
	}
	// The same tasks of the uninterrupted parallel-4 eval.
	rep4, _, _ := runParallel4(t)
	var whole []eval.TaskResult
	for _, r := range rep4.Tasks {
		if slices.Contains(r.Tags, "python") {
			whole = append(whole, r)
		}
	}
	got, w := rep.Totals, eval.Total(whole)
	got.RunWallTime, w.RunWallTime = 0, 0
	if got != w {
		t.Errorf("totals after resume %+v, uninterrupted %+v", got, w)
	}
}

func TestLoadErrorsNameTheFile(t *testing.T) {
	t.Parallel()
	for name, files := range map[string]map[string]string{
		"unknown key":    {"suite.yaml": "version: 1\ntasks:\n  - id: a\n    colour: red\n"},
		"no such task":   {"suite.yaml": "version: 1\ntasks:\n  - id: a\n"},
		"no hidden":      {"suite.yaml": "version: 1\ntasks:\n  - id: a\n", "a/task.yaml": "hidden_command: go test ./...\n", "a/goal.md": "x\n"},
		"no command":     {"suite.yaml": "version: 1\ntasks:\n  - id: a\n", "a/task.yaml": "budgets: {max_steps: 3}\n", "a/goal.md": "x\n", "a/hidden/t.py": ""},
		"bad timeout":    {"suite.yaml": "version: 1\ntasks:\n  - id: a\n", "a/task.yaml": "hidden_command: x\nhidden_timeout: soon\n", "a/goal.md": "x\n", "a/hidden/t.py": ""},
		"path escapes":   {"suite.yaml": "version: 1\ntasks:\n  - id: a\n    path: ../a\n"},
		"wrong version":  {"suite.yaml": "version: 2\ntasks:\n  - id: a\n"},
		"duplicate task": {"suite.yaml": "version: 1\ntasks:\n  - id: a\n  - id: a\n"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for p, c := range files {
				os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
				os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644)
			}
			_, err := eval.Load(dir)
			if !errors.Is(err, eval.ErrInvalidSuite) {
				t.Fatalf("Load: %v, want ErrInvalidSuite", err)
			}
			if !strings.Contains(err.Error(), dir) {
				t.Errorf("error %q does not name a file of the suite", err)
			}
		})
	}
}
