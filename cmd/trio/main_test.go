package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/sandbox/containerd"
)

// bin is the trio binary built once for the tests that drive it.
var bin string

func TestMain(m *testing.M) {
	if os.Getenv(envTestMCPServer) == "1" {
		serveTestMCP() // the test binary as a stdio MCP server (extensions_test.go)
	}
	dir, err := os.MkdirTemp("", "trio-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "trio")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cleanEnv is the environment without model or script settings.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "OPENAI_API_KEY", "OPENAI_BASE_URL", envModel, envScript:
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

type result struct {
	code           int
	stdout, stderr string
}

// trio runs the binary in dir and waits for it.
func trio(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	if env == nil {
		cmd.Env = cleanEnv()
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("trio %v: %v", args, err)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
}

func goTest(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("go", "test", "./...")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go test ./... in %s: %v\n%s", dir, err, out)
	}
}

// `trio demo` in an empty folder makes ./trio-demo, builds the project,
// and its tests pass.
func TestDemo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := trio(t, dir, nil, "demo", "--sandbox", "local")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"trio demo: working in " + filepath.Join(dir, "trio-demo"), "[critic] verdict fail", "[critic] verdict pass",
		"[critic] run_tests go test",
		"COMPLETED", "project:    " + filepath.Join(dir, "trio-demo", "project"), "run folder: " + filepath.Join(dir, "trio-demo", "runs")} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	goTest(t, filepath.Join(dir, "trio-demo", "project"))
	runs, _ := filepath.Glob(filepath.Join(dir, "trio-demo", "runs", "*", agent.ReportJSON))
	if len(runs) != 1 {
		t.Fatalf("report files: %v", runs)
	}
	// inspect shows the run from its folder, by id with --runs-dir.
	id := filepath.Base(filepath.Dir(runs[0]))
	in := trio(t, dir, nil, "inspect", "--runs-dir", filepath.Join("trio-demo", "runs"), id)
	if in.code != 0 {
		t.Fatalf("inspect: exit %d\n%s", in.code, in.stderr)
	}
	for _, want := range []string{"[x] 2. Command", "run_tests", `commands.allow: "go test *"`, "1. fail", "2. pass",
		"worker", "total", "completed — the Critic's checks pass", "critic  run_tests", "worker  write_file", "Sandbox: local (not isolated); enforced: timeout", "Started with: model=demo, sandbox=local"} {
		if !strings.Contains(in.stdout, want) {
			t.Errorf("inspect lacks %q:\n%s", want, in.stdout)
		}
	}
	// A second demo in the same folder does not touch the first.
	if r := trio(t, dir, nil, "demo", "--sandbox", "local", "--quiet"); r.code != 0 ||
		!strings.Contains(r.stderr, filepath.Join(dir, "trio-demo-2")) || strings.Contains(r.stderr, "[worker]") {
		t.Errorf("second demo: exit %d\n%s", r.code, r.stderr)
	}
}

// Ctrl-C during the demo stops it with exit 130 and a checkpoint; resume
// finishes it, and the project's tests pass.
func TestInterruptAndResume(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws, runs := filepath.Join(dir, "ws"), filepath.Join(dir, "runs")
	cmd := exec.Command(bin, "demo", "--json", "--sandbox", "local", "--workspace", ws, "--runs-dir", runs)
	cmd.Dir, cmd.Env = dir, cleanEnv()
	var errb bytes.Buffer
	cmd.Stderr = &errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	signalled := false
	var kinds []string
	for sc.Scan() {
		var ev agent.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Errorf("event line %q: %v", sc.Text(), err)
			continue
		}
		kinds = append(kinds, string(ev.Kind))
		if ev.Kind == agent.EventToolCall && !signalled {
			signalled = true
			cmd.Process.Signal(syscall.SIGINT)
		}
	}
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Fatalf("exit %d, want 130; events %v\n%s", code, kinds, errb.String())
	}
	first := 0 // the start's steps are told before the run starts
	for first < len(kinds)-1 && kinds[first] == string(agent.EventSetup) {
		first++
	}
	if kinds[first] != string(agent.EventRunStarted) || kinds[len(kinds)-1] != string(agent.EventRunFinished) {
		t.Errorf("events %v", kinds)
	}
	if !strings.Contains(errb.String(), "continue with: trio resume "+runs) {
		t.Errorf("no resume hint:\n%s", errb.String())
	}
	ids, _ := os.ReadDir(runs)
	if len(ids) != 1 {
		t.Fatalf("runs: %v", ids)
	}
	id := ids[0].Name()
	in := trio(t, dir, nil, "inspect", filepath.Join(runs, id))
	if in.code != 0 || !strings.Contains(in.stdout, "interrupted") || !strings.Contains(in.stdout, "trio resume") ||
		!strings.Contains(in.stdout, "model=demo") {
		t.Errorf("inspect of the interrupted run: exit %d\n%s%s", in.code, in.stdout, in.stderr)
	}
	r := trio(t, dir, nil, "resume", "--runs-dir", runs, id)
	if r.code != exitOK {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "resumed") || !strings.Contains(r.stderr, "COMPLETED") {
		t.Errorf("resume output:\n%s", r.stderr)
	}
	goTest(t, ws)
	// A finished run is not resumed again; the exit code is its outcome.
	again := trio(t, dir, nil, "resume", filepath.Join(runs, id))
	if again.code != exitOK || !strings.Contains(again.stderr, "already finished") {
		t.Errorf("resume of a finished run: exit %d\n%s", again.code, again.stderr)
	}
}

