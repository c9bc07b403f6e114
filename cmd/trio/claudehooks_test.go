package main

import (
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
