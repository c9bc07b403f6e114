package tools_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/tools"
)

// Hooks declared in a folder inside the workspace: a hook whose command
// names a script there runs in that folder while the script is the one
// pinned when the hooks were made; once the script changed (the Worker's
// code rewrote it) it is not run and the call is blocked, naming it.
func TestHookScriptPinnedInWorkspace(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"a.txt": "hello"})
	out := t.TempDir()
	ran, marker, where := filepath.Join(out, "ran"), filepath.Join(out, "marker"), filepath.Join(out, "pwd")
	guard := script(t, ws.Dir, "guard.sh", "cat >/dev/null; pwd >> "+ran+"\n")
	hooks, err := tools.NewHooks(tools.HookConfig{Dir: ws.Dir, Commands: []tools.HookCommand{
		{Event: tools.HookPreToolUse, Matcher: "read_file", Command: "sh guard.sh"},
		{Event: tools.HookPostToolUse, Matcher: "read_file", Command: "cat >/dev/null; pwd > " + where},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := hooks.Files(); len(got) != 1 || got[0] != guard {
		t.Errorf("Files() = %v, want [%s]", got, guard)
	}
	log := &hookLog{}
	g := tools.NewGate(policy.Default(), tools.WithHooks(hooks.ForRun("run-1", ws.Dir, log.add)))
	v := gateView(t, ws)

	res, err := g.Call(context.Background(), v, call("read_file", `{"path":"a.txt"}`))
	if err != nil || !res.OK {
		t.Fatalf("read_file with the pinned guard: %v %+v", err, res)
	}
	if b, _ := os.ReadFile(ran); strings.TrimSpace(string(b)) != ws.Dir {
		t.Errorf("the pinned guard ran in %q, want the workspace %s", b, ws.Dir)
	}
	// Every hook runs in the workspace, as Claude Code runs hooks in the
	// project; what is pinned is the script a command names.
	if b, _ := os.ReadFile(where); strings.TrimSpace(string(b)) != ws.Dir {
		t.Errorf("the hook that names no script ran in %q, want the workspace %s", b, ws.Dir)
	}

	os.WriteFile(guard, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755)
	res, err = g.Call(context.Background(), v, call("read_file", `{"path":"a.txt"}`))
	if err != nil || res.OK || !strings.Contains(res.Output, "guard.sh changed since the session started") {
		t.Errorf("read_file after the guard changed: %v %+v, want blocked naming guard.sh", err, res)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the changed guard ran")
	}
}

// A Claude Code hook names its script through $CLAUDE_PROJECT_DIR, which is
// the workspace: the script is pinned when the hooks are bound to the run
// (Files names it, for the run to make read-only) and, once changed, is
// not run, though the hooks were declared outside the workspace.
func TestHookScriptNamedThroughClaudeProjectDirIsPinned(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"a.txt": "hello"})
	out := t.TempDir()
	ran, marker := filepath.Join(out, "ran"), filepath.Join(out, "marker")
	os.MkdirAll(filepath.Join(ws.Dir, ".claude", "hooks"), 0o755)
	guard := script(t, filepath.Join(ws.Dir, ".claude", "hooks"), "guard.sh", "cat >/dev/null; echo \"$CLAUDE_PROJECT_DIR\" >> "+ran+"\n")
	hooks, err := tools.NewHooks(tools.HookConfig{Dir: t.TempDir(), Commands: []tools.HookCommand{
		{Event: tools.HookPreToolUse, Matcher: "Read", Command: `"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh`},
	}})
	if err != nil {
		t.Fatal(err)
	}
	bound := hooks.ForRun("run-1", ws.Dir, (&hookLog{}).add)
	if got := bound.Files(); len(got) != 1 || got[0] != guard {
		t.Errorf("Files() bound to the workspace = %v, want [%s]", got, guard)
	}
	g := tools.NewGate(policy.Default(), tools.WithHooks(bound))
	v := gateView(t, ws)
	if res, err := g.Call(context.Background(), v, call("read_file", `{"path":"a.txt"}`)); err != nil || !res.OK {
		t.Fatalf("read_file with the pinned guard: %v %+v", err, res)
	}
	if b, _ := os.ReadFile(ran); strings.TrimSpace(string(b)) != ws.Dir {
		t.Errorf("CLAUDE_PROJECT_DIR was %q, want the workspace %s", b, ws.Dir)
	}
	os.WriteFile(guard, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755)
	res, err := g.Call(context.Background(), v, call("read_file", `{"path":"a.txt"}`))
	if err != nil || res.OK || !strings.Contains(res.Output, "guard.sh changed since the session started") {
		t.Errorf("read_file after the guard changed: %v %+v, want blocked naming guard.sh", err, res)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the changed guard ran")
	}
}