func TestPolicyExplain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pol, err := filepath.Abs("../../configs/policy.interactive.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args     []string
		code     int
		decision string
		rule     string
	}{
		{[]string{"--", "go", "test", "./..."}, exitOK, "allow", `commands.allow: "go test *"`},
		{[]string{"--", "rm", "-rf", "build"}, exitExplainAsk, "ask", `commands.ask: "rm *"`},
		{[]string{"--", "curl", "https://example.com"}, exitExplainDeny, "deny", `commands.deny: "curl *"`},
		{[]string{"--", "go test ./... | tail -n 5"}, exitOK, "allow", `commands.allow`},
		{[]string{"--", "nc", "-l", "80"}, exitExplainDeny, "deny", "default-deny"},
		// Both crashed explain with a nil-pointer panic (exit 2): the
		// options in GOFLAGS are parsed without a spec of their own.
		{[]string{"--", "env GOFLAGS=-mod=mod go build ./..."}, exitOK, "allow", `commands.allow`},
		{[]string{"--", "env GOFLAGS=-o=/etc/x go build ./..."}, exitExplainDeny, "deny", "path-outside-workspace"},
		// Inside a kind that enforces the rules, arguments and shell forms
		// are the sandbox's; which programs run is still judged.
		{[]string{"--sandbox", "userns", "--", "CGO_ENABLED=0 go build -o bin/app . && ./bin/app --help > help.txt"}, exitOK, "allow", `commands.allow`},
		{[]string{"--sandbox", "landlock", "--", "go test ./... | tail -5; curl https://example.com"}, exitExplainDeny, "deny", `commands.deny: "curl *"`},
		{[]string{"--sandbox", "userns", "--", "go build -o /tmp/app ."}, exitOK, "allow", `commands.allow: "go build *"`},
		{[]string{"--sandbox", "local", "--", "go build -o /tmp/app ."}, exitExplainDeny, "deny", "path-outside-workspace"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[1:], " "), func(t *testing.T) {
			t.Parallel()
			r := trio(t, dir, nil, append([]string{"policy", "explain", "--policy", pol}, tt.args...)...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d\n%s%s", r.code, tt.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, "decision: "+tt.decision+"\n") || !strings.Contains(r.stdout, "rule:     "+tt.rule) ||
				!strings.Contains(r.stdout, "reason:   ") {
				t.Errorf("output:\n%s", r.stdout)
			}
		})
	}
	// --path judges a file tool's access to a workspace-relative path.
	paths := []struct {
		args     []string
		code     int
		decision string
		rule     string
	}{
		{[]string{"--path", "main.go"}, exitOK, "allow", "workspace"},
		{[]string{"--path", "main.go", "--write"}, exitOK, "allow", "workspace"},
		{[]string{"--path", "sub/.env"}, exitExplainDeny, "deny", `paths.deny: "**/.env"`},
		{[]string{"--path", "vendor/x/a.go"}, exitOK, "allow", "workspace"},
		{[]string{"--path", "vendor/x/a.go", "--write"}, exitExplainDeny, "deny", `paths.read_only: "vendor/**"`},
		{[]string{"--write", "--path", "../x"}, exitExplainDeny, "deny", "path-outside-workspace"},
	}
	for _, tt := range paths {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			r := trio(t, dir, nil, append([]string{"policy", "explain", "--policy", pol}, tt.args...)...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d\n%s%s", r.code, tt.code, r.stdout, r.stderr)
			}
			access := "read"
			if slices.Contains(tt.args, "--write") {
				access = "write"
			}
			if !strings.Contains(r.stdout, "path:     "+tt.args[slices.Index(tt.args, "--path")+1]+" ("+access+")\n") ||
				!strings.Contains(r.stdout, "decision: "+tt.decision+"\n") || !strings.Contains(r.stdout, "rule:     "+tt.rule) ||
				!strings.Contains(r.stdout, "reason:   ") {
				t.Errorf("output:\n%s", r.stdout)
			}
		})
	}
	// An unattended policy says that a run would deny what it asks.
	un, _ := filepath.Abs("../../configs/policy.unattended.yaml")
	r := trio(t, dir, nil, "policy", "explain", "--policy", un, "--", "rm", "x")
	if r.code == exitExplainAsk && !strings.Contains(r.stdout, "unattended") {
		t.Errorf("unattended ask without a note:\n%s", r.stdout)
	}
}

func TestPolicyCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("version: 1\ncommands:\n  allow: [\"go test *\"]\nlimits:\n  memory: lots\n"), 0o644)
	r := trio(t, dir, nil, "policy", "check", bad)
	if r.code != exitConfig || !strings.Contains(r.stderr, bad+":5") || !strings.Contains(r.stderr, "limits.memory") {
		t.Errorf("broken file: exit %d\n%s", r.code, r.stderr)
	}
	good, _ := filepath.Abs("../../configs/policy.strict.yaml")
	if r := trio(t, dir, nil, "policy", "check", good); r.code != exitOK || !strings.Contains(r.stdout, "ok") ||
		!strings.Contains(r.stdout, "memory 1GiB") || !strings.Contains(r.stdout, "output 64KiB") {
		t.Errorf("good file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// Without an endpoint, run says what to set and points at the demo.
func TestRunWithoutEndpoint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := trio(t, dir, nil, "run", "--goal", "build a thing")
	if r.code != exitConfig {
		t.Errorf("exit %d, want %d", r.code, exitConfig)
	}
	for _, want := range []string{"no model endpoint", "OPENAI_API_KEY", "TRIO_MODEL", "OPENAI_BASE_URL", "trio demo"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("guidance lacks %q:\n%s", want, r.stderr)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("run without endpoint left %v", entries)
	}
	// The key is named by the configuration, and a key set but no model is
	// still guidance.
	cfg := filepath.Join(dir, "trio.yaml")
	os.WriteFile(cfg, []byte("endpoint:\n  api_key_env: MY_KEY\n"), 0o644)
	r = trio(t, dir, cleanEnv("MY_KEY=secret-value-123"), "run", "--goal", "x")
	if r.code != exitConfig || !strings.Contains(r.stderr, "TRIO_MODEL") || strings.Contains(r.stderr, "$MY_KEY") ||
		strings.Contains(r.stderr, "secret-value-123") {
		t.Errorf("exit %d:\n%s", r.code, r.stderr)
	}
}

func TestUsageAndConfigErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("budgets:\n  max_stepz: 3\n"), 0o644)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, "unknown command"},
		{[]string{"run", "--nope"}, "unknown flag"},
		{[]string{"run"}, "no goal"},
		{[]string{"run", "--goal", "a", "--goal-file", "b"}, "give --goal TEXT or --goal-file FILE, not both"},
		{[]string{"run", "--goal-file", "missing.md"}, "--goal-file: open missing.md"},
		{[]string{"demo", "--sandbox", "bogus"}, `--sandbox "bogus": want containerd, userns, landlock, local (no isolation) or auto`},
		{[]string{"run", "--goal", "x", "--sandbox", "docker"}, `--sandbox "docker"`},
		{[]string{"run", "--config", "bad.yaml", "--goal", "x"}, "bad.yaml:2"},
		{[]string{"resume", "nope"}, `no run "nope"`},
		{[]string{"tools", "--role", "boss"}, "--role"},
		{[]string{"inspect"}, "accepts 1 arg"},
		{[]string{"inspect", "."}, "is not a run folder: it has no state.json"},
		{[]string{"resume", "."}, "is not a run folder: it has no state.json"},
		{[]string{"policy", "explain"}, "no command to explain: give it after --"},
		{[]string{"policy", "explain", "--path", "a", "--", "ls"}, "not both"},
		{[]string{"policy", "explain", "--write", "--", "ls"}, "--write goes with --path FILE"},
		{[]string{"policy", "explain", "--path="}, "--path: empty path"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			r := trio(t, dir, nil, tt.args...)
			if r.code != exitConfig || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, want 3 with %q:\n%s", r.code, tt.want, r.stderr)
			}
		})
	}
	t.Cleanup(func() {
		// A usage error creates nothing: no demo folder, no run folder.
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.Name() != "bad.yaml" {
				t.Errorf("usage errors left %s", e.Name())
			}
		}
	})
}

func TestToolsJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tt := range []struct {
		role string
		want []string
	}{
		{"", []string{"delete_file", "edit_file", "finish_step", "list_files", "read_file", "run_command", "run_linter", "run_tests", "search_files", "write_file"}},
		{"worker", []string{"delete_file", "edit_file", "finish_step", "list_files", "read_file", "run_command", "run_linter", "run_tests", "search_files", "write_file"}},
		{"planner", []string{"list_files", "read_file", "search_files"}},
		{"critic", []string{"list_files", "read_file", "run_command", "run_linter", "run_tests"}},
	} {
		r := trio(t, dir, nil, "tools", "--json", "--role", tt.role)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		var defs []struct {
			Type     string `json:"type"`
			Function struct {
				Name       string         `json:"name"`
				Parameters map[string]any `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &defs); err != nil {
			t.Fatalf("role %q: %v\n%s", tt.role, err, r.stdout)
		}
		var names []string
		for _, d := range defs {
			names = append(names, d.Function.Name)
			if d.Type != "function" || d.Function.Parameters["type"] != "object" {
				t.Errorf("%s: %+v", d.Function.Name, d)
			}
		}
		if strings.Join(names, ",") != strings.Join(tt.want, ",") {
			t.Errorf("role %q: tools %v, want %v", tt.role, names, tt.want)
		}
	}
	// A description announcing a list ("in one of two ways:") keeps it; a
	// comma in a field's description does not cut it short.
	if r := trio(t, dir, nil, "tools"); r.code != 0 || !strings.Contains(r.stdout, "path (string, required)") || !strings.Contains(r.stdout, "finish_step") ||
		!strings.Contains(r.stdout, "in one of three ways:\n  1. ") || !strings.Contains(r.stdout, "What the step did, in a sentence or two.") {
		t.Errorf("tools: exit %d\n%s", r.code, r.stdout)
	}
}

func TestVersionAndHelp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if r := trio(t, dir, nil, "version"); r.code != 0 || !strings.HasPrefix(r.stdout, "trio ") {
		t.Errorf("version: %d %q", r.code, r.stdout)
	}
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"demo", "--help"}, {"resume", "--help"}} {
		r := trio(t, dir, nil, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "130  interrupted") || !strings.Contains(r.stdout, "2    a budget was spent") {
			t.Errorf("%v: exit %d, exit codes not documented:\n%s", args, r.code, r.stdout)
		}
	}
	for _, args := range [][]string{{"run"}, {"demo"}, {"resume"}, {"inspect"}, {"tools"}, {"policy", "check"}, {"policy", "explain"}} {
		r := trio(t, dir, nil, append(args, "--help")...)
		if r.code != 0 || !strings.Contains(r.stdout, "Examples:\n") || !strings.Contains(r.stdout, "\n  trio "+args[0]) || !strings.Contains(r.stdout, "xit codes") {
			t.Errorf("%v --help: exit %d, no examples or exit codes:\n%s", args, r.code, r.stdout)
		}
	}
}

func TestExitCode(t *testing.T) {
	t.Parallel()
	want := map[agent.StopReason]int{
		agent.StopCompleted: 0, agent.StopInterrupted: 130,
		agent.StopBudgetSteps: 2, agent.StopBudgetRepairs: 2, agent.StopBudgetTokens: 2, agent.StopBudgetTime: 2, agent.StopContextBudget: 2,
		agent.StopChecksFailed: 1, agent.StopSameFailure: 1, agent.StopRepeatedCall: 1, agent.StopOscillation: 1,
		agent.StopPlanInvalid: 1, agent.StopModelError: 1, agent.StopSandboxError: 1,
		agent.StopReviewBlocked: 1, agent.StopErrorsIncreasing: 1, agent.StopOutOfReplies: 1, agent.StopHookStopped: 1,
	}
	for _, r := range agent.StopReasons() {
		w, ok := want[r]
		if !ok {
			t.Errorf("stop reason %s has no expected exit code here", r)
			continue
		}
		if got := exitCode(r); got != w {
			t.Errorf("exitCode(%s) = %d, want %d", r, got, w)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reader,
// which can wait for what is written.
type syncBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote *sync.Cond // on mu
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.wrote != nil {
		b.wrote.Broadcast()
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until b holds n occurrences of sub, woken by each write:
// no deadline decides it, however slow the machine (one that never comes
// ends in the test binary's timeout, with every goroutine's stack). limit
// is kept for the callers; it decides nothing.
func waitFor(t *testing.T, b *syncBuffer, sub string, n int, limit time.Duration) {
	t.Helper()
	_ = limit
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.wrote == nil {
		b.wrote = sync.NewCond(&b.mu)
	}
	for strings.Count(b.buf.String(), sub) < n {
		b.wrote.Wait()
	}
}

// --sandbox containerd with containerd unreachable is a configuration
// error that says where it looked and what to do; nothing is left behind.
func TestContainerdUnreachable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := filepath.Join(dir, "no.sock")
	r := trio(t, dir, cleanEnv("TRIO_CONTAINERD_ADDRESS="+sock), "demo", "--sandbox", "containerd", "--workspace", "ws", "--runs-dir", "runs")
	if r.code != exitConfig || !strings.Contains(r.stderr, sock) || strings.Count(r.stderr, "--sandbox local") != 1 ||
		!strings.Contains(r.stderr, "sandbox: {kind: local}") || strings.Contains(r.stderr, "sandbox: local`") {
		t.Errorf("exit %d; want the socket, the --sandbox local hint once and the trio.yaml form the config accepts:\n%s", r.code, r.stderr)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "runs")); len(entries) != 0 {
		t.Errorf("run folders left: %v", entries)
	}
	// The demo's own folder is not left behind either.
	r = trio(t, dir, cleanEnv("TRIO_CONTAINERD_ADDRESS="+sock), "demo", "--sandbox", "containerd")
	if _, err := os.Stat(filepath.Join(dir, "trio-demo")); r.code != exitConfig || err == nil {
		t.Errorf("demo: exit %d, trio-demo stat %v:\n%s", r.code, err, r.stderr)
	}
}

