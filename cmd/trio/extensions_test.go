package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const extScript = `roles:
  planner:
    - output: {"steps": [{"title": "Module", "description": "Write go.mod.", "files": ["go.mod"], "expected": "a module", "acceptance": "go test ./... passes"}], "risks": [], "test_command": "go test ./...", "cli": [], "tests_dir": "acceptance"}
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
        - {name: run_command, arguments: {command: "go vet ./..."}}
        - {name: mcp__docs__echo, arguments: {text: hi}}
    - tool_calls: [{name: finish_step, arguments: {note: done}}]
`

type echoArgs struct {
	Text string `json:"text"`
}

// trio run with trio.yaml's hooks and an MCP server over streamable HTTP
// on loopback: the hook blocks go vet, the Worker's MCP call gets the
// server's answer with the header from the environment, and the header's
// value is nowhere in the output or the run folder.
func TestRunWithHooksAndMCP(t *testing.T) {
	t.Parallel()
	const secret = "Bearer canary-7f3a"
	s := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo."}, func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "docs say " + in.Text}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != secret {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()

	dir := t.TempDir()
	files := map[string]string{
		"script.yaml": extScript,
		"policy.yaml": "version: 1\nmode: unattended\ncommands:\n  allow: [\"go test *\", \"go vet *\"]\ntools:\n  allow: [\"mcp__docs__*\"]\n",
		"guard.sh":    "#!/bin/sh\nif grep -q 'go vet'; then echo 'no vet in this project' >&2; exit 2; fi\n",
		"trio.yaml": "policy: policy.yaml\nruns_dir: runs\nhooks:\n  PreToolUse:\n    - matcher: run_command\n      hooks:\n        - {type: command, command: ./guard.sh, timeout: 10}\n" +
			"mcp:\n  servers:\n    docs:\n      url: " + srv.URL + "\n      env_headers: {Authorization: DOCS_AUTH}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r := trio(t, dir, cleanEnv(envScript+"="+filepath.Join(dir, "script.yaml"), "DOCS_AUTH="+secret),
		"run", "--goal", "x", "--config", filepath.Join(dir, "trio.yaml"), "--workspace", filepath.Join(dir, "ws"), "--sandbox", "local", "--unattended")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	audits, _ := filepath.Glob(filepath.Join(dir, "runs", "*", "audit.jsonl"))
	if len(audits) != 1 {
		t.Fatalf("audit files %v", audits)
	}
	audit, _ := os.ReadFile(audits[0])
	for _, want := range []string{`"kind":"hook"`, "no vet in this project", `"tool":"mcp__docs__echo"`, `"outcome":"ok"`} {
		if !strings.Contains(string(audit), want) {
			t.Errorf("audit lacks %q:\n%s", want, audit)
		}
	}
	trace, _ := os.ReadFile(filepath.Join(filepath.Dir(audits[0]), "trace.jsonl"))
	if !strings.Contains(string(trace), "docs say hi") {
		t.Error("the trace has no MCP result")
	}
	filepath.Walk(filepath.Join(dir, "runs"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "canary-7f3a") {
				t.Errorf("%s holds the header's value", p)
			}
		}
		return nil
	})
	if strings.Contains(r.stdout+r.stderr, "canary-7f3a") {
		t.Error("the output holds the header's value")
	}

	// trio tools lists the server's tools with their schemas, for the
	// roles they are given to.
	env := cleanEnv("DOCS_AUTH=" + secret)
	if r := trio(t, dir, env, "tools", "--config", filepath.Join(dir, "trio.yaml")); r.code != exitOK ||
		!strings.Contains(r.stdout, "mcp__docs__echo") || !strings.Contains(r.stdout, "text (string, required)") {
		t.Errorf("trio tools: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := trio(t, dir, env, "tools", "--role", "critic", "--config", filepath.Join(dir, "trio.yaml")); strings.Contains(r.stdout, "mcp__docs") {
		t.Errorf("trio tools --role critic lists a Worker-only MCP tool:\n%s", r.stdout)
	}

	// A server that cannot start, and a header variable that is not set,
	// are configuration errors naming the file and key.
	bad := "mcp:\n  servers:\n    dead:\n      command: /bin/false\n      host: true\n"
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(bad), 0o644)
	r = trio(t, dir, cleanEnv(envScript+"="+filepath.Join(dir, "script.yaml")), "run", "--goal", "x", "--config", filepath.Join(dir, "bad.yaml"), "--sandbox", "local", "--unattended")
	if r.code != exitConfig || !strings.Contains(r.stderr, "bad.yaml: mcp.servers.dead") || !strings.Contains(r.stderr, "outside the sandbox") {
		t.Errorf("dead server: exit %d\n%s", r.code, r.stderr)
	}
	r = trio(t, dir, cleanEnv(envScript+"="+filepath.Join(dir, "script.yaml")), "run", "--goal", "x", "--config", filepath.Join(dir, "trio.yaml"), "--sandbox", "local", "--unattended")
	if r.code != exitConfig || !strings.Contains(r.stderr, "DOCS_AUTH is not set") {
		t.Errorf("unset header variable: exit %d\n%s", r.code, r.stderr)
	}
}

