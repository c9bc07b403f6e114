package flow_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/dist/flow"
	"github.com/trioagent/trio/dist/store"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/policy"
)

// script replays replies per role and keeps a cursor across sessions, as
// the scripted model does.
type script struct {
	mu      sync.Mutex
	replies map[string][]llm.Response
	pos     map[string]int
}

func (m *script) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return llm.Response{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.pos[req.Agent]
	if i >= len(m.replies[req.Agent]) {
		return llm.Response{}, fmt.Errorf("script: no reply %d for %s", i+1, req.Agent)
	}
	m.pos[req.Agent] = i + 1
	r := m.replies[req.Agent][i]
	r.Usage = llm.Usage{PromptTokens: 100, CompletionTokens: 10}
	return r, nil
}

func (m *script) Cursor() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := map[string]int{}
	for k, v := range m.pos {
		c[k] = v
	}
	return c
}

func (m *script) Seek(c map[string]int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pos = map[string]int{}
	for k, v := range c {
		m.pos[k] = v
	}
	return nil
}

func jsonText(v any) llm.Response {
	b, _ := json.Marshal(v)
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: string(b)}, FinishReason: "stop"}
}

func toolCalls(cs ...[2]any) llm.Response {
	msg := llm.Message{Role: llm.RoleAssistant}
	for i, c := range cs {
		b, _ := json.Marshal(c[1])
		msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: fmt.Sprintf("call_%d_%s", i, c[0]), Name: c[0].(string), Arguments: string(b)})
	}
	return llm.Response{Message: msg, FinishReason: "tool_calls"}
}

const (
	calcTest = "package acceptance\n\nimport (\n\t\"testing\"\n\n\t\"calc\"\n)\n\nfunc TestAdd(t *testing.T) {\n\tif calc.Add(2, 3) != 5 {\n\t\tt.Fatal(\"Add(2, 3) != 5\")\n\t}\n}\n"
	calcGood = "// Package calc adds.\npackage calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int { return a + b }\n"
)

// calcRun writes a small Go module in four tool calls, one per reply, so
// that the run checkpoints (and commits) between them.
func calcRun() *script {
	w := func(p, c string) [2]any { return [2]any{"write_file", map[string]string{"path": p, "content": c}} }
	return &script{pos: map[string]int{}, replies: map[string][]llm.Response{
		agent.RolePlanner: {jsonText(map[string]any{
			"steps": []map[string]any{{"title": "calc", "description": "go.mod, calc.go with Add, its doc",
				"files": []string{"go.mod", "calc.go", "README.md", "NOTES.md"}, "expected": "Add adds", "acceptance": "go test passes"}},
			"risks": []string{}, "test_command": "go test ./...", "cli": []string{}, "tests_dir": "acceptance"})},
		agent.RoleTestDesigner: {jsonText(map[string]any{"files": []map[string]string{{"path": "acceptance/calc_test.go", "content": calcTest}}, "notes": "Add"})},
		agent.RoleWorker: {
			toolCalls(w("go.mod", "module calc\n\ngo 1.22\n")),
			toolCalls(w("calc.go", calcGood)),
			toolCalls(w("README.md", "calc adds.\n")),
			toolCalls(w("NOTES.md", "none\n")),
			toolCalls([2]any{"finish_step", map[string]string{"note": "written"}}),
		},
	}}
}

// errDied is a host that died: nothing it does after reaches the store.
var errDied = errors.New("host died")

