package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/tools"
)

// script writes an executable shell script into dir.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

type hookLog struct {
	mu   sync.Mutex
	recs []tools.HookRecord
}

func (l *hookLog) add(r tools.HookRecord) { l.mu.Lock(); l.recs = append(l.recs, r); l.mu.Unlock() }

func hookGate(t *testing.T, p *policy.Policy, cmds ...tools.HookCommand) (*tools.Gate, tools.View, *hookLog, string) {
	t.Helper()
	ws := newWorkspace(t, map[string]string{"a.txt": "hello"})
	hooks, err := tools.NewHooks(tools.HookConfig{Commands: cmds, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	log := &hookLog{}
	g := tools.NewGate(p, tools.WithHooks(hooks.ForRun("run-1", ws.Dir, log.add)))
	return g, gateView(t, ws), log, ws.Dir
}

// The PreToolUse contract: JSON on stdin; exit 2 blocks with stderr as
// the reason the model reads; {"decision":"block"} blocks; a hook that
// runs out of time blocks; a failing guard blocks; exit 0 continues; a
// hook's "allow" never loosens a deny; "ask" becomes a confirmation.
func TestPreToolUseHooks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Blocks run_command of echo, whatever else it says.
	guard := script(t, dir, "guard.sh", `in=$(cat)
case "$in" in
  *'"tool_name":"run_command"'*'echo '*) echo "echo is not allowed here" >&2; exit 2;;
esac
exit 0
`)
	block := script(t, dir, "block.sh", `cat >/dev/null; echo '{"decision":"block","reason":"json says no"}'`)
	slow := script(t, dir, "slow.sh", `cat >/dev/null; sleep 10`)
	broken := script(t, dir, "broken.sh", `cat >/dev/null; echo oops >&2; exit 1`)
	allow := script(t, dir, "allow.sh", `cat >/dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'`)
	ask := script(t, dir, "ask.sh", `cat >/dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"are you sure"}}'`)
	p := parsePolicy(t, gatePolicy)
	tests := []struct {
		name    string
		hook    tools.HookCommand
		call    tools.Call
		conf    *confirmer
		ok      bool
		output  string
		timeout bool
	}{
		{name: "exit 2 blocks", hook: tools.HookCommand{Event: tools.HookPreToolUse, Matcher: "run_command", Command: guard},
			call: call("run_command", `{"command":"echo hi"}`), output: "echo is not allowed here"},
		{name: "exit 0 continues", hook: tools.HookCommand{Event: tools.HookPreToolUse, Matcher: "run_command", Command: guard},
			call: call("run_command", `{"command":"ls"}`), ok: true},
		{name: "matcher skips other tools", hook: tools.HookCommand{Event: tools.HookPreToolUse, Matcher: "run_.*", Command: block},
			call: call("read_file", `{"path":"a.txt"}`), ok: true},
		{name: "json block", hook: tools.HookCommand{Event: tools.HookPreToolUse, Command: block},
			call: call("read_file", `{"path":"a.txt"}`), output: "json says no"},
		{name: "timeout blocks", hook: tools.HookCommand{Event: tools.HookPreToolUse, Command: slow, Timeout: 300 * time.Millisecond},
			call: call("read_file", `{"path":"a.txt"}`), output: "did not answer within 300ms", timeout: true},
		{name: "failure blocks", hook: tools.HookCommand{Event: tools.HookPreToolUse, Command: broken},
			call: call("read_file", `{"path":"a.txt"}`), output: "exit code 1: oops"},
		{name: "allow never loosens a deny", hook: tools.HookCommand{Event: tools.HookPreToolUse, Command: allow},
			call: call("run_command", `{"command":"rm a.txt"}`), output: "rm *"},
		{name: "ask asks", hook: tools.HookCommand{Event: tools.HookPreToolUse, Command: ask}, conf: &confirmer{answer: policy.AnswerNo},
			call: call("read_file", `{"path":"a.txt"}`), output: "are you sure"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, v, log, wsDir := hookGate(t, p, tt.hook)
			if tt.conf != nil {
				g = tools.NewGate(p, tools.WithConfirmer(tt.conf), tools.WithHooks(mustHooks(t, tt.hook).ForRun("run-1", wsDir, log.add)))
			}
			start := time.Now()
			res, err := g.Call(context.Background(), v, tt.call)
			if err != nil {
				t.Fatal(err)
			}
			if res.OK != tt.ok || !strings.Contains(res.Output, tt.output) {
				t.Errorf("result ok=%v %q, want ok=%v containing %q", res.OK, res.Output, tt.ok, tt.output)
			}
			if tt.timeout && time.Since(start) > 5*time.Second {
				t.Errorf("a timed-out hook held the call for %s", time.Since(start))
			}
			if tt.conf != nil && tt.conf.calls.Load() != 1 {
				t.Errorf("confirmer asked %d times, want 1", tt.conf.calls.Load())
			}
			if tt.name == "exit 2 blocks" {
				if _, err := os.Stat(filepath.Join(wsDir, "hi")); err == nil {
					t.Error("the blocked command ran")
				}
				if len(log.recs) != 1 || !log.recs[0].Blocked || log.recs[0].ExitCode != 2 || log.recs[0].Tool != "run_command" {
					t.Errorf("hook records %+v, want one blocked run_command with exit code 2", log.recs)
				}
			}
		})
	}
}

