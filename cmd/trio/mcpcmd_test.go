package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// trio mcp add, list and remove edit trio.yaml's mcpServers and keep the
// rest of the file with its comments; an edit that would not check, and a
// duplicate name, leave the file as it was (exit 3).
func TestMCPCommandsRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "trio.yaml")
	const orig = "# team settings\nruns_dir: runs # the run folders\n\nmodels:\n  worker: gpt-5-mini # cheap\n"
	if err := os.WriteFile(cfg, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	env := cleanEnv()
	for _, args := range [][]string{
		{"mcp", "add", "-e", "MEMORY_FILE_PATH=${HOME}/mem.json", "mem_ory", "--", "npx", "-y", "@modelcontextprotocol/server-memory"},
		{"mcp", "add", "--transport", "http", "docs-api", "https://docs.example.com/mcp", "-H", "Authorization: Bearer ${DOCS_TOKEN}"},
	} {
		if r := trio(t, dir, env, args...); r.code != exitOK {
			t.Fatalf("%v: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	b, _ := os.ReadFile(cfg)
	text := string(b)
	for _, want := range []string{"# team settings", "# the run folders", "worker: gpt-5-mini # cheap", "mcpServers:", "mem_ory:", "command: npx",
		"MEMORY_FILE_PATH: ${HOME}/mem.json", "type: http", "Authorization: Bearer ${DOCS_TOKEN}"} {
		if !strings.Contains(text, want) {
			t.Errorf("trio.yaml lacks %q:\n%s", want, text)
		}
	}
	if st, _ := os.Stat(cfg); st.Mode().Perm() != 0o600 {
		t.Errorf("trio.yaml's mode became %v", st.Mode().Perm())
	}
	r := trio(t, dir, env, "mcp", "list")
	if r.code != exitOK || !strings.Contains(r.stdout, "docs-api  http   https://docs.example.com/mcp  headers: Authorization") ||
		!strings.Contains(r.stdout, "npx -y @modelcontextprotocol/server-memory  (in the sandbox)") || strings.Contains(r.stdout, "DOCS_TOKEN") {
		t.Errorf("trio mcp list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "add", "mem_ory", "--", "other"}, "declared already (mcpServers.mem_ory)"},
		{[]string{"mcp", "add", "-t", "http", "web", "ftp://x"}, "mcpServers.web.url: want an http:// or https:// URL"},
		{[]string{"mcp", "add", "a__b", "--", "x"}, "mcpServers.a__b: a server name"},
		{[]string{"mcp", "add", "-t", "websocket", "w", "ws://x"}, `--transport "websocket"`},
		{[]string{"mcp", "remove", "nope"}, "no MCP server nope; declared: docs-api, mem_ory"},
	} {
		r := trio(t, dir, env, bad.args...)
		if r.code != exitConfig || !strings.Contains(r.stderr, bad.want) {
			t.Errorf("%v: exit %d, want 3 and %q\n%s", bad.args, r.code, bad.want, r.stderr)
		}
		if now, _ := os.ReadFile(cfg); string(now) != text {
			t.Errorf("%v changed trio.yaml:\n%s", bad.args, now)
		}
	}

	for _, name := range []string{"mem_ory", "docs-api"} {
		if r := trio(t, dir, env, "mcp", "remove", name); r.code != exitOK {
			t.Fatalf("remove %s: exit %d\n%s", name, r.code, r.stderr)
		}
	}
	if b, _ := os.ReadFile(cfg); string(b) != strings.Replace(orig, "\n\nmodels", "\nmodels", 1) && string(b) != orig {
		t.Errorf("after removing both servers trio.yaml is\n%s\nwant\n%s", b, orig)
	}
	if r := trio(t, dir, env, "mcp", "list"); r.code != exitOK || !strings.Contains(r.stdout, "no MCP servers") {
		t.Errorf("trio mcp list of none: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// docsServer is a streamable HTTP MCP server made with the go-sdk whose
// tools carry what real servers emit: a dotted name and a Pydantic-style
// schema ($defs, $ref, a union, $schema). Each answers with the name it
// was called by and its arguments.
func docsServer(t *testing.T, auth string) *httptest.Server {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "v1"}, nil)
	answer := func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "docs " + req.Params.Name + " " + string(req.Params.Arguments)}}}, nil
	}
	s.AddTool(&mcp.Tool{Name: "files.read", Description: "Read a file.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"the file"}},"required":["path"]}`)}, answer)
	s.AddTool(&mcp.Tool{Name: "create_item", Description: "Create an item.", InputSchema: json.RawMessage(`{
		"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
		"$defs": {"Item": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
		"properties": {"item": {"$ref": "#/$defs/Item"}, "mode": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "how"}},
		"required": ["item"]}`)}, answer)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != auth {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// An mcpServers block as Claude Code's .mcp.json has it (JSON, env values
// with ${VAR:-default}, type http with a header from ${VAR}, names with _
// and -), pasted into trio.yaml and imported from a .mcp.json file:
// trio tools lists both servers' tools (the HTTP one's dotted tool under
// a function name, its union readable, no $ref or $schema in the JSON the
// model gets), and a run calls the dotted tool and the $ref tool.
func TestPastedMCPServers(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv := docsServer(t, "Bearer tok-5e1f")
	dir := t.TempDir()
	block := `{"mcpServers": {
  "box_stdio": {"command": "` + self + `", "args": [], "env": {"` + envTestMCPServer + `": "${BOX_FLAG:-1}"}},
  "docs-http": {"type": "http", "url": "` + srv.URL + `", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}
}}`
	script := strings.Replace(extScript, "        - {name: run_command, arguments: {command: \"go vet ./...\"}}\n        - {name: mcp__docs__echo, arguments: {text: hi}}\n",
		"        - {name: mcp__docs-http__files_read, arguments: {path: a.txt}}\n        - {name: mcp__docs-http__create_item, arguments: {item: {name: widget}, mode: null}}\n        - {name: mcp__box_stdio__echo, arguments: {text: hi}}\n", 1)
	files := map[string]string{
		"script.yaml": script,
		"policy.yaml": "version: 1\nmode: unattended\ntools:\n  allow: [\"mcp__*\"]\ncommands:\n  allow: [\"go test *\", \"" + self + "\"]\n  read_only_dirs: [" + filepath.Dir(self) + "]\n",
		// Pasted as it is: JSON is YAML.
		"trio.yaml":     "policy: policy.yaml\nruns_dir: runs\n" + strings.TrimSuffix(strings.TrimPrefix(block, "{"), "}") + "\n",
		".mcp.json":     block,
		"imported.yaml": "policy: policy.yaml\nruns_dir: runs\nmcp_json: .mcp.json\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := cleanEnv(envScript+"="+filepath.Join(dir, "script.yaml"), "DOCS_TOKEN=tok-5e1f")
	for _, cfg := range []string{"trio.yaml", "imported.yaml"} {
		r := trio(t, dir, env, "tools", "--sandbox", "local", "--config", filepath.Join(dir, cfg))
		for _, want := range []string{"mcp__box_stdio__echo", "mcp__docs-http__files_read\n",
			"mcp__docs-http__create_item", "mode (string | null): how", "item (object, required)"} {
			if r.code != exitOK || !strings.Contains(r.stdout, want) {
				t.Errorf("%s: trio tools: exit %d, want %q in\n%s%s", cfg, r.code, want, r.stdout, r.stderr)
			}
		}
		r = trio(t, dir, env, "tools", "--json", "--sandbox", "local", "--config", filepath.Join(dir, cfg))
		if r.code != exitOK || strings.Contains(r.stdout, "$ref") || strings.Contains(r.stdout, "$schema") || strings.Contains(r.stdout, "$defs") {
			t.Errorf("%s: trio tools --json: exit %d, want no $ref, $defs or $schema in\n%s%s", cfg, r.code, r.stdout, r.stderr)
		}
	}
	// Without the variable the header names, nothing starts: exit 3,
	// naming the key.
	r := trio(t, dir, cleanEnv(), "tools", "--sandbox", "local", "--config", filepath.Join(dir, "imported.yaml"))
	if r.code != exitConfig || !strings.Contains(r.stderr, ".mcp.json: mcpServers.docs-http.headers.Authorization: $DOCS_TOKEN is not set") {
		t.Errorf("unset DOCS_TOKEN: exit %d\n%s", r.code, r.stderr)
	}

	r = trio(t, dir, env, "run", "--goal", "x", "--config", filepath.Join(dir, "trio.yaml"), "--workspace", filepath.Join(dir, "ws"), "--sandbox", "local", "--unattended")
	if r.code != exitOK {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	traces, _ := filepath.Glob(filepath.Join(dir, "runs", "*", "trace.jsonl"))
	if len(traces) != 1 {
		t.Fatalf("traces %v", traces)
	}
	trace, _ := os.ReadFile(traces[0])
	for _, want := range []string{`docs files.read {\"path\":\"a.txt\"}`, `docs create_item {\"item\":{\"name\":\"widget\"},\"mode\":null}`, "box says hi"} {
		if !strings.Contains(string(trace), want) {
			t.Errorf("the trace lacks the server's answer %s", want)
		}
	}
	if strings.Contains(string(trace), "tok-5e1f") {
		t.Error("the trace holds the header's value")
	}
	audit, _ := os.ReadFile(filepath.Join(filepath.Dir(traces[0]), "audit.jsonl"))
	if !strings.Contains(string(audit), `"tool":"mcp__docs-http","decision":{"verdict":"allow"`) || !strings.Contains(string(audit), srv.URL+" from the host") {
		t.Errorf("the audit lacks the connection to the HTTP server, with its host:\n%s", audit)
	}

	// A policy whose tools rules refuse the server: the run stops before
	// it starts, exit 3, naming the key.
	deny := strings.Replace(files["policy.yaml"], "tools:\n", "tools:\n  deny: [\"mcp__docs-http\"]\n", 1)
	os.WriteFile(filepath.Join(dir, "deny.yaml"), []byte(deny), 0o644)
	os.WriteFile(filepath.Join(dir, "deny-trio.yaml"), []byte(strings.Replace(files["trio.yaml"], "policy.yaml", "deny.yaml", 1)), 0o644)
	r = trio(t, dir, env, "run", "--goal", "x", "--config", filepath.Join(dir, "deny-trio.yaml"), "--workspace", filepath.Join(dir, "ws2"), "--sandbox", "local", "--unattended")
	if r.code != exitConfig || !strings.Contains(r.stderr, "deny-trio.yaml: mcpServers.docs-http") || !strings.Contains(r.stderr, "not connected: the policy denies mcp__docs-http") {
		t.Errorf("a denied HTTP server: exit %d\n%s", r.code, r.stderr)
	}
}
