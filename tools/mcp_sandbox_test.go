package tools_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/tools"
)

// sandboxServer is the test binary as an MCP server started in a local
// sandbox, and the policy text that allows or asks for its command line.
func sandboxServer(t *testing.T) (tools.MCPServer, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	l, err := sandbox.NewLocal(t.TempDir(), sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	s := tools.MCPServer{Name: "test", Command: []string{self}, Env: []string{envMCPServer + "=1"}, Sandbox: l, CallTimeout: 20 * time.Second}
	return s, "  read_only_dirs: [" + filepath.Dir(self) + "]\n"
}

// A stdio server started through the gate runs in the sandbox: the
// policy's command rules judge its command line (allow connects, deny
// and an unattended ask are errors naming the rule, an interactive ask
// is put to the person), every start is one Record, and a server that
// crashes mid-run gives tool errors that say how it ended.
func TestMCPInSandbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tt := range []struct {
		name, rules string
		answer      policy.Answer
		started     bool
		rule        string
	}{
		{"allowed", "  allow: [\"%s\"]\n", 0, true, "commands.allow"},
		{"denied", "  allow: [\"%s\"]\n  deny: [\"%s\"]\n", 0, false, "commands.deny"},
		{"unlisted", "", 0, false, "default-deny"},
		{"ask unattended", "  ask: [\"%s\"]\n", 0, false, "commands.ask"},
		{"ask, yes", "  ask: [\"%s\"]\n", policy.AnswerYes, true, "commands.ask"},
		{"ask, no", "  ask: [\"%s\"]\n", policy.AnswerNo, false, "commands.ask"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, dirs := sandboxServer(t)
			mode := "unattended"
			var opts []tools.GateOption
			conf := &confirmer{answer: tt.answer}
			if tt.answer != 0 {
				mode = "interactive"
				opts = append(opts, tools.WithConfirmer(conf))
			}
			rules := strings.ReplaceAll(tt.rules, "%s", s.Command[0])
			p := parsePolicy(t, "version: 1\nmode: "+mode+"\ntools:\n  allow: [\"mcp__test__*\"]\ncommands:\n"+rules+dirs)
			rec := &recorder{}
			g := tools.NewGate(p, append(opts, tools.WithObserver(rec))...)
			c, err := g.ConnectMCP(ctx, s)
			if tt.started != (err == nil) {
				t.Fatalf("started=%v, error %v", tt.started, err)
			}
			recs := rec.take()
			if len(recs) != 1 || recs[0].Tool != "mcp__test" || !strings.Contains(recs[0].Decision.Rule, tt.rule) ||
				(recs[0].Outcome == tools.OutcomeDenied) == tt.started {
				t.Fatalf("records %+v, want one for mcp__test with rule %s", recs, tt.rule)
			}
			if tt.answer != 0 && (conf.calls.Load() != 1 || !strings.Contains(conf.last.Command, s.Command[0])) {
				t.Errorf("asked %d times (%+v), want once with the command line", conf.calls.Load(), conf.last)
			}
			if !tt.started {
				if !strings.Contains(err.Error(), "mcp: server test: not started") || !strings.Contains(err.Error(), tt.rule) {
					t.Errorf("error %q names neither the server nor the rule %s", err, tt.rule)
				}
				return
			}
			defer c.Close()
			v := mcpView(t, c)
			res, err := g.Call(ctx, v, call("mcp__test__echo", `{"text":"boxed"}`))
			if err != nil || !res.OK || !strings.HasPrefix(res.Output, "echo: boxed") {
				t.Fatalf("echo: %v %+v", err, res)
			}
			if tt.answer != 0 {
				return
			}
			for i, cl := range []tools.Call{call("mcp__test__crash", `{}`), call("mcp__test__echo", `{"text":"again"}`)} {
				res, err := g.Call(ctx, v, cl)
				if err != nil || res.OK || !strings.Contains(res.Output, "MCP server test") {
					t.Errorf("call %d (%s) to a crashed server: %v %+v", i, cl.Name, err, res)
				}
				if i == 0 && !strings.Contains(res.Output, "exited with code 3") {
					t.Errorf("the crash's tool error does not say how the server ended: %s", res.Output)
				}
			}
			if err := c.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
}

// A server that cannot start in the sandbox, or exits at once, is a
// start-up error that names it and carries the end of its stderr.
func TestMCPInSandboxStartFailures(t *testing.T) {
	t.Parallel()
	l, err := sandbox.NewLocal(t.TempDir(), sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tt := range []struct {
		argv []string
		want string
	}{
		{[]string{"no-such-mcp-server-trio"}, "no-such-mcp-server-trio"},
		{[]string{"sh", "-c", "echo boom-in-the-box >&2; exit 4"}, "boom-in-the-box"},
	} {
		_, err := tools.ConnectMCP(context.Background(), tools.MCPServer{Name: "gone", Command: tt.argv, Sandbox: l, StartTimeout: 10 * time.Second})
		if err == nil || !strings.Contains(err.Error(), "mcp: server gone") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want an error naming the server and %q", tt.argv, err, tt.want)
		}
	}
}

// BenchmarkMCPStartInLocalSandbox measures starting a stdio server in the
// local sandbox, initialising the session, listing its tools and
// stopping it; and, separately, one tool call over the sandbox's pipes.
func BenchmarkMCPStartInLocalSandbox(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	l, err := sandbox.NewLocal(b.TempDir(), sandbox.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	s := tools.MCPServer{Name: "test", Command: []string{self}, Env: []string{envMCPServer + "=1"}, Sandbox: l}
	b.Run("start", func(b *testing.B) {
		for b.Loop() {
			c, err := tools.ConnectMCP(context.Background(), s)
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
		}
	})
	b.Run("call", func(b *testing.B) {
		c, err := tools.ConnectMCP(context.Background(), s)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		reg, _ := tools.NewRegistry(c.Tools()...)
		v, _ := reg.View()
		g := tools.NewGate(parsePolicy(b, mcpPolicy))
		for b.Loop() {
			if res, err := g.Call(context.Background(), v, call("mcp__test__echo", `{"text":"x"}`)); err != nil || !res.OK {
				b.Fatal(err, res)
			}
		}
	})
}