// TestRunMovesToAnotherHost runs a session on host A that dies after its
// third commit, then places the run on host B (a fresh folder, a newer
// epoch): B restores A's last commit, resumes and completes; every call
// completed on A is answered from the log on B (one completion per call
// in calls.jsonl); A, back with its old epoch, is refused.
func TestRunMovesToAnotherHost(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.NewFolder(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	model := calcRun()
	runner := flow.AgentRunner(model, nil, agent.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxLocal}))
	commitsOnA := 0
	dying := func(ctx context.Context, c flow.Call) (string, error) {
		inner := c.Checkpoint
		c.Checkpoint = func(d string, r policy.ReadRules) error {
			if commitsOnA == 3 {
				return errDied
			}
			commitsOnA++
			return inner(d, r)
		}
		return runner(ctx, c)
	}
	a := &flow.Host{Name: "a", Store: st, Root: filepath.Join(dir, "a"), Run: dying}
	b := &flow.Host{Name: "b", Store: st, Root: filepath.Join(dir, "b"), Run: runner, Logf: t.Logf}
	if err := flow.SaveGoal(ctx, st, "r1", "A Go package calc with Add."); err != nil {
		t.Fatal(err)
	}
	session := func(h *flow.Host, epoch int64) (flow.SessionResult, error) { return placeAndRun(h, "r1", epoch) }
	if _, err := session(a, 1); err == nil {
		t.Fatal("the session on the dying host succeeded")
	}
	res, err := session(b, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != string(agent.StopCompleted) {
		rep, _ := os.ReadFile(filepath.Join(dir, "b", "runs", "r1", agent.ReportJSON))
		t.Fatalf("the run on host b stopped: %q; report: %.2000s", res.Reason, rep)
	}
	got, err := os.ReadFile(filepath.Join(dir, "b", "workspaces", "r1", "calc.go"))
	if err != nil || string(got) != calcGood {
		t.Fatalf("calc.go on b: %q, %v", got, err)
	}
	// One completion per call; only a call in flight ran again.
	f, err := os.Open(filepath.Join(dir, "b", "runs", "r1", agent.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ends, begins := map[string]int{}, map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprint(rec["key"])
		switch rec["phase"] {
		case "end":
			ends[key]++
		case "begin":
			begins[key]++
		}
	}
	if len(ends) == 0 {
		t.Fatal("calls.jsonl on b has no completed call")
	}
	for k, n := range ends {
		if n != 1 {
			t.Errorf("call %s completed %d times", k, n)
		}
		if begins[k] > 2 {
			t.Errorf("call %s began %d times", k, begins[k])
		}
	}
	// A comes back with its old epoch: refused.
	_, err = session(a, 1)
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != "StaleEpoch" {
		t.Fatalf("host a's session with epoch 1 after epoch 2: %v, want a StaleEpoch error", err)
	}
}

// TestPlacementWaitsForALiveSession: while a session of a run still runs
// in a worker (cut off from Temporal, say), that worker neither places
// the run again nor starts another session of it: the folders are in use.
func TestPlacementWaitsForALiveSession(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.NewFolder(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	h := &flow.Host{Name: "a", Store: st, Root: filepath.Join(dir, "a"), Run: func(ctx context.Context, c flow.Call) (string, error) {
		close(started)
		<-release
		return "completed", nil
	}}
	env := func() *testsuite.TestActivityEnvironment { return activities(h) }
	if err := flow.SaveGoal(ctx, st, "r", "goal"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := env().ExecuteActivity(flow.SessionActivity, flow.SessionInput{RunID: "r", Epoch: 1})
		done <- err
	}()
	<-started
	if _, err := env().ExecuteActivity(flow.PlaceActivity, flow.PlaceInput{RunID: "r", Epoch: 2}); err == nil || !strings.Contains(err.Error(), "still runs on a") {
		t.Errorf("placement while a session runs: %v, want a refusal", err)
	}
	if _, err := env().ExecuteActivity(flow.SessionActivity, flow.SessionInput{RunID: "r", Epoch: 2}); err == nil || !strings.Contains(err.Error(), "still runs on a") {
		t.Errorf("a second session while one runs: %v, want a refusal", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := env().ExecuteActivity(flow.PlaceActivity, flow.PlaceInput{RunID: "r", Epoch: 2}); err != nil {
		t.Errorf("placement after the session ended: %v", err)
	}
}

// TestPlacementHonoursSessions: a host of one session slot declines a
// second run while the first is placed and while its session runs, takes
// the first again (its own slot), and takes the second once the first's
// session ended.
func TestPlacementHonoursSessions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.NewFolder(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	h := &flow.Host{Name: "a", Store: st, Root: filepath.Join(dir, "a"), Sessions: 1, Run: func(ctx context.Context, c flow.Call) (string, error) {
		close(started)
		<-release
		return "completed", nil
	}}
	env := func() *testsuite.TestActivityEnvironment { return activities(h) }
	place := func(run string) error {
		_, err := env().ExecuteActivity(flow.PlaceActivity, flow.PlaceInput{RunID: run, Epoch: 1})
		return err
	}
	for _, run := range []string{"r1", "r2"} {
		if err := flow.SaveGoal(ctx, st, run, "goal"); err != nil {
			t.Fatal(err)
		}
	}
	if err := place("r1"); err != nil {
		t.Fatal(err)
	}
	if err := place("r2"); err == nil || !strings.Contains(err.Error(), "host a is full (1 of 1 sessions held)") {
		t.Errorf("a second run while the first is placed: %v, want a refusal", err)
	}
	if err := place("r1"); err != nil {
		t.Errorf("the first run placed again: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := env().ExecuteActivity(flow.SessionActivity, flow.SessionInput{RunID: "r1", Epoch: 1})
		done <- err
	}()
	<-started
	if err := place("r2"); err == nil || !strings.Contains(err.Error(), "is full") {
		t.Errorf("a second run while the first's session runs: %v, want a refusal", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := place("r2"); err != nil {
		t.Errorf("the second run after the first's session ended: %v", err)
	}
}

// TestCutOffHostStops: host A is cut off from Temporal but not from the
// store: its session goes on while the run is placed on B with a newer
// epoch and completes there. A's next commit fails (stale epoch), its
// session stops with a StaleEpoch error, and the store keeps B's run.
func TestCutOffHostStops(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.NewFolder(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	runner := flow.AgentRunner(calcRun(), nil, agent.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxLocal}))
	paused, resume := make(chan struct{}), make(chan struct{})
	commits := 0
	cutOff := func(ctx context.Context, c flow.Call) (string, error) {
		inner := c.Checkpoint
		c.Checkpoint = func(d string, r policy.ReadRules) error {
			if commits++; commits == 3 {
				close(paused) // cut off here: B takes the run over meanwhile
				<-resume
			}
			return inner(d, r)
		}
		return runner(ctx, c)
	}
	a := &flow.Host{Name: "a", Store: st, Root: filepath.Join(dir, "a"), Run: cutOff}
	b := &flow.Host{Name: "b", Store: st, Root: filepath.Join(dir, "b"), Run: flow.AgentRunner(calcRun(), nil, agent.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxLocal}))}
	if err := flow.SaveGoal(ctx, st, "r1", "A Go package calc with Add."); err != nil {
		t.Fatal(err)
	}
	session := func(h *flow.Host, epoch int64) (flow.SessionResult, error) { return placeAndRun(h, "r1", epoch) }
	aDone := make(chan error, 1)
	go func() {
		_, err := session(a, 1)
		aDone <- err
	}()
	<-paused
	res, err := session(b, 2)
	if err != nil || res.Reason != string(agent.StopCompleted) {
		t.Fatalf("the run on b: %+v, %v", res, err)
	}
	close(resume)
	err = <-aDone
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != "StaleEpoch" {
		t.Fatalf("the cut-off session on a ended with %v, want a StaleEpoch error", err)
	}
	// The store's run is b's: restored anywhere, it is b's completed run.
	c := &flow.Host{Name: "c", Store: st, Root: filepath.Join(dir, "c")}
	if _, err := activities(c).ExecuteActivity(flow.PlaceActivity, flow.PlaceInput{RunID: "r1", Epoch: 3}); err != nil {
		t.Fatal(err)
	}
	rep, err := agent.LoadReport(filepath.Join(dir, "c", "runs", "r1"))
	if err != nil || rep.Reason != agent.StopCompleted {
		t.Fatalf("the run restored on c: %v, %v; want b's completed report", rep, err)
	}
}

// activities is a test environment for h's placement and session
// activities, under the names the workflow calls them by.
func activities(h *flow.Host) *testsuite.TestActivityEnvironment {
	var ts testsuite.WorkflowTestSuite
	e := ts.NewTestActivityEnvironment()
	e.RegisterActivityWithOptions(h.Place, activity.RegisterOptions{Name: flow.PlaceActivity})
	e.RegisterActivityWithOptions(h.Session, activity.RegisterOptions{Name: flow.SessionActivity})
	return e
}

// placeAndRun places run on h with epoch, as the workflow's placement
// does, and runs its session there.
func placeAndRun(h *flow.Host, run string, epoch int64) (flow.SessionResult, error) {
	e := activities(h)
	if _, err := e.ExecuteActivity(flow.PlaceActivity, flow.PlaceInput{RunID: run, Epoch: epoch}); err != nil {
		return flow.SessionResult{}, err
	}
	v, err := e.ExecuteActivity(flow.SessionActivity, flow.SessionInput{RunID: run, Epoch: epoch})
	var res flow.SessionResult
	if err == nil {
		err = v.Get(&res)
	}
	return res, err
}