// asNobody runs the pyScript goal as nobody, for whom the userns sandbox
// is made, in a folder nobody owns: it completes isolated, and trio
// inspect says so and lists the enforced limits.
func asNobody(t *testing.T, env []string) {
	t.Helper()
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true, root, and no setpriv: %v", err)
		}
		t.Skipf("root without setpriv: %v", err)
	}
	dir, err := os.MkdirTemp("/tmp", "trio-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(pyScript), 0o644)
	os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte("version: 1\nmode: interactive\ncommands:\n  allow: [\"python3 *\"]\n"), 0o644)
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "trio"), b, 0o755)
	for _, p := range []string{dir, filepath.Join(dir, "script.yaml"), filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "trio")} {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(dir, 0o755)
	nobodyEnv := append(slices.Clone(env), "HOME="+dir, envScript+"="+filepath.Join(dir, "script.yaml"))
	as := func(args ...string) (string, int) {
		cmd := exec.Command(setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--", filepath.Join(dir, "trio")}, args...)...)
		cmd.Dir, cmd.Env = dir, nobodyEnv
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	out, code := as("run", "--goal", "x", "--policy", "policy.yaml", "--runs-dir", "runs")
	if code != exitOK || !strings.Contains(out, "sandbox userns; enforced: ") {
		t.Fatalf("as nobody: exit %d:\n%s", code, out)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("run folders: %v", runs)
	}
	out, _ = as("inspect", runs[0])
	if !strings.Contains(out, "Sandbox: userns; enforced: ") {
		t.Errorf("trio inspect as nobody:\n%s", out)
	}
}

// pyScript builds and checks a one-file Python project: its check takes
// a second in any sandbox (a Go check would first compile the standard
// library into the sandbox's empty build cache).
const pyScript = `roles:
  planner:
    - output: {"steps": [{"title": "Write app.py", "description": "Write app.py with answer() returning 42.", "files": ["app.py"], "expected": "app.py", "acceptance": "the tests pass"}], "risks": [], "test_command": "python3 -m unittest discover -s acceptance -t . -v", "cli": [], "tests_dir": "acceptance"}
  test_designer:
    - output:
        notes: one test
        files:
          - path: acceptance/__init__.py
            content: ""
          - path: acceptance/test_app.py
            content: |
              import unittest
              import app

              class TestApp(unittest.TestCase):
                  def test_answer(self):
                      self.assertEqual(app.answer(), 42)
  worker:
    - tool_calls:
        - {name: write_file, arguments: {path: app.py, content: "def answer():\n    return 42\n"}}
    - tool_calls: [{name: finish_step, arguments: {note: done}}]
`

// autoWithoutLandlock is a trio.yaml whose auto tries containerd and
// userns only: what auto does on a machine without Landlock.
const autoWithoutLandlock = "sandbox:\n  auto: [containerd, userns]\n"

// Without containerd, auto runs in the userns sandbox where user
// namespaces work; with them disabled (a throwaway user namespace whose
// limit is 0: bwrap --disable-userns), an unattended run refuses to start
// with exit 3 and the three ways forward, and so does an interactive one
// with nobody at a terminal to say yes.
func TestAutoWithoutContainerd(t *testing.T) {
	t.Parallel()
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and bwrap is missing: %v", err)
		}
		t.Skipf("bwrap missing: %v", err)
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "no.sock")
	script := filepath.Join(dir, "script.yaml")
	pol := filepath.Join(dir, "policy.yaml")
	os.WriteFile(script, []byte(pyScript), 0o644)
	os.WriteFile(pol, []byte("version: 1\nmode: interactive\ncommands:\n  allow: [\"python3 *\"]\nlimits:\n  cpus: 1\n"), 0o644)
	env := cleanEnv("TRIO_CONTAINERD_ADDRESS="+sock, envScript+"="+script)
	r := trio(t, dir, env, "run", "--goal", "x", "--policy", pol, "--runs-dir", "runs")
	if r.code != exitOK || strings.Contains(r.stderr, "LOCAL sandbox") || !strings.Contains(r.stderr, "sandbox userns; enforced: ") {
		t.Errorf("auto with user namespaces: exit %d:\n%s", r.code, r.stderr)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("run folders: %v", runs)
	}
	r = trio(t, dir, env, "inspect", runs[0])
	for _, want := range []string{"Sandbox: userns; enforced: ", "pids 256 (RLIMIT_NPROC", "not enforced: ", "cpus"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("trio inspect lacks %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}

	if os.Getuid() == 0 {
		asNobody(t, env)
	}

	unattended, err := filepath.Abs("../../configs/policy.unattended.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// A machine without Landlock either: auto leaves it out.
	noLandlock := filepath.Join(dir, "no-landlock.yaml")
	os.WriteFile(noLandlock, []byte(autoWithoutLandlock), 0o644)
	for _, policyFile := range []string{unattended, pol} {
		cmd := exec.Command(bwrap, "--unshare-user", "--disable-userns", "--dev-bind", "/", "/", "--",
			bin, "run", "--config", noLandlock, "--goal", "x", "--policy", policyFile, "--runs-dir", "runs-disabled", "--workspace", "ws-disabled")
		cmd.Dir, cmd.Env = dir, env
		out, _ := cmd.CombinedOutput()
		code := cmd.ProcessState.ExitCode()
		if code != exitConfig {
			t.Errorf("%s with user namespaces disabled: exit %d, want %d:\n%s", filepath.Base(policyFile), code, exitConfig, out)
		}
		for _, want := range []string{"no isolating sandbox", "start containerd", "enable unprivileged user namespaces", "--sandbox local"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("%s with user namespaces disabled: the error lacks %q:\n%s", filepath.Base(policyFile), want, out)
			}
		}
		if entries, _ := os.ReadDir(filepath.Join(dir, "runs-disabled")); len(entries) != 0 {
			t.Errorf("run folders left: %v", entries)
		}
	}
}

// With containerd reachable (CI starts one), --sandbox containerd runs the
// commands in the container: the run completes and the report says so.
func TestRunInContainerd(t *testing.T) {
	t.Parallel()
	if err := containerd.Available(context.Background(), ""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but containerd is unreachable: %v", err)
		}
		t.Skipf("containerd unreachable: %v", err)
	}
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	for _, f := range []string{"a.txt", "b.txt", "c.txt", "d.txt", "e.txt"} {
		os.WriteFile(filepath.Join(ws, f), []byte(f+"\n"), 0o644)
	}
	script, pol := filepath.Join(dir, "script.yaml"), filepath.Join(dir, "policy.yaml")
	os.WriteFile(script, []byte(ptyScript), 0o644)
	os.WriteFile(pol, []byte(ptyPolicy), 0o644)
	r := trio(t, dir, cleanEnv(envScript+"="+script), "run", "--goal", "x", "--sandbox", "containerd", "--unattended",
		"--workspace", ws, "--policy", pol, "--runs-dir", "runs", "--quiet")
	if r.code != exitOK || !strings.Contains(r.stderr, "sandbox containerd") || strings.Contains(r.stderr, "does not isolate") {
		t.Errorf("exit %d:\n%s", r.code, r.stderr)
	}
}

// trio.yaml's budgets reach the run: a spent budget of Worker turns stops
// it with exit code 2 and names the budget.
func TestBudgetFromConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script, pol := filepath.Join(dir, "script.yaml"), filepath.Join(dir, "policy.yaml")
	os.WriteFile(script, []byte(ptyScript), 0o644)
	os.WriteFile(pol, []byte(ptyPolicy), 0o644)
	os.WriteFile(filepath.Join(dir, "trio.yaml"), []byte("budgets:\n  max_total_turns: 2\npolicy: policy.yaml\nsandbox:\n  kind: local\n"), 0o644)
	r := trio(t, dir, cleanEnv(envScript+"="+script), "run", "--goal", "x", "--unattended", "--quiet")
	if r.code != exitBudget || !strings.Contains(r.stderr, "budget_steps") {
		t.Errorf("exit %d, want 2 with budget_steps:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "run folder: "+filepath.Join(dir, "runs")) {
		t.Errorf("runs_dir default is not ./runs:\n%s", r.stderr)
	}
}

// A policy named by trio.yaml that is not there: the error says the path
// came from the configuration and is relative to its folder.
func TestConfigPolicyPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "conf"), 0o755)
	os.WriteFile(filepath.Join(dir, "conf", "trio.yaml"), []byte("policy: policy.yaml\n"), 0o644)
	script := filepath.Join(dir, "script.yaml")
	os.WriteFile(script, []byte(ptyScript), 0o644)
	r := trio(t, dir, cleanEnv(envScript+"="+script), "run", "--config", "conf/trio.yaml", "--goal", "x")
	if r.code != exitConfig || !strings.Contains(r.stderr, filepath.Join("conf", "policy.yaml")) ||
		!strings.Contains(r.stderr, "the policy key of conf/trio.yaml") {
		t.Errorf("exit %d:\n%s", r.code, r.stderr)
	}
}

