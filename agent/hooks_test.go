package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/tools"
)

// End to end: a PreToolUse hook blocks the Worker's run_command of one
// program, and the model reads the hook's reason as the call's result;
// the audit log and the trace record the hook; the Stop hook runs once
// with the stop reason.
func TestRunHooks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := t.TempDir()
	guard := filepath.Join(dir, "guard.sh")
	stop := filepath.Join(dir, "stop.sh")
	for p, body := range map[string]string{
		guard: "#!/bin/sh\nif grep -q '\"command\":\"go version' ; then echo 'go version is off limits in this project' >&2; exit 2; fi\n",
		stop:  "#!/bin/sh\ncat >> \"" + filepath.Join(dir, "stopped.json") + "\"\n", // hooks run in the workspace
	} {
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hooks, err := tools.NewHooks(tools.HookConfig{Dir: dir, Commands: []tools.HookCommand{
		{Event: tools.HookPreToolUse, Matcher: "run_command", Command: guard},
		{Event: tools.HookStop, Command: stop},
	}})
	if err != nil {
		t.Fatal(err)
	}
	m := buggyThenFixed()
	m.replies[agent.RoleWorker][0] = calls("", call{"run_command", map[string]string{"command": "go version"}},
		write("go.mod", goMod), write("calc.go", calcBuggy), finish("calc written"))
	rep := run(t, m, nil, e.opts(agent.WithHooks(hooks))...)
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("reason %s (%s)", rep.Reason, rep.Detail)
	}
	var seen bool
	for _, req := range m.requestsOf(agent.RoleWorker) {
		for _, msg := range req.Messages {
			if msg.Role == llm.RoleTool && msg.Name == "run_command" {
				seen = true
				if !strings.Contains(msg.Content, "go version is off limits in this project") || !strings.Contains(msg.Content, `"denied":true`) {
					t.Errorf("the model read %s, want a denial with the hook's reason", msg.Content)
				}
			}
		}
	}
	if !seen {
		t.Fatal("the Worker never read the run_command result")
	}
	audit := readFile(t, filepath.Join(e.runs, "run", agent.AuditFile))
	if !strings.Contains(audit, `"kind":"hook"`) || !strings.Contains(audit, `"blocked":true`) || !strings.Contains(audit, "hooks.PreToolUse") {
		t.Errorf("audit.jsonl lacks the hook's record and the gate's hook decision:\n%s", audit)
	}
	if trace := readFile(t, filepath.Join(e.runs, "run", agent.TraceFile)); !strings.Contains(trace, `"kind":"hook"`) {
		t.Error("trace.jsonl has no hook entry")
	}
	stopped := readFile(t, filepath.Join(dir, "stopped.json"))
	if strings.Count(stopped, `"hook_event_name":"Stop"`) != 1 || !strings.Contains(stopped, `"stop_reason":"completed"`) {
		t.Errorf("stop hook input %s, want one Stop with reason completed", stopped)
	}
}
