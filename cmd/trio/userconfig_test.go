package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/trioagent/trio/llm/llmtest"
)

// envLeakScript is twoFilesScript whose acceptance test fails when the
// sandboxed command sees TRIO_DOTENV_SECRET.
var envLeakScript = strings.Replace(strings.Replace(twoFilesScript, `func TestOK(t *testing.T) {}`, `func TestOK(t *testing.T) {
              	if v, ok := os.LookupEnv("TRIO_DOTENV_SECRET"); ok {
              		t.Fatalf("the sandbox sees the .env variable: %q", v)
              	}
              }`, 1), `import "testing"`, "import (\n              \t\"os\"\n              \t\"testing\"\n              )", 1)

// A .env is read only when asked (--env-file): its variables reach Trio
// (here TRIO_SCRIPT, which picks the model) but not the commands of the
// sandbox, whose acceptance test fails if it sees the .env's secret.
func TestEnvFileStaysOutOfSandbox(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(envLeakScript), 0o644); err != nil {
		t.Fatal(err)
	}
	dotenv := "# keys for trio\nexport TRIO_SCRIPT=" + filepath.Join(dir, "script.yaml") + "\nTRIO_DOTENV_SECRET='s3cret value'\n"
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte(dotenv), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--goal", "Write go.mod and hello.txt.", "--sandbox", "local", "--runs-dir", filepath.Join(dir, "runs"),
		"--workspace", filepath.Join(dir, "ws"), "--unattended"}
	if r := trio(t, dir, nil, args...); r.code != exitConfig || !strings.Contains(r.stderr, "OPENAI_API_KEY") {
		t.Fatalf("without --env-file the .env is not read: exit %d, want 3 (no endpoint)\n%s", r.code, r.stderr)
	}
	r := trio(t, dir, nil, append(args, "--env-file")...)
	if r.code != exitOK {
		t.Fatalf("with --env-file: exit %d\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "s3cret") {
		t.Errorf("the secret was printed:\n%s%s", r.stdout, r.stderr)
	}
	if r := trio(t, dir, nil, append(args, "--env-file=missing.env")...); r.code != exitConfig || !strings.Contains(r.stderr, "missing.env") {
		t.Errorf("a missing --env-file: exit %d\n%s", r.code, r.stderr)
	}
}

// trioStdin runs trio with stdin.
func trioStdin(t *testing.T, dir string, env []string, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, env, strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("trio %v: %v", args, err)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
}

// The user-level trio.yaml ($XDG_CONFIG_HOME/trio) gives what the
// project's leaves out (the endpoint, the default model) and the
// project's wins where both say (the planner's model); --model wins over
// both; --goal-file - reads the goal from standard input. The endpoint
// refuses the key, so each run stops at its first (the Planner's) call.
func TestUserConfigModelFlagGoalStdin(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t)
	for range 8 {
		srv.Enqueue(llmtest.Status(401, "invalid api key"))
	}
	dir := t.TempDir()
	xdg := filepath.Join(dir, "xdg")
	if err := os.MkdirAll(filepath.Join(xdg, "trio"), 0o755); err != nil {
		t.Fatal(err)
	}
	user := "endpoint:\n  base_url: " + srv.URL() + "\nmodels:\n  default: user-model\n  planner: user-planner\n"
	if err := os.WriteFile(filepath.Join(xdg, "trio", "trio.yaml"), []byte(user), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "trio.yaml"), []byte("models:\n  planner: project-planner\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := cleanEnv("XDG_CONFIG_HOME="+xdg, "OPENAI_API_KEY=k")
	n := 0
	run := func(stdin string, extra ...string) result {
		n++
		args := append([]string{"run", "--goal-file", "-", "--sandbox", "local", "--unattended", "--workspace", filepath.Join(dir, "ws"+strconv.Itoa(n))}, extra...)
		return trioStdin(t, dir, env, stdin, args...)
	}
	lastPlanner := func() (string, string) {
		reqs := srv.Requests()
		if len(reqs) == 0 {
			t.Fatal("the endpoint of the user's file got no request")
		}
		r := reqs[len(reqs)-1]
		var text string
		for _, m := range r.Messages {
			text += m.Content
		}
		return r.Model, text
	}

	r := run("Build a frobnicator from standard input.\n")
	model, text := lastPlanner()
	if model != "project-planner" || !strings.Contains(text, "Build a frobnicator from standard input.") {
		t.Errorf("planner asked %q with %.200q; want the project's project-planner and the goal from stdin (exit %d)\n%s", model, text, r.code, r.stderr)
	}

	run("Build it.", "--model", "every-role", "--model", "planner=flag-planner")
	if model, _ := lastPlanner(); model != "flag-planner" {
		t.Errorf("with --model planner=flag-planner the planner asked %q", model)
	}
	run("Build it.", "--model", "planner=x", "--model", "every-role")
	if model, _ := lastPlanner(); model != "every-role" {
		t.Errorf("with a later --model every-role the planner asked %q", model)
	}

	if r := run(""); r.code != exitConfig || !strings.Contains(r.stderr, "--goal-file - is empty") {
		t.Errorf("an empty stdin: exit %d\n%s", r.code, r.stderr)
	}
	if r := run("x", "--model", "chef=x"); r.code != exitConfig || !strings.Contains(r.stderr, "--model chef=x") {
		t.Errorf("--model chef=x: exit %d\n%s", r.code, r.stderr)
	}
	if err := os.WriteFile(filepath.Join(xdg, "trio", "trio.yaml"), []byte("models:\n  planer: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := run("x"); r.code != exitConfig || !strings.Contains(r.stderr, filepath.Join(xdg, "trio", "trio.yaml")+":2") {
		t.Errorf("a broken user file: exit %d, want 3 naming the file and line\n%s", r.code, r.stderr)
	}
}
