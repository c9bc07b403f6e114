package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestExtensionsErrorsNameTheLine(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, yaml, want string }{
		{"bad matcher", "hooks:\n  PreToolUse:\n    - matcher: \"(\"\n      hooks: [{command: x}]\n", "trio.yaml:3: hooks.PreToolUse[0].matcher"},
		{"no command", "hooks:\n  PreToolUse:\n    - matcher: run_command\n      hooks:\n        - type: command\n", "hooks.PreToolUse[0].hooks[0].command"},
		{"bad type", "hooks:\n  Stop:\n    - hooks:\n        - type: prompt\n          command: x\n", "trio.yaml:4: hooks.Stop[0].hooks[0].type"},
		{"bad timeout", "hooks:\n  PostToolUse:\n    - hooks:\n        - command: x\n          timeout: soon\n", "trio.yaml:5: hooks.PostToolUse[0].hooks[0].timeout"},
		{"unknown event", "hooks:\n  BeforeAll: []\n", "trio.yaml:2"},
		{"both kinds", "mcp:\n  servers:\n    s:\n      command: x\n      url: http://127.0.0.1/\n", "trio.yaml:4: mcp.servers.s: set command"},
		{"host for a url", "mcp:\n  servers:\n    s:\n      url: https://x/mcp\n      host: true\n", "trio.yaml:4: mcp.servers.s: args, env, env_vars and host are for stdio servers"},
		{"header value inline", "mcp:\n  servers:\n    s:\n      url: https://x/mcp\n      env_headers:\n        Authorization: Bearer abc\n", "never put the value itself here"},
		{"bad role", "mcp:\n  servers:\n    s:\n      url: https://x/mcp\n      roles: [planner]\n", "trio.yaml:5: mcp.servers.s.roles"},
		{"bad name", "mcp:\n  servers:\n    a__b:\n      url: https://x/mcp\n", "trio.yaml:4: mcp.servers.a__b"},
		{"bad url", "mcp:\n  servers:\n    s:\n      url: ftp://x\n", "trio.yaml:4: mcp.servers.s.url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("trio.yaml", []byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestExtensionsParse(t *testing.T) {
	t.Parallel()
	f, err := Parse("trio.yaml", []byte(`
hooks:
  PreToolUse:
    - matcher: run_command
      hooks:
        - type: command
          command: ./guard.sh
          timeout: 5
        - command: ./log.sh
          timeout: 1500ms
mcp:
  servers:
    docs:
      url: http://127.0.0.1:9/mcp
      env_headers: {Authorization: DOCS_TOKEN}
      roles: [worker, critic]
      timeout: 5s
    fs:
      command: srv
      args: [--root, .]
      env_vars: [HOME]
      host: true
    box:
      command: srv
      args: [--stdio]
`))
	if err != nil {
		t.Fatal(err)
	}
	hs := f.Hooks.PreToolUse[0].Hooks
	if hs[0].Timeout.Duration != 5*time.Second || hs[1].Timeout.Duration != 1500*time.Millisecond {
		t.Errorf("timeouts %v %v", hs[0].Timeout, hs[1].Timeout)
	}
	if d := f.MCP.Servers["docs"]; d.Timeout.Duration != 5*time.Second || d.EnvHeaders["Authorization"] != "DOCS_TOKEN" {
		t.Errorf("docs server %+v", d)
	}
	if b := f.MCP.Servers["box"]; b.Host || b.Command != "srv" {
		t.Errorf("a stdio server without host: %+v, want one that runs in the sandbox", b)
	}
	if got := f.MCP.ServerNames(); len(got) != 3 || got[0] != "box" {
		t.Errorf("servers %v", got)
	}
}

// A Claude Code / Claude Desktop / Cursor mcpServers block pastes
// unchanged (type, command, args, env with values, url, headers, names
// with _ and -), in trio.yaml and imported from a .mcp.json file; a
// server trio.yaml declares replaces an imported one of its name.
func TestMCPServersPasted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".mcp.json"), `{
  "mcpServers": {
    "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {"MEMORY_FILE_PATH": "${HOME}/mem.json"}},
    "docs_api": {"type": "http", "url": "${DOCS_URL:-http://127.0.0.1:9/mcp}", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}},
    "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"}
  }
}`)
	writeFile(t, filepath.Join(dir, "trio.yaml"), `
mcp_json: .mcp.json
mcpServers:
  file-system:
    type: stdio
    command: npx
    args: ["-y", "@modelcontextprotocol/server-filesystem", "."]
    env: {DEBUG: "1"}
  memory:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-memory"]
    host: true
    startup_timeout: 3m
`)
	f, err := Load(filepath.Join(dir, "trio.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.MCP.ServerNames(), ","); got != "docs_api,file-system,legacy,memory" {
		t.Fatalf("servers %s", got)
	}
	s := f.MCP.Servers
	if fs := s["file-system"]; fs.Type != MCPStdio || fs.Env["DEBUG"] != "1" || fs.Key != "mcpServers.file-system" {
		t.Errorf("file-system %+v", fs)
	}
	if m := s["memory"]; !m.Host || m.StartupTimeout.Duration != 3*time.Minute || len(m.Env) != 0 {
		t.Errorf("memory %+v, want trio.yaml's declaration, which replaces the imported one", m)
	}
	if l := s["legacy"]; !l.SSE() {
		t.Errorf("legacy %+v, want sse", l)
	}
	d := s["docs_api"]
	if d.Type != MCPHTTP || !strings.HasSuffix(d.Key, ".mcp.json: mcpServers.docs_api") {
		t.Errorf("docs_api %+v", d)
	}
	env := map[string]string{"DOCS_TOKEN": "t0k3n"}
	x, err := d.Expanded(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil || x.URL != "http://127.0.0.1:9/mcp" || x.Headers["Authorization"] != "Bearer t0k3n" {
		t.Errorf("expanded %+v %v", x, err)
	}
	_, err = d.Expanded(func(string) (string, bool) { return "", false })
	if err == nil || !strings.Contains(err.Error(), "mcpServers.docs_api.headers.Authorization: $DOCS_TOKEN is not set") {
		t.Errorf("unset variable: %v", err)
	}
}

func TestMCPServersErrorsNameTheLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "bad.json"), "{\n  \"mcpServers\": {\n    \"x\": {\"command\": \"srv\", \"disabled\": true},\n    \"y__z\": {\"url\": \"http://h/\"}\n  }\n}\n")
	tests := []struct{ name, yaml, want string }{
		{"bad type", "mcpServers:\n  s:\n    type: websocket\n    url: http://h/\n", "trio.yaml:3: mcpServers.s.type: want stdio, http"},
		{"stdio without command", "mcpServers:\n  s:\n    type: stdio\n    url: http://h/\n", "trio.yaml:3: mcpServers.s.type: type stdio wants command"},
		{"bad expansion", "mcpServers:\n  s:\n    command: srv\n    env: {A: \"${A\"}\n", "mcpServers.s.env.A"},
		{"double underscore", "mcpServers:\n  a__b:\n    command: srv\n", "trio.yaml:3: mcpServers.a__b: a server name"},
		{"both sections", "mcpServers:\n  s:\n    command: srv\nmcp:\n  servers:\n    s:\n      command: srv\n", "declared in mcp.servers too"},
		{"missing file", "mcp_json: nope.json\n", "mcp_json: want a .mcp.json file"},
		{"unknown key in the file", "mcp_json: bad.json\n", "bad.json:3"},
		{"bad name in the file", "mcp_json: bad.json\n", "bad.json:4: mcpServers.y__z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(filepath.Join(dir, "trio.yaml"), []byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	t.Parallel()
	env := map[string]string{"A": "1", "E": ""}
	look := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for in, want := range map[string]string{
		"${A}":        "1",
		"x${A}y${A}":  "x1y1",
		"${B:-two}":   "two",
		"${E:-dflt}":  "dflt",
		"${E}":        "",
		"$A and $$":   "$A and $$",
		"${B:-a:-b}":  "a:-b",
		"no refs":     "no refs",
		"${A}${B:-}z": "1z",
	} {
		if got, err := Expand(in, look); err != nil || got != want {
			t.Errorf("Expand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"${B}", "${A", "${1X}", "${}"} {
		if _, err := Expand(in, look); err == nil {
			t.Errorf("Expand(%q): no error", in)
		}
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
