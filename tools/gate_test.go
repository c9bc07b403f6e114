package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/tools"
)

const gatePolicy = `
version: 1
mode: interactive
paths:
  deny: [".git/**", "**/.env"]
  read_only: ["vendor/**"]
commands:
  allow: ["echo *", "ls *"]
  ask: ["touch *", "mkdir *"]
  deny: ["rm *"]
confirm: {timeout: 100ms}
tools:
  ask: ["danger"]
  deny: ["forbidden"]
`

func parsePolicy(t testing.TB, text string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("test-policy.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// confirmer answers every question the same way and counts them.
type confirmer struct {
	answer policy.Answer
	err    error
	block  bool // wait for ctx to end instead of answering
	calls  atomic.Int32
	mu     sync.Mutex
	last   policy.ConfirmRequest
	// asked, when set, is closed at the first question.
	asked     chan struct{}
	askedOnce sync.Once
}

func (c *confirmer) Confirm(ctx context.Context, req policy.ConfirmRequest) (policy.Answer, error) {
	c.calls.Add(1)
	c.mu.Lock()
	c.last = req
	c.mu.Unlock()
	if c.asked != nil {
		c.askedOnce.Do(func() { close(c.asked) })
	}
	if c.block {
		<-ctx.Done()
		return policy.AnswerYes, ctx.Err() // a late "yes" must not count
	}
	return c.answer, c.err
}

// recorder keeps every Record.
type recorder struct {
	mu   sync.Mutex
	recs []tools.Record
}

func (r *recorder) Observe(rec tools.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
}

func (r *recorder) take() []tools.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.recs
	r.recs = nil
	return out
}

type dangerArgs struct {
	tools.NoEffects
	Fail bool `json:"fail,omitempty"`
}

func gateView(t testing.TB, ws *tools.Workspace) tools.View {
	t.Helper()
	danger := tools.New("danger", "Risky.", func(_ context.Context, a dangerArgs) (tools.Result, error) {
		if a.Fail {
			return tools.Result{}, errors.New("backend down")
		}
		return tools.Result{OK: true, Output: "did it"}, nil
	})
	reg, err := tools.NewRegistry(append(tools.Builtins(ws), danger, trivial("forbidden"))...)
	if err != nil {
		t.Fatal(err)
	}
	v, err := reg.View()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func call(name string, args string) tools.Call {
	return tools.Call{ID: "call-" + name, Name: name, Arguments: json.RawMessage(args)}
}

func TestGate(t *testing.T) {
	t.Parallel()
	type want struct {
		ok, denied bool
		output     string // substring
		outcome    tools.Outcome
		rule       string // substring of Record.Decision.Rule
		asked      int32
		answer     string // "" = none
	}
	tests := []struct {
		name   string
		conf   *confirmer // nil: no confirmer
		unatt  bool
		call   tools.Call
		want   want
		exists string // file that must exist afterwards
		absent string // file that must not exist afterwards
	}{
		{name: "allow read", call: call("read_file", `{"path":"a.txt"}`),
			want: want{ok: true, output: "hello", outcome: tools.OutcomeOK, rule: "workspace"}},
		{name: "allow command", call: call("run_command", `{"command":"echo hi"}`),
			want: want{ok: true, outcome: tools.OutcomeOK, rule: "echo *"}},
		{name: "failed command is error", call: call("run_command", `{"command":"ls missing"}`),
			want: want{ok: false, output: "exit code", outcome: tools.OutcomeError, rule: "ls *"}},
		{name: "deny path", call: call("read_file", `{"path":"sub/.env"}`),
			want: want{denied: true, output: "denied by policy", outcome: tools.OutcomeDenied, rule: "paths.deny"}},
		{name: "deny read-only write", call: call("write_file", `{"path":"vendor/x.go","content":"x"}`),
			want: want{denied: true, output: "read-only", outcome: tools.OutcomeDenied, rule: "read_only"}, absent: "vendor/x.go"},
		{name: "deny command", call: call("run_command", `{"command":"rm a.txt"}`),
			want: want{denied: true, output: "another approach", outcome: tools.OutcomeDenied, rule: "rm *"}, exists: "a.txt"},
		{name: "unmatched command denied", call: call("run_command", `{"command":"cat a.txt"}`),
			want: want{denied: true, outcome: tools.OutcomeDenied}},
		{name: "deny command dir", call: call("run_command", `{"command":"ls","dir":".git"}`),
			want: want{denied: true, outcome: tools.OutcomeDenied, rule: "paths.deny"}},
		{name: "deny tool", call: call("forbidden", `{}`),
			want: want{denied: true, outcome: tools.OutcomeDenied, rule: "tools.deny"}},
		{name: "unknown tool", call: call("nope", `{}`),
			want: want{output: "unknown tool \"nope\"; the tools you can call are: danger, delete_file, edit_file", outcome: tools.OutcomeInvalid, rule: tools.RuleUnknownTool}},
		{name: "invalid arguments", call: call("read_file", `{"path":3}`),
			want: want{output: `read_file: argument "path": expected string, got integer`, outcome: tools.OutcomeInvalid, rule: tools.RuleInvalidArguments}},
		{name: "ask yes", conf: &confirmer{answer: policy.AnswerYes}, call: call("run_command", `{"command":"touch new.txt"}`),
			want: want{ok: true, outcome: tools.OutcomeOK, rule: "touch *", asked: 1, answer: "yes"}, exists: "new.txt"},
		{name: "ask no", conf: &confirmer{answer: policy.AnswerNo}, call: call("run_command", `{"command":"touch new.txt"}`),
			want: want{denied: true, output: "said no", outcome: tools.OutcomeDenied, rule: "touch *", asked: 1, answer: "no"}, absent: "new.txt"},
		{name: "ask error is no", conf: &confirmer{answer: policy.AnswerYes, err: errors.New("tty gone")}, call: call("run_command", `{"command":"touch new.txt"}`),
			want: want{denied: true, output: "tty gone", outcome: tools.OutcomeDenied, asked: 1, answer: "no"}, absent: "new.txt"},
		{name: "ask timeout is no", conf: &confirmer{block: true}, call: call("run_command", `{"command":"touch new.txt"}`),
			want: want{denied: true, output: "no answer within 100ms", outcome: tools.OutcomeDenied, asked: 1, answer: "no"}, absent: "new.txt"},
		{name: "ask unattended", conf: &confirmer{answer: policy.AnswerYes}, unatt: true, call: call("run_command", `{"command":"touch new.txt"}`),
			want: want{denied: true, output: "unattended", outcome: tools.OutcomeDenied, rule: "touch *"}, absent: "new.txt"},
		{name: "ask without confirmer", call: call("run_command", `{"command":"touch new.txt"}`),
			want: want{denied: true, output: "no one is available", outcome: tools.OutcomeDenied}, absent: "new.txt"},
		{name: "ask tool", conf: &confirmer{answer: policy.AnswerYes}, call: call("danger", `{}`),
			want: want{ok: true, output: "did it", outcome: tools.OutcomeOK, rule: "tools.ask", asked: 1, answer: "yes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := newWorkspace(t, map[string]string{"a.txt": "hello\n", "sub/.env": "K=V"})
			p := parsePolicy(t, gatePolicy)
			if tt.unatt {
				p = p.WithUnattended()
			}
			rec := &recorder{}
			opts := []tools.GateOption{tools.WithObserver(rec), tools.WithScope(policy.Scope{Workspace: ws.Dir})}
			if tt.conf != nil {
				opts = append(opts, tools.WithConfirmer(tt.conf))
			}
			g := tools.NewGate(p, opts...)
			res, err := g.Call(context.Background(), gateView(t, ws), tt.call)
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			w := tt.want
			if res.OK != w.ok || res.Denied != w.denied || !strings.Contains(res.Output, w.output) {
				t.Errorf("result = %+v, want ok=%v denied=%v output containing %q", res, w.ok, w.denied, w.output)
			}
			recs := rec.take()
			if len(recs) != 1 {
				t.Fatalf("%d records, want 1", len(recs))
			}
			r := recs[0]
			if r.Outcome != w.outcome || !strings.Contains(r.Decision.Rule, w.rule) || r.CallID != tt.call.ID || r.Tool != tt.call.Name {
				t.Errorf("record = %+v, want outcome %s rule ~%q", r, w.outcome, w.rule)
			}
			if tt.conf != nil && tt.conf.calls.Load() != w.asked {
				t.Errorf("asked %d times, want %d", tt.conf.calls.Load(), w.asked)
			}
			switch {
			case w.answer == "" && r.Answer != nil:
				t.Errorf("record answer = %v, want none", *r.Answer)
			case w.answer != "" && (r.Answer == nil || r.Answer.String() != w.answer):
				t.Errorf("record answer = %v, want %s", r.Answer, w.answer)
			}
			if tt.exists != "" {
				if _, err := os.Stat(filepath.Join(ws.Dir, tt.exists)); err != nil {
					t.Errorf("%s missing: %v", tt.exists, err)
				}
			}
			if tt.absent != "" {
				if _, err := os.Stat(filepath.Join(ws.Dir, tt.absent)); err == nil {
					t.Errorf("%s exists, the call should not have run", tt.absent)
				}
			}
			if _, err := json.Marshal(r); err != nil {
				t.Errorf("record does not marshal: %v", err)
			}
		})
	}
}

func TestGateConfirmRequest(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, nil)
	conf := &confirmer{answer: policy.AnswerYes}
	g := tools.NewGate(parsePolicy(t, gatePolicy), tools.WithConfirmer(conf))
	if _, err := g.Call(context.Background(), gateView(t, ws), call("run_command", `{"command":"touch 'a b'"}`)); err != nil {
		t.Fatal(err)
	}
	req := conf.last
	if req.Tool != "run_command" || req.Action != "exec" || strings.Join(req.Argv, "|") != "touch|a b" ||
		req.Command != "touch 'a b'" || req.Decision.Verdict != policy.Ask || req.Timeout != 100*time.Millisecond {
		t.Errorf("request = %+v", req)
	}
}

func TestGateAlways(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, nil)
	conf := &confirmer{answer: policy.AnswerAlways}
	rec := &recorder{}
	g := tools.NewGate(parsePolicy(t, gatePolicy), tools.WithConfirmer(conf), tools.WithObserver(rec))
	v := gateView(t, ws)
	for i, name := range []string{"one", "two", "three"} {
		res, err := g.Call(context.Background(), v, call("run_command", `{"command":"touch `+name+`"}`))
		if err != nil || !res.OK {
			t.Fatalf("call %d: %+v %v", i, res, err)
		}
	}
	if n := conf.calls.Load(); n != 1 {
		t.Errorf("asked %d times, want 1", n)
	}
	recs := rec.take()
	if len(recs) != 3 || recs[0].AutoApproved || recs[0].Answer == nil || *recs[0].Answer != policy.AnswerAlways {
		t.Fatalf("first record = %+v", recs)
	}
	for _, r := range recs[1:] {
		if !r.AutoApproved || r.Answer != nil || r.Outcome != tools.OutcomeOK {
			t.Errorf("later record = %+v, want auto-approved", r)
		}
	}
	// A different rule still asks; another gate remembers nothing.
	if _, err := g.Call(context.Background(), v, call("run_command", `{"command":"mkdir d"}`)); err != nil {
		t.Fatal(err)
	}
	if n := conf.calls.Load(); n != 2 {
		t.Errorf("other rule: asked %d times in all, want 2", n)
	}
	g2 := tools.NewGate(parsePolicy(t, gatePolicy), tools.WithConfirmer(conf))
	if _, err := g2.Call(context.Background(), v, call("run_command", `{"command":"touch four"}`)); err != nil {
		t.Fatal(err)
	}
	if n := conf.calls.Load(); n != 3 {
		t.Errorf("new gate: asked %d times in all, want 3", n)
	}
}

