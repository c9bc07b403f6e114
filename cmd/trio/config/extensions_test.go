package config

import (
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
		{"host for a url", "mcp:\n  servers:\n    s:\n      url: https://x/mcp\n      host: true\n", "trio.yaml:4: mcp.servers.s: args, env_vars and host are for stdio servers"},
		{"header value inline", "mcp:\n  servers:\n    s:\n      url: https://x/mcp\n      env_headers:\n        Authorization: Bearer abc\n", "never put the value itself here"},
		{"bad role", "mcp:\n  servers:\n    s:\n      url: https://x/mcp\n      roles: [planner]\n", "trio.yaml:5: mcp.servers.s.roles"},
		{"bad name", "mcp:\n  servers:\n    a_b:\n      url: https://x/mcp\n", "trio.yaml:4: mcp.servers.a_b"},
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