// envTestMCPServer makes the test binary a stdio MCP server (TestMain).
const envTestMCPServer = "TRIO_CLI_TEST_MCP_SERVER"

// serveTestMCP serves one echo tool over stdin and stdout, then exits.
func serveTestMCP() {
	s := mcp.NewServer(&mcp.Implementation{Name: "box", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo."}, func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "box says " + in.Text + " from " + os.Getenv("HOME")}}}, nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// trio run with a stdio MCP server declared without host: it starts in
// the run's (local) sandbox once the policy allows its command line, the
// Worker's call reaches it, and the audit has both decisions; no host
// warning is printed. trio tools --sandbox local lists its tools. A policy
// that does not allow the command stops the run before it starts, exit 3,
// naming the key.
func TestRunWithMCPServerInSandbox(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := strings.Replace(extScript, "        - {name: run_command, arguments: {command: \"go vet ./...\"}}\n        - {name: mcp__docs__echo, arguments: {text: hi}}\n",
		"        - {name: mcp__box__echo, arguments: {text: hi}}\n", 1)
	base := "version: 1\nmode: unattended\ntools:\n  allow: [\"mcp__box__*\"]\ncommands:\n  read_only_dirs: [" + filepath.Dir(self) + "]\n"
	files := map[string]string{
		"script.yaml": script,
		"policy.yaml": base + "  allow: [\"go test *\", \"" + self + "\"]\n",
		"strict.yaml": base + "  allow: [\"go test *\"]\n",
		"trio.yaml":   "policy: policy.yaml\nruns_dir: runs\nmcp:\n  servers:\n    box:\n      command: " + self + "\n      env_vars: [" + envTestMCPServer + "]\n",
	}
	files["strict-trio.yaml"] = strings.Replace(files["trio.yaml"], "policy.yaml", "strict.yaml", 1)
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := cleanEnv(envScript+"="+filepath.Join(dir, "script.yaml"), envTestMCPServer+"=1")
	r := trio(t, dir, env, "run", "--goal", "x", "--config", filepath.Join(dir, "trio.yaml"), "--workspace", filepath.Join(dir, "ws"), "--sandbox", "local", "--unattended")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "outside the sandbox") {
		t.Errorf("a server without host: true was warned about as a host server:\n%s", r.stderr)
	}
	audits, _ := filepath.Glob(filepath.Join(dir, "runs", "*", "audit.jsonl"))
	if len(audits) != 1 {
		t.Fatalf("audit files %v", audits)
	}
	audit, _ := os.ReadFile(audits[0])
	for _, want := range []string{`"tool":"mcp__box"`, `commands.allow: \"` + self, `"tool":"mcp__box__echo"`, `"outcome":"ok"`} {
		if !strings.Contains(string(audit), want) {
			t.Errorf("audit lacks %q:\n%s", want, audit)
		}
	}
	trace, _ := os.ReadFile(filepath.Join(filepath.Dir(audits[0]), "trace.jsonl"))
	if !strings.Contains(string(trace), "box says hi from "+os.TempDir()) {
		t.Errorf("the trace has no answer from the server in the sandbox (HOME under %s)", os.TempDir())
	}

	if r := trio(t, dir, env, "tools", "--sandbox", "local", "--config", filepath.Join(dir, "trio.yaml")); r.code != exitOK ||
		!strings.Contains(r.stdout, "mcp__box__echo") || !strings.Contains(r.stdout, "text (string, required)") {
		t.Errorf("trio tools: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := trio(t, dir, env, "tools", "--sandbox", "local", "--config", filepath.Join(dir, "strict-trio.yaml")); r.code != exitConfig ||
		!strings.Contains(r.stderr, "strict-trio.yaml: mcp.servers.box") || !strings.Contains(r.stderr, "default-deny") {
		t.Errorf("trio tools with a policy that denies the server: exit %d\n%s", r.code, r.stderr)
	}

	r = trio(t, dir, env, "run", "--goal", "x", "--config", filepath.Join(dir, "strict-trio.yaml"), "--workspace", filepath.Join(dir, "ws2"), "--sandbox", "local", "--unattended")
	if r.code != exitConfig || !strings.Contains(r.stderr, "strict-trio.yaml: mcp.servers.box") || !strings.Contains(r.stderr, "not started") || !strings.Contains(r.stderr, "default-deny") {
		t.Errorf("denied server: exit %d\n%s", r.code, r.stderr)
	}
}