// Without --workspace, trio run builds in the policy's workspace, relative
// to the current folder; --workspace wins over it.
func TestRunPolicyWorkspace(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, flag, want string
	}{
		{"policy's", "", "proj"},
		{"flag wins", "other", "other"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pol, script := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "script.yaml")
			os.WriteFile(pol, []byte("workspace: proj\n"+ptyPolicy), 0o644)
			os.WriteFile(script, []byte(ptyScript), 0o644)
			args := []string{"run", "--goal", "x", "--policy", pol, "--sandbox", "local", "--unattended", "--quiet"}
			if tt.flag != "" {
				args = append(args, "--workspace", tt.flag)
			}
			r := trio(t, dir, cleanEnv(envScript+"="+script), args...)
			if r.code != exitOK {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, tt.want, "go.mod")); err != nil {
				t.Errorf("the project is not in %s: %v\n%s", tt.want, err, r.stderr)
			}
			// The policy's workspace is said, even with --quiet; a chosen
			// one needs no note.
			note := "trio: building in " + filepath.Join(dir, "proj") + ", the policy's workspace"
			if strings.Contains(r.stderr, note) != (tt.flag == "") {
				t.Errorf("the note %q: shown %v, want %v\n%s", note, !(tt.flag == ""), tt.flag == "", r.stderr)
			}
		})
	}
}