func mustHooks(t *testing.T, cmds ...tools.HookCommand) *tools.Hooks {
	t.Helper()
	h, err := tools.NewHooks(tools.HookConfig{Commands: cmds, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// The hook reads Claude Code's fields plus Trio's decision and role; a
// PostToolUse hook receives the result; its environment holds no secret;
// it runs in the configured folder, not the workspace.
func TestHookInputAndEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-secret-canary")
	dir := t.TempDir()
	hk := script(t, dir, "record.sh", `cat > "$PWD/input-$TRIO_HOOK_EVENT.json"; env > "$PWD/env-$TRIO_HOOK_EVENT.txt"; exit 0`)
	hooks, err := tools.NewHooks(tools.HookConfig{Dir: dir, Commands: []tools.HookCommand{
		{Event: tools.HookPreToolUse, Command: hk}, {Event: tools.HookPostToolUse, Matcher: "read_file", Command: hk},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ws := newWorkspace(t, map[string]string{"a.txt": "hello"})
	g := tools.NewGate(parsePolicy(t, gatePolicy), tools.WithHooks(hooks.ForRun("run-7", ws.Dir, nil)))
	res, err := g.Call(tools.WithCallerRole(context.Background(), "worker"), gateView(t, ws), call("read_file", `{"path":"a.txt"}`))
	if err != nil || !res.OK {
		t.Fatalf("call: %v %+v", err, res)
	}
	var pre, post map[string]any
	for name, dst := range map[string]*map[string]any{"PreToolUse": &pre, "PostToolUse": &post} {
		b, err := os.ReadFile(filepath.Join(dir, "input-"+name+".json"))
		if err != nil {
			t.Fatalf("%s hook did not run in its folder: %v", name, err)
		}
		if err := json.Unmarshal(b, dst); err != nil {
			t.Fatalf("%s input %s: %v", name, b, err)
		}
		env, _ := os.ReadFile(filepath.Join(dir, "env-"+name+".txt"))
		if strings.Contains(string(env), "sk-secret-canary") {
			t.Errorf("%s hook's environment holds the API key", name)
		}
		if !strings.Contains(string(env), "TRIO_RUN_ID=run-7") {
			t.Errorf("%s hook's environment has no TRIO_RUN_ID", name)
		}
	}
	if pre["hook_event_name"] != "PreToolUse" || pre["tool_name"] != "read_file" || pre["session_id"] != "run-7" ||
		pre["role"] != "worker" || pre["cwd"] != ws.Dir {
		t.Errorf("PreToolUse input %v", pre)
	}
	if d, _ := pre["decision"].(map[string]any); d["verdict"] != "allow" {
		t.Errorf("PreToolUse decision %v, want allow", pre["decision"])
	}
	if in, _ := pre["tool_input"].(map[string]any); in["path"] != "a.txt" {
		t.Errorf("tool_input %v", pre["tool_input"])
	}
	if r, _ := post["tool_response"].(map[string]any); r["ok"] != true || !strings.Contains(r["output"].(string), "hello") {
		t.Errorf("PostToolUse tool_response %v, want the result", post["tool_response"])
	}
}

// A PostToolUse block turns the result into an error with the reason; a
// Stop hook runs once with the stop reason.
func TestPostToolUseBlockAndStop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	post := script(t, dir, "post.sh", `cat >/dev/null; echo "output leaks a token" >&2; exit 2`)
	stop := script(t, dir, "stop.sh", `cat > "$PWD/stop.json"`)
	hooks := mustHooks(t, tools.HookCommand{Event: tools.HookPostToolUse, Command: post}, tools.HookCommand{Event: tools.HookStop, Command: stop})
	log := &hookLog{}
	ws := newWorkspace(t, map[string]string{"a.txt": "hello"})
	bound := hooks.ForRun("r", ws.Dir, log.add)
	g := tools.NewGate(parsePolicy(t, gatePolicy), tools.WithHooks(bound))
	res, err := g.Call(context.Background(), gateView(t, ws), call("read_file", `{"path":"a.txt"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || !strings.Contains(res.Output, "output leaks a token") {
		t.Errorf("result %+v, want an error with the hook's reason", res)
	}
	recs := bound.Stop(context.Background(), tools.StopInfo{Reason: "completed"})
	if len(recs) != 1 || recs[0].Event != tools.HookStop || recs[0].ExitCode != 0 {
		t.Fatalf("stop records %+v", recs)
	}
	if len(log.recs) != 2 {
		t.Errorf("observed %d hook records, want 2 (post, stop)", len(log.recs))
	}
}

func TestNewHooksRefusesBadConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []tools.HookCommand{
		{Event: "BeforeEverything", Command: "true"},
		{Event: tools.HookPreToolUse, Command: " "},
		{Event: tools.HookPreToolUse, Command: "true", Matcher: "("},
		{Event: tools.HookPreToolUse, Command: "true", Timeout: -time.Second},
	} {
		if _, err := tools.NewHooks(tools.HookConfig{Commands: []tools.HookCommand{c}}); err == nil {
			t.Errorf("NewHooks(%+v) accepted", c)
		}
	}
}
