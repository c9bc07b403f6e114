package main

import (
	"encoding/json"
	"go/format"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const claudeHooksScript = `roles:
  planner:
    - output: {"steps": [{"title": "Files", "description": "Write go.mod and notes.txt.", "files": ["go.mod", "notes.txt"], "expected": "files", "acceptance": "go test ./... passes"}], "risks": [], "test_command": "go test ./...", "cli": [], "tests_dir": "acceptance"}
  test_designer:
    - output:
        notes: one test that always passes
        files:
          - path: acceptance/ok_test.go
            content: |
              package acceptance

              import "testing"

              func TestOK(t *testing.T) {}
  worker:
    - tool_calls:
        - {name: write_file, arguments: {path: go.mod, content: "module x\n\ngo 1.22\n"}}
        - {name: write_file, arguments: {path: notes.txt, content: "draft\n"}}
        - {name: write_file, arguments: {path: locked.txt, content: "overwritten\n"}}
        - {name: edit_file, arguments: {path: notes.txt, old_text: draft, new_text: final}}
        - {name: run_command, arguments: {command: "go vet ./..."}}
    - tool_calls: [{name: finish_step, arguments: {note: done}}]
`

// Hooks written for Claude Code, pasted into trio.yaml unchanged: matchers
// "Bash" and "Edit|Write", scripts named through $CLAUDE_PROJECT_DIR in the
// project's .claude/hooks, reading Claude Code's tool_input fields
// (command, file_path absolute, content, old_string/new_string). They fire
// for run_command, write_file and edit_file and block go vet and a write
// to locked.txt; the other calls go through.
func TestClaudeCodeHooksPasted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	proj := filepath.Join(dir, "proj")
	log := filepath.Join(dir, "hook-input.jsonl")
	files := map[string]string{
		"script.yaml":      claudeHooksScript,
		"proj/policy.yaml": "version: 1\nmode: unattended\ncommands:\n  allow: [\"go test *\", \"go vet *\"]\n",
		"proj/locked.txt":  "keep\n",
		"proj/.claude/hooks/bash_guard.sh": "#!/bin/sh\ninput=$(cat)\n" +
			"case \"$input\" in *'\"command\":\"go vet'*) echo 'go vet is not allowed here' >&2; exit 2;; esac\n",
		"proj/.claude/hooks/protect.sh": "#!/bin/sh\ninput=$(cat)\nprintf '%s\\n' \"$input\" >> " + log + "\n" +
			"case \"$input\" in *'\"file_path\":\"'\"$CLAUDE_PROJECT_DIR\"'/locked.txt\"'*) echo 'locked.txt is protected' >&2; exit 2;; esac\n",
		"proj/trio.yaml": `policy: policy.yaml
runs_dir: ../runs
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: '"$CLAUDE_PROJECT_DIR"/.claude/hooks/bash_guard.sh'
    - matcher: "Edit|Write"
      hooks:
        - type: command
          command: "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/protect.sh"
          timeout: 10
`,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r := trio(t, proj, cleanEnv(envScript+"="+filepath.Join(dir, "script.yaml")),
		"run", "--goal", "x", "--workspace", ".", "--reuse-workspace", "--sandbox", "local", "--unattended")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(proj, "locked.txt")); string(b) != "keep\n" {
		t.Errorf("locked.txt = %q, want it kept by the Edit|Write hook", b)
	}
	if b, _ := os.ReadFile(filepath.Join(proj, "notes.txt")); string(b) != "final\n" {
		t.Errorf("notes.txt = %q, want the write and the edit let through", b)
	}
	audits, _ := filepath.Glob(filepath.Join(dir, "runs", "*", "audit.jsonl"))
	if len(audits) != 1 {
		t.Fatalf("audit files %v", audits)
	}
	audit, _ := os.ReadFile(audits[0])
	for _, want := range []string{"go vet is not allowed here", "locked.txt is protected"} {
		if !strings.Contains(string(audit), want) {
			t.Errorf("audit lacks the block %q:\n%s", want, audit)
		}
	}
	input, _ := os.ReadFile(log)
	for _, want := range []string{
		`"file_path":"` + proj + `/notes.txt"`, `"content":"draft\n"`, `"old_string":"draft"`, `"new_string":"final"`,
		`"path":"notes.txt"`, // Trio's own fields are kept
	} {
		if !strings.Contains(string(input), want) {
			t.Errorf("the Edit|Write hook's input lacks %s:\n%s", want, input)
		}
	}
	if n := strings.Count(string(input), "\n"); n != 4 {
		t.Errorf("the Edit|Write hook ran %d times, want 4 (three writes, one edit; not for run_command)", n)
	}

	// The script named through $CLAUDE_PROJECT_DIR is a pinned control
	// file: changed since the session, the next session stops (exit 3)
	// naming it, before any hook or model runs.
	protect := filepath.Join(proj, ".claude", "hooks", "protect.sh")
	os.Chmod(protect, 0o755)
	if err := os.WriteFile(protect, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r = trio(t, proj, cleanEnv(envScript+"="+filepath.Join(dir, "script.yaml")),
		"run", "--goal", "x", "--workspace", ".", "--reuse-workspace", "--sandbox", "local", "--unattended")
	if r.code != exitConfig || !strings.Contains(r.stderr, "protect.sh") || !strings.Contains(r.stderr, "--trust-config") {
		t.Errorf("a session after protect.sh changed: exit %d, want 3 naming it:\n%s", r.code, r.stderr)
	}
}

const claudeShapesScript = `roles:
  planner:
    - output: {"steps": [{"title": "Program", "description": "Write go.mod and main.go.", "files": ["go.mod", "main.go"], "expected": "files", "acceptance": "go test ./... passes"}], "risks": [], "test_command": "go test ./...", "cli": [], "tests_dir": "acceptance"}
  test_designer:
    - output:
        notes: one test that always passes
        files:
          - path: acceptance/ok_test.go
            content: |
              package acceptance

              import "testing"

              func TestOK(t *testing.T) {}
  worker:
    - tool_calls:
        - {name: write_file, arguments: {path: go.mod, content: "module x\n\ngo 1.22\n"}}
        - {name: run_command, arguments: {command: "go build ./..."}}
        - {name: write_file, arguments: {path: main.go, content: "package main\nfunc  main( ) {}\n"}}
        - {name: write_file, arguments: {path: secret.txt, content: "hunter2\n"}}
        - {name: edit_file, arguments: {path: main.go, old_text: "func main() {}", new_text: "func main() { println(\"hi\") }"}}
        - {name: run_command, arguments: {command: "go vet ./..."}}
    - tool_calls: [{name: finish_step, arguments: {note: done}}]
`

// Each shape of hook Claude Code's documentation shows, written anew and
// pasted into trio.yaml as Claude Code's settings hold them, every one
// named through "$CLAUDE_PROJECT_DIR"/.claude/hooks/: a Bash command
// validator (Python) that blocks with exit 2 and its message on stderr; a
// PreToolUse JSON decision on Write that denies one file and, for a Go
// file, allows with updatedInput (a header added) and additionalContext;
// an Edit|Write formatter in PostToolUse that runs gofmt on file_path; a
// PostToolUse hook that answers "continue": false with a stopReason; a
// Stop hook that logs its input. Each fires and decides, end to end: the
// run stops (hook_stopped, exit 1, resumable), the Stop hook sees why,
// and `trio resume` completes it once the stopping hook lets it go.
func TestClaudeCodeHookShapesEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	proj := filepath.Join(dir, "proj")
	flag, stopLog := filepath.Join(dir, "stop-on-vet"), filepath.Join(dir, "stop-input.jsonl")
	files := map[string]string{
		"script.yaml":      claudeShapesScript,
		"stop-on-vet":      "",
		"proj/policy.yaml": "version: 1\nmode: unattended\ncommands:\n  allow: [\"go test *\", \"go vet *\", \"go build *\"]\n",
		"proj/.claude/hooks/bash_command_validator.py": `#!/usr/bin/env python3
import json
import re
import sys

# (regex, message): commands this project wants done another way.
VALIDATION_RULES = [
    (r"\bgo build\b", "Use 'go vet ./...' instead of 'go build': the build runs in CI"),
]

try:
    input_data = json.load(sys.stdin)
except json.JSONDecodeError as e:
    print(f"Error: Invalid JSON input: {e}", file=sys.stderr)
    sys.exit(1)

if input_data.get("tool_name") != "Bash":
    sys.exit(0)
command = input_data.get("tool_input", {}).get("command", "")
issues = [message for pattern, message in VALIDATION_RULES if re.search(pattern, command)]
if issues:
    for message in issues:
        print(f"* {message}", file=sys.stderr)
    sys.exit(2)
`,
		"proj/.claude/hooks/write_guard.py": `#!/usr/bin/env python3
import json
import sys

input_data = json.load(sys.stdin)
tool_input = input_data.get("tool_input", {})
file_path = tool_input.get("file_path", "")
if file_path.endswith("secret.txt"):
    output = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
              "permissionDecisionReason": "secrets stay out of the project"}}
elif file_path.endswith(".go"):
    output = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
              "permissionDecisionReason": "a Go file: header added",
              "updatedInput": {"file_path": file_path,
                               "content": "// Reviewed by the write guard.\n" + tool_input.get("content", "")},
              "additionalContext": "The write guard added a header comment to " + file_path}}
else:
    sys.exit(0)
print(json.dumps(output))
sys.exit(0)
`,
		"proj/.claude/hooks/format_go.sh": `#!/bin/sh
file_path=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["tool_input"].get("file_path", ""))')
case "$file_path" in
*.go) gofmt -w "$file_path" ;;
esac
`,
		"proj/.claude/hooks/stop_after_vet.sh": "#!/bin/sh\ninput=$(cat)\n" +
			"case \"$input\" in *'\"command\":\"go vet'*)\n" +
			"  [ -f " + flag + " ] && echo '{\"continue\": false, \"stopReason\": \"go vet ran: stopping for a review\"}';;\nesac\nexit 0\n",
		"proj/.claude/hooks/log_stop.sh": "#!/bin/sh\ncat >> " + stopLog + "\necho >> " + stopLog + "\n",
		"proj/trio.yaml": `policy: policy.yaml
runs_dir: ../runs
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/bash_command_validator.py"
    - matcher: Write
      hooks:
        - type: command
          command: '"$CLAUDE_PROJECT_DIR"/.claude/hooks/write_guard.py'
  PostToolUse:
    - matcher: "Edit|Write"
      hooks:
        - type: command
          command: '"$CLAUDE_PROJECT_DIR"/.claude/hooks/format_go.sh'
    - matcher: Bash
      hooks:
        - type: command
          command: '"$CLAUDE_PROJECT_DIR"/.claude/hooks/stop_after_vet.sh'
  Stop:
    - hooks:
        - type: command
          command: '"$CLAUDE_PROJECT_DIR"/.claude/hooks/log_stop.sh'
`,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The system's python3 first (CI installs it there): a version
	// manager's shim in PATH can take seconds to start each hook.
	env := cleanEnv(envScript+"="+filepath.Join(dir, "script.yaml"), "PATH=/usr/bin:"+os.Getenv("PATH"))
	r := trio(t, proj, env, "run", "--goal", "x", "--workspace", ".", "--reuse-workspace", "--sandbox", "local", "--unattended")
	if r.code != exitFailed || !strings.Contains(r.stderr, "hook_stopped") || !strings.Contains(r.stderr, "go vet ran: stopping for a review") ||
		!strings.Contains(r.stderr, "trio resume") {
		t.Fatalf("exit %d, want 1 with hook_stopped, the hook's stopReason and how to resume:\n%s", r.code, r.stderr)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("run folders %v", runs)
	}
	runDir := runs[0]

	// The validator blocked go build (exit 2, stderr), the write guard
	// denied secret.txt: the model read both reasons, and the guard's
	// additionalContext.
	hist, _ := os.ReadFile(filepath.Join(runDir, "history.jsonl"))
	for _, want := range []string{"Use 'go vet ./...' instead of 'go build'", "secrets stay out of the project", "The write guard added a header comment to " + filepath.Join(proj, "main.go")} {
		if !strings.Contains(string(hist), want) {
			t.Errorf("the model never read %q:\n%s", want, hist)
		}
	}
	if _, err := os.Stat(filepath.Join(proj, "secret.txt")); err == nil {
		t.Error("secret.txt was written though the write guard denied it")
	}
	// updatedInput added the header; the formatter ran after the write
	// and after the edit, in the workspace's file.
	main, _ := os.ReadFile(filepath.Join(proj, "main.go"))
	if formatted, err := format.Source(main); err != nil || string(formatted) != string(main) ||
		!strings.HasPrefix(string(main), "// Reviewed by the write guard.\n") || !strings.Contains(string(main), `println("hi")`) {
		t.Errorf("main.go = %q, want the guard's header, the edit, and gofmt's layout", main)
	}
	audit, _ := os.ReadFile(filepath.Join(runDir, "audit.jsonl"))
	for _, want := range []string{`"updated_input":`, `"additional_context":`, `"stop":true`, `"stop_reason":"go vet ran: stopping for a review"`} {
		if !strings.Contains(string(audit), want) {
			t.Errorf("audit.jsonl lacks %s", want)
		}
	}
	// The Stop hook ran once, told why, with Claude Code's fields.
	var stops []map[string]any
	readStops := func() {
		stops = nil
		b, _ := os.ReadFile(stopLog)
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("Stop hook input %q: %v", line, err)
			}
			stops = append(stops, m)
		}
	}
	readStops()
	if len(stops) != 1 || stops[0]["hook_event_name"] != "Stop" || stops[0]["stop_reason"] != "hook_stopped" || stops[0]["stop_hook_active"] != false ||
		stops[0]["permission_mode"] != "dontAsk" || stops[0]["cwd"] != proj || stops[0]["transcript_path"] != filepath.Join(runDir, "history.jsonl") {
		t.Errorf("Stop hook inputs %v, want one, for hook_stopped, with Claude Code's fields", stops)
	}

	// The stopping hook lets go: the run resumes where it stopped and completes.
	os.Remove(flag)
	r = trio(t, proj, env, "resume", runDir)
	if r.code != exitOK {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	readStops()
	if len(stops) != 2 || stops[1]["stop_reason"] != "completed" {
		t.Errorf("Stop hook inputs after resume %v, want a second, for completed", stops)
	}
}
