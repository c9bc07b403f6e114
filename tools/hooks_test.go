package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
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
  *'"tool_name":"Bash"'*'echo '*) echo "echo is not allowed here" >&2; exit 2;;
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

// The hook reads Claude Code's fields (tool_name in Claude Code's form,
// transcript_path, permission_mode, cwd) plus Trio's tool name, decision
// and role; a PostToolUse hook receives the result; its environment holds
// no secret; it runs in the workspace, as Claude Code runs hooks in the
// project.
func TestHookInputAndEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-secret-canary")
	dir, out := t.TempDir(), t.TempDir()
	hk := script(t, dir, "record.sh", `cat > "$OUT/input-$TRIO_HOOK_EVENT.json"; env > "$OUT/env-$TRIO_HOOK_EVENT.txt"; pwd > "$OUT/pwd-$TRIO_HOOK_EVENT"; exit 0`)
	hooks, err := tools.NewHooks(tools.HookConfig{Dir: dir, Env: []string{"OUT=" + out}, Commands: []tools.HookCommand{
		{Event: tools.HookPreToolUse, Command: hk}, {Event: tools.HookPostToolUse, Matcher: "Read", Command: hk},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ws := newWorkspace(t, map[string]string{"a.txt": "hello"})
	bound := hooks.ForRun("run-7", ws.Dir, nil).WithSession(tools.HookSession{TranscriptPath: "/runs/run-7/history.jsonl"})
	g := tools.NewGate(parsePolicy(t, gatePolicy), tools.WithHooks(bound))
	res, err := g.Call(tools.WithCallerRole(context.Background(), "worker"), gateView(t, ws), call("read_file", `{"path":"a.txt"}`))
	if err != nil || !res.OK {
		t.Fatalf("call: %v %+v", err, res)
	}
	var pre, post map[string]any
	for name, dst := range map[string]*map[string]any{"PreToolUse": &pre, "PostToolUse": &post} {
		b, err := os.ReadFile(filepath.Join(out, "input-"+name+".json"))
		if err != nil {
			t.Fatalf("%s hook did not run: %v", name, err)
		}
		if err := json.Unmarshal(b, dst); err != nil {
			t.Fatalf("%s input %s: %v", name, b, err)
		}
		env, _ := os.ReadFile(filepath.Join(out, "env-"+name+".txt"))
		if strings.Contains(string(env), "sk-secret-canary") {
			t.Errorf("%s hook's environment holds the API key", name)
		}
		if !strings.Contains(string(env), "TRIO_RUN_ID=run-7") {
			t.Errorf("%s hook's environment has no TRIO_RUN_ID", name)
		}
		if pwd, _ := os.ReadFile(filepath.Join(out, "pwd-"+name)); strings.TrimSpace(string(pwd)) != ws.Dir {
			t.Errorf("%s hook ran in %q, want the workspace %s", name, pwd, ws.Dir)
		}
	}
	if pre["hook_event_name"] != "PreToolUse" || pre["tool_name"] != "Read" || pre["trio_tool_name"] != "read_file" || pre["session_id"] != "run-7" ||
		pre["role"] != "worker" || pre["cwd"] != ws.Dir || pre["transcript_path"] != "/runs/run-7/history.jsonl" || pre["permission_mode"] != "default" {
		t.Errorf("PreToolUse input %v", pre)
	}
	if d, _ := pre["decision"].(map[string]any); d["verdict"] != "allow" {
		t.Errorf("PreToolUse decision %v, want allow", pre["decision"])
	}
	if in, _ := pre["tool_input"].(map[string]any); in["path"] != "a.txt" || in["file_path"] != filepath.Join(ws.Dir, "a.txt") {
		t.Errorf("tool_input %v, want Trio's path and Claude Code's absolute file_path", pre["tool_input"])
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

// The PreToolUse hooks that match a call run at once, as Claude Code runs
// them: the first hook writes to a FIFO that only the third reads, so run
// one after another the first would wait for a reader until its timeout
// and block the call with "did not answer". Their answers combine in the
// order they are configured, whatever order they finish in: deny wins
// over ask over allow, with the first denying hook's reason; a command
// configured twice runs once.
func TestPreToolUseHooksRunInParallel(t *testing.T) {
	t.Parallel()
	dir, out := t.TempDir(), t.TempDir()
	fifo := filepath.Join(out, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	writer := script(t, dir, "writer.sh", `cat >/dev/null; echo go > "`+fifo+`"
echo '{"hookSpecificOutput":{"permissionDecision":"allow","permissionDecisionReason":"fine by me"}}'`)
	asker := script(t, dir, "asker.sh", `cat >/dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"ask first"}}'`)
	reader := script(t, dir, "reader.sh", `cat >/dev/null; read x < "`+fifo+`"
echo '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"denied by the third"}}'`)
	blocker := script(t, dir, "blocker.sh", `cat >/dev/null; echo '{"decision":"block","reason":"the fourth blocks too"}'`)
	const long = time.Minute // bounds a failure only: run in parallel, nothing waits
	g, v, log, ws := hookGate(t, parsePolicy(t, gatePolicy),
		tools.HookCommand{Event: tools.HookPreToolUse, Matcher: "Bash", Command: writer, Timeout: long},
		tools.HookCommand{Event: tools.HookPreToolUse, Matcher: "Bash", Command: asker},
		tools.HookCommand{Event: tools.HookPreToolUse, Matcher: "run_command", Command: reader, Timeout: long},
		tools.HookCommand{Event: tools.HookPreToolUse, Command: blocker},
		tools.HookCommand{Event: tools.HookPreToolUse, Matcher: "Bash", Command: asker},
	)
	res, err := g.Call(context.Background(), v, call("run_command", `{"command":"echo hi > made.txt"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || !res.Denied || !strings.Contains(res.Output, "denied by the third") || strings.Contains(res.Output, "fourth") {
		t.Errorf("result %+v, want denied with the third hook's reason (the first deny in configured order)", res)
	}
	if _, err := os.Stat(filepath.Join(ws, "made.txt")); err == nil {
		t.Error("the denied command ran")
	}
	var got []string
	for _, r := range log.recs {
		got = append(got, filepath.Base(r.Command))
		if r.TimedOut {
			t.Errorf("hook %s timed out: the hooks ran one after another", r.Command)
		}
	}
	if want := []string{"writer.sh", "asker.sh", "reader.sh", "blocker.sh"}; !slices.Equal(got, want) {
		t.Errorf("hook records %v, want %v (configured order, the repeated command once)", got, want)
	}
	if len(log.recs) == 4 && (!log.recs[0].Allow || !log.recs[1].Ask || !log.recs[2].Blocked || !log.recs[3].Blocked) {
		t.Errorf("records %+v, want allow, ask, block, block", log.recs)
	}
}

// A PreToolUse hook's updatedInput changes the call, in Claude Code's keys
// or Trio's, and the changed call goes through the policy again: a
// rewrite to a denied command or path is denied, a path out of the
// workspace is refused by the tool, an argument the tool does not take
// is an invalid call.
func TestPreToolUseUpdatedInput(t *testing.T) {
	t.Parallel()
	dir, out := t.TempDir(), t.TempDir()
	update := func(name, updated string) string {
		return script(t, dir, name, "cat >/dev/null; printf '%s\\n' \"{\\\"hookSpecificOutput\\\":{\\\"permissionDecision\\\":\\\"allow\\\",\\\"updatedInput\\\":"+updated+"}}\"\n")
	}
	tests := []struct {
		name, hook, call string
		ok               bool
		output           string
		file, content    string // a file the call must (content != "") or must not have written
	}{
		{name: "Bash command rewritten", hook: update("echo.sh", `{\"command\":\"echo rewritten\"}`),
			call: `{"command":"echo original"}`, ok: true, output: "rewritten"},
		{name: "rewritten to a denied command", hook: update("rm.sh", `{\"command\":\"rm a.txt\"}`),
			call: `{"command":"echo original"}`, output: "rm *"},
		{name: "Write moved by file_path", hook: update("move.sh", `{\"file_path\":\"$CLAUDE_PROJECT_DIR/b.txt\",\"content\":\"from the hook\"}`),
			call: `{"path":"c.txt","content":"from the model\n"}`, ok: true, file: "b.txt", content: "from the hook"},
		{name: "Write moved to a denied path", hook: update("env.sh", `{\"file_path\":\"$CLAUDE_PROJECT_DIR/.env\"}`),
			call: `{"path":"c.txt","content":"x"}`, output: "**/.env", file: ".env"},
		{name: "Write moved out of the workspace", hook: update("out.sh", `{\"file_path\":\"`+out+`/escape.txt\"}`),
			call: `{"path":"c.txt","content":"x"}`, output: "escape.txt"},
		{name: "an argument the tool does not take", hook: update("bad.sh", `{\"colour\":\"red\"}`),
			call: `{"path":"c.txt","content":"x"}`, output: "updatedInput"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tool := "write_file"
			if strings.Contains(tt.call, "command") {
				tool = "run_command"
			}
			g, v, log, ws := hookGate(t, parsePolicy(t, gatePolicy), tools.HookCommand{Event: tools.HookPreToolUse, Matcher: "Bash|Write", Command: tt.hook})
			res, err := g.Call(context.Background(), v, call(tool, tt.call))
			if err != nil {
				t.Fatal(err)
			}
			if res.OK != tt.ok || !strings.Contains(res.Output+res.Stdout, tt.output) {
				t.Errorf("result %+v, want ok=%v containing %q", res, tt.ok, tt.output)
			}
			if len(log.recs) != 1 || len(log.recs[0].UpdatedInput) == 0 {
				t.Errorf("hook records %+v, want one with its updatedInput", log.recs)
			}
			if tt.file != "" {
				b, err := os.ReadFile(filepath.Join(ws, tt.file))
				if tt.content != "" && string(b) != tt.content {
					t.Errorf("%s = %q (%v), want %q", tt.file, b, err, tt.content)
				}
				if tt.content == "" && err == nil {
					t.Errorf("%s was written", tt.file)
				}
			}
			if _, err := os.Stat(filepath.Join(ws, "c.txt")); err == nil {
				t.Error("c.txt, the model's own path, was written")
			}
			if _, err := os.Stat(filepath.Join(ws, "a.txt")); err != nil {
				t.Error("a.txt was removed")
			}
		})
	}
	if _, err := os.Stat(filepath.Join(out, "escape.txt")); err == nil {
		t.Error("a write left the workspace")
	}
}

// additionalContext reaches the result the model reads, from PreToolUse
// and PostToolUse hooks; suppressOutput keeps a hook's stdout out of its
// record; continue: false stops (the record says so, with stopReason),
// and from a PreToolUse hook the call does not run.
func TestHookContextStopAndSuppressOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	preCtx := script(t, dir, "prectx.sh", `cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"the project uses tabs"}}'`)
	postCtx := script(t, dir, "postctx.sh", `cat >/dev/null; echo '{"suppressOutput":true,"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"gofmt ran on it"}}'`)
	stop := script(t, dir, "stop.sh", `cat >/dev/null; echo '{"continue":false,"stopReason":"maintenance window"}'`)

	g, v, log, ws := hookGate(t, parsePolicy(t, gatePolicy),
		tools.HookCommand{Event: tools.HookPreToolUse, Matcher: "Write", Command: preCtx},
		tools.HookCommand{Event: tools.HookPostToolUse, Matcher: "Write", Command: postCtx})
	res, err := g.Call(context.Background(), v, call("write_file", `{"path":"b.txt","content":"x"}`))
	if err != nil || !res.OK {
		t.Fatalf("write_file: %v %+v", err, res)
	}
	for _, want := range []string{"the project uses tabs", "gofmt ran on it"} {
		if !strings.Contains(res.ForModel(), want) {
			t.Errorf("the model reads %s, want %q in it", res.ForModel(), want)
		}
	}
	if len(log.recs) != 2 || log.recs[0].Output == "" || log.recs[1].Output != "" || !log.recs[1].Suppressed {
		t.Errorf("records %+v, want the first hook's output kept and the second's suppressed", log.recs)
	}
	_ = ws

	for _, event := range []string{tools.HookPreToolUse, tools.HookPostToolUse} {
		g, v, log, ws := hookGate(t, parsePolicy(t, gatePolicy), tools.HookCommand{Event: event, Command: stop})
		res, err := g.Call(context.Background(), v, call("write_file", `{"path":"b.txt","content":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		if len(log.recs) != 1 || !log.recs[0].Stop || log.recs[0].StopReason != "maintenance window" {
			t.Errorf("%s: records %+v, want a stop with its reason", event, log.recs)
		}
		_, statErr := os.Stat(filepath.Join(ws, "b.txt"))
		if event == tools.HookPreToolUse && (res.OK || statErr == nil || !strings.Contains(res.Output, "maintenance window")) {
			t.Errorf("PreToolUse continue:false: %+v (b.txt written: %v), want the call not run, naming the reason", res, statErr == nil)
		}
		if event == tools.HookPostToolUse && (!res.OK || statErr != nil) {
			t.Errorf("PostToolUse continue:false: %+v, want the call's own result (it ran)", res)
		}
	}
}

// Hooks run in the workspace, yet a script named relative to the hooks'
// folder is that folder's (a file of the same name in the workspace is
// not run), and a script that appears in the workspace after the session
// started is not run: the call is blocked, naming it.
func TestHookScriptsResolveOutsideTheWorkspace(t *testing.T) {
	t.Parallel()
	dir, out := t.TempDir(), t.TempDir()
	marker := filepath.Join(out, "decoy-ran")
	script(t, dir, "guard.sh", "cat >/dev/null; echo \"$0\" > "+filepath.Join(out, "ran")+"\n")
	ws := newWorkspace(t, map[string]string{"a.txt": "hello"})
	script(t, ws.Dir, "guard.sh", "touch "+marker+"\n")
	hooks, err := tools.NewHooks(tools.HookConfig{Dir: dir, Commands: []tools.HookCommand{
		{Event: tools.HookPreToolUse, Matcher: "Read", Command: "sh ./guard.sh"},
		{Event: tools.HookPreToolUse, Matcher: "Grep", Command: "sh late.sh"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	g := tools.NewGate(parsePolicy(t, gatePolicy), tools.WithHooks(hooks.ForRun("r", ws.Dir, nil)))
	v := gateView(t, ws)
	if res, err := g.Call(context.Background(), v, call("read_file", `{"path":"a.txt"}`)); err != nil || !res.OK {
		t.Fatalf("read_file: %v %+v", err, res)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "ran")); strings.TrimSpace(string(b)) != filepath.Join(dir, "guard.sh") {
		t.Errorf("ran %q, want the hooks' folder's guard.sh", b)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the workspace's guard.sh ran")
	}
	script(t, ws.Dir, "late.sh", "touch "+marker+"\n")
	res, err := g.Call(context.Background(), v, call("search_files", `{"pattern":"x"}`))
	if err != nil || res.OK || !strings.Contains(res.Output, "late.sh") {
		t.Errorf("search_files with late.sh in the workspace: %v %+v, want blocked naming it", err, res)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("late.sh, written after the session started, ran")
	}
}

// A hook runs on the host in the workspace, which the Worker writes: a
// hook `python3 -m json.tool` must not import a json package the Worker
// planted there (Python puts the working folder first on sys.path unless
// PYTHONSAFEPATH is set).
func TestHookDoesNotImportWorkspaceModules(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	marker := filepath.Join(out, "planted-ran")
	hooks, err := tools.NewHooks(tools.HookConfig{Dir: dir, Commands: []tools.HookCommand{
		{Event: tools.HookPreToolUse, Command: "python3 -m json.tool >/dev/null"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ws := newWorkspace(t, map[string]string{
		"a.txt":            "hello",
		"json/__init__.py": "open(" + strconv.Quote(marker) + ", 'w').write('ran')\n",
		"json/tool.py":     "open(" + strconv.Quote(marker) + ", 'w').write('ran')\n",
	})
	g := tools.NewGate(parsePolicy(t, gatePolicy), tools.WithHooks(hooks.ForRun("run-8", ws.Dir, nil)))
	res, err := g.Call(tools.WithCallerRole(context.Background(), "worker"), gateView(t, ws), call("read_file", `{"path":"a.txt"}`))
	if err != nil || !res.OK {
		t.Fatalf("call: %v %+v", err, res)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the hook imported the workspace's json package on the host")
	}
}