func TestGateInfrastructureError(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, nil)
	rec := &recorder{}
	g := tools.NewGate(parsePolicy(t, gatePolicy), tools.WithConfirmer(&confirmer{answer: policy.AnswerYes}), tools.WithObserver(rec))
	v := gateView(t, ws)
	_, err := g.Call(context.Background(), v, call("danger", `{"fail":true}`))
	if err == nil || !strings.Contains(err.Error(), "backend down") || !strings.Contains(err.Error(), "danger") {
		t.Errorf("err = %v, want the tool's error wrapped", err)
	}
	recs := rec.take()
	if len(recs) != 1 || recs[0].Outcome != tools.OutcomeError || !strings.Contains(recs[0].Error, "backend down") {
		t.Errorf("records = %+v", recs)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = g.Call(ctx, v, call("read_file", `{"path":"x"}`))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: err = %v", err)
	}
	if recs := rec.take(); len(recs) != 1 || recs[0].Outcome != tools.OutcomeError {
		t.Errorf("cancelled call records = %+v", recs)
	}
}

func TestGateCancelWhileAsking(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, nil)
	p := parsePolicy(t, strings.Replace(gatePolicy, "100ms", "1h", 1))
	conf := &confirmer{block: true, asked: make(chan struct{})}
	g := tools.NewGate(p, tools.WithConfirmer(conf))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-conf.asked // cancelled while the question is open
		cancel()
	}()
	_, err := g.Call(ctx, gateView(t, ws), call("run_command", `{"command":"touch x"}`))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestGateConcurrent(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"a.txt": "hello\n"})
	rec := &recorder{}
	conf := &confirmer{answer: policy.AnswerAlways}
	g := tools.NewGate(parsePolicy(t, gatePolicy), tools.WithObserver(rec), tools.WithConfirmer(conf))
	v := gateView(t, ws)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if _, err := g.Call(context.Background(), v, call("read_file", `{"path":"a.txt"}`)); err != nil {
				t.Error(err)
			}
			if _, err := g.Call(context.Background(), v, call("danger", `{}`)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := len(rec.take()); n != 32 {
		t.Errorf("%d records, want 32", n)
	}
	if n := conf.calls.Load(); n != 1 {
		t.Errorf("asked %d times, want 1 (always)", n)
	}
}

