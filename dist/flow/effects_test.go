package flow_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/dist"
	"github.com/trioagent/trio/dist/flow"
	"github.com/trioagent/trio/dist/store"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/tools"
)

// postArgs are the arguments of post_comment, a tool whose effect lies
// outside the workspace and the store (an issue tracker's comment): what
// runs twice shows in its log.
type postArgs struct {
	tools.NoEffects
	Text string `json:"text"`
}

// TestEffectOutsideWorkspaceOnce: a run calls an embedder's tool with an
// effect outside the workspace (a line in a log no host restores) between
// its file writes; its host dies right after the second post took effect,
// before that call's completion reached the store; the host the run
// moves to completes it. The call whose completion the dead host had
// committed took effect once; only the one in flight took effect twice;
// every post took effect.
func TestEffectOutsideWorkspaceOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.NewFolder(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	effects := filepath.Join(dir, "tracker.log")
	var (
		mu        sync.Mutex
		onA, dead atomic.Bool
	)
	registry := func() (*tools.Registry, error) {
		return tools.NewRegistry(tools.New[postArgs]("post_comment", "Post a comment to the issue tracker.",
			func(_ context.Context, a postArgs) (tools.Result, error) {
				mu.Lock()
				defer mu.Unlock()
				f, err := os.OpenFile(effects, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
				if err != nil {
					return tools.Result{}, err
				}
				defer f.Close()
				if _, err := f.WriteString(a.Text + "\n"); err != nil {
					return tools.Result{}, err
				}
				if onA.Load() && a.Text == "two" {
					dead.Store(true) // A dies right after the effect
				}
				return tools.Result{OK: true, Output: "posted"}, nil
			}))
	}
	model := calcRun()
	post := func(text string) llm.Response {
		return toolCalls([2]any{"post_comment", map[string]string{"text": text}})
	}
	w := model.replies[agent.RoleWorker]
	model.replies[agent.RoleWorker] = []llm.Response{post("one"), w[0], post("two"), w[1], post("three"), w[2], post("four"), w[3], w[4]}
	runner := flow.AgentRunnerWith(model, registry, nil, agent.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxLocal}))
	dying := func(ctx context.Context, c flow.Call) (string, error) {
		inner := c.Checkpoint
		c.Checkpoint = func(d string, r policy.ReadRules) error {
			if dead.Load() {
				return errDied
			}
			return inner(d, r)
		}
		return runner(ctx, c)
	}
	a := &flow.Host{Name: "a", Store: deadStore{st, &dead}, Root: filepath.Join(dir, "a"), Run: dying}
	b := &flow.Host{Name: "b", Store: st, Root: filepath.Join(dir, "b"), Run: runner, Logf: t.Logf}
	if err := flow.SaveGoal(ctx, st, "r1", "A Go package calc with Add; post each step to the tracker."); err != nil {
		t.Fatal(err)
	}
	session := func(h *flow.Host, epoch int64) (flow.SessionResult, error) { return placeAndRun(h, "r1", epoch) }
	onA.Store(true)
	if _, err := session(a, 1); err == nil {
		t.Fatal("the session on the dying host succeeded")
	}
	onA.Store(false)
	// What A had committed: the posts whose completion is in its last
	// commit's calls.jsonl.
	head, err := dist.Head(ctx, st, "r1")
	if err != nil || head == nil {
		t.Fatalf("no commit of A: %v", err)
	}
	seen := filepath.Join(dir, "seen")
	if err := dist.Restore(ctx, st, head, filepath.Join(seen, "run"), filepath.Join(seen, "ws")); err != nil {
		t.Fatal(err)
	}
	committed := postsCompleted(t, filepath.Join(seen, "run", agent.CallsFile))
	before, _ := os.ReadFile(effects)
	if !committed["one"] || committed["two"] || string(before) != "one\ntwo\n" {
		t.Fatalf("A took effect %q and committed the completion of %v: want one and two, and one's completion only", before, committed)
	}
	res, err := session(b, 2)
	if err != nil || res.Reason != string(agent.StopCompleted) {
		t.Fatalf("the run on b: %q, %v", res.Reason, err)
	}
	log, err := os.ReadFile(effects)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, line := range strings.Fields(string(log)) {
		count[line]++
	}
	twice := 0
	for _, text := range []string{"one", "two", "three", "four"} {
		switch n := count[text]; {
		case n == 0:
			t.Errorf("post %q never took effect", text)
		case n > 2:
			t.Errorf("post %q took effect %d times", text, n)
		case n == 2:
			twice++
			if committed[text] || text != "two" {
				t.Errorf("post %q was completed and committed on A, and took effect again on B", text)
			}
		}
	}
	if twice > 1 {
		t.Errorf("%d posts took effect twice, want at most the one in flight: %q", twice, log)
	}
	t.Logf("A committed the completion of %v; the tracker's log, A's part %q, whole %q", committed, before, log)
}

// deadStore is the store as a dead host reaches it: nothing it writes
// after its death arrives.
type deadStore struct {
	store.Store
	dead *atomic.Bool
}

func (s deadStore) Put(ctx context.Context, key string, v io.Reader) error {
	if s.dead.Load() {
		return errDied
	}
	return s.Store.Put(ctx, key, v)
}

func (s deadStore) PutIfAbsent(ctx context.Context, key string, v io.Reader) error {
	if s.dead.Load() {
		return errDied
	}
	return s.Store.PutIfAbsent(ctx, key, v)
}

// postsCompleted are the texts of the post_comment calls with a
// completion in the calls.jsonl at path.
func postsCompleted(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	texts, done := map[string]string{}, map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Phase, Key, Tool string
			Args             postArgs
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Tool != "post_comment" {
			continue
		}
		if rec.Phase == "begin" {
			texts[rec.Key] = rec.Args.Text
		} else if rec.Phase == "end" {
			done[rec.Key] = true
		}
	}
	out := map[string]bool{}
	for k := range done {
		out[texts[k]] = true
	}
	return out
}