func BenchmarkGateCall(b *testing.B) {
	ws := newWorkspace(b, nil)
	g := tools.NewGate(parsePolicy(b, gatePolicy), tools.WithObserver(tools.ObserverFunc(func(tools.Record) {})))
	view, err := gateView(b, ws).With(trivial("noop"))
	if err != nil {
		b.Fatal(err)
	}
	c := call("noop", `{}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Call(ctx, view, c); err != nil {
			b.Fatal(err)
		}
	}
}

func TestGateShellMode(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, nil)
	on := "version: 1\ncommands:\n  allow: [\"echo *\", \"tr *\"]\n  shell: true\n"
	off := "version: 1\ncommands:\n  allow: [\"echo *\", \"tr *\"]\n"
	line := `{"command":"echo hi | tr a-z A-Z"}`
	res, err := tools.NewGate(parsePolicy(t, on)).Call(context.Background(), gateView(t, ws), call("run_command", line))
	if err != nil || !res.OK || res.Stdout != "HI\n" {
		t.Errorf("shell on: %+v %v", res, err)
	}
	res, err = tools.NewGate(parsePolicy(t, off)).Call(context.Background(), gateView(t, ws), call("run_command", line))
	if err != nil || res.OK || !res.Denied {
		t.Errorf("shell off: %+v %v", res, err)
	}
}

func TestPolicyVisible(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"app/.env": "SECRET=1", "app/main.go": "// SECRET handling\n"})
	ws.Visible = tools.PolicyVisible(parsePolicy(t, gatePolicy))
	res, _ := run(t, ws, tools.SearchFilesName, obj{"pattern": "SECRET"})
	if strings.Contains(res.Output, ".env") || !strings.Contains(res.Output, "app/main.go:1:") {
		t.Errorf("search = %q", res.Output)
	}
	res, _ = run(t, ws, tools.ListFilesName, obj{})
	if res.Output != "app/main.go\n" {
		t.Errorf("list = %q", res.Output)
	}
}

func TestRecordJSON(t *testing.T) {
	t.Parallel()
	a := policy.AnswerAlways
	r := tools.Record{CallID: "c1", Tool: "run_command", Outcome: tools.OutcomeOK, Answer: &a,
		Decision: policy.Decision{Verdict: policy.Ask, Rule: "r"}, Duration: 1250 * time.Millisecond, Waited: 3 * time.Second,
		Effects: []tools.Effect{{Kind: tools.EffectExec, Command: policy.Command{Line: "ls", Argv: []string{"ls"}}}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"duration_ms":1250`, `"waited_ms":3000`, `"answer":"always"`, `"verdict":"ask"`, `"outcome":"ok"`, `"argv":["ls"]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("record JSON %s lacks %s", b, want)
		}
	}
}

// A call's Record names the role the caller put in its context, in JSON
// too, so that an audit log tells the roles' calls apart.
func TestGateCallerRole(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, nil)
	rec := &recorder{}
	g := tools.NewGate(parsePolicy(t, gatePolicy), tools.WithObserver(rec))
	v := gateView(t, ws)
	tests := []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"critic", tools.WithCallerRole(context.Background(), "critic"), "critic"},
		{"worker", tools.WithCallerRole(context.Background(), "worker"), "worker"},
		{"unnamed", context.Background(), ""},
	}
	for _, tt := range tests {
		if _, err := g.Call(tt.ctx, v, call("list_files", `{}`)); err != nil {
			t.Fatal(err)
		}
		recs := rec.take()
		if len(recs) != 1 || recs[0].Role != tt.want {
			t.Fatalf("%s: records %+v, want one with role %q", tt.name, recs, tt.want)
		}
		b, _ := json.Marshal(recs[0])
		if has := strings.Contains(string(b), `"role":"`+tt.want+`"`); has != (tt.want != "") {
			t.Errorf("%s: record JSON %s, want role %q (omitted when empty)", tt.name, b, tt.want)
		}
	}
}
