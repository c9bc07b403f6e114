package agent_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/tools"
)

type lookupIn struct {
	ID string `json:"id"`
}

// loopbackMCP serves an MCP server built with the go-sdk over streamable
// HTTP on loopback and returns the connection to it.
func loopbackMCP(t *testing.T) *tools.MCPConn {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "tickets", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "Look a ticket up."}, func(_ context.Context, _ *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ticket " + in.ID + ": Add must add"}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	c, err := tools.ConnectMCP(context.Background(), tools.MCPServer{Name: "tickets", URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// End to end: the Worker calls an MCP tool given to it with
// WithToolsFor; the audit shows the gate's decision; the Critic, not
// named, is not offered it; an unattended policy that does not name the
// tool denies it.
func TestRunMCPTool(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, policy string
		ok           bool
		rule         string
	}{
		{"allowed", "version: 1\nmode: unattended\ntools:\n  allow: [\"mcp__tickets__*\"]\ncommands:\n  allow: [\"go test *\"]\n", true, "mcp__tickets__*"},
		{"unnamed is denied unattended", "version: 1\nmode: unattended\ncommands:\n  allow: [\"go test *\"]\n", false, tools.RuleUnnamedOpaqueTool},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			c := loopbackMCP(t)
			p, err := policy.Parse("p.yaml", []byte(tt.policy))
			if err != nil {
				t.Fatal(err)
			}
			m := buggyThenFixed()
			m.replies[agent.RoleWorker][0] = calls("", call{"mcp__tickets__lookup", map[string]string{"id": "T-1"}},
				write("go.mod", goMod), write("calc.go", calcBuggy), finish("calc written"))
			rep := run(t, m, nil, e.opts(agent.WithPolicy(p), agent.WithToolsFor([]string{agent.RoleWorker}, c.Tools()...))...)
			if rep.Reason != agent.StopCompleted {
				t.Fatalf("reason %s (%s)", rep.Reason, rep.Detail)
			}
			var got string
			wreqs := m.requestsOf(agent.RoleWorker)
			offered := false
			for _, tl := range wreqs[0].Tools {
				offered = offered || strings.Contains(mustJSON(tl), "mcp__tickets__lookup")
			}
			if !offered {
				t.Error("the Worker was not offered the MCP tool")
			}
			for _, req := range wreqs {
				for _, msg := range req.Messages {
					if msg.Role == llm.RoleTool && msg.Name == "mcp__tickets__lookup" {
						got = msg.Content
					}
				}
			}
			if tt.ok != strings.Contains(got, "ticket T-1: Add must add") || tt.ok == strings.Contains(got, `"denied":true`) {
				t.Errorf("the Worker read %q (want ok=%v)", got, tt.ok)
			}
			audit := readFile(t, filepath.Join(e.runs, "run", agent.AuditFile))
			if !strings.Contains(audit, `"tool":"mcp__tickets__lookup"`) || !strings.Contains(audit, tt.rule) {
				t.Errorf("audit lacks the MCP call with rule %q:\n%s", tt.rule, audit)
			}
			for _, req := range m.requestsOf(agent.RoleCritic) {
				for _, tl := range req.Tools {
					if strings.Contains(mustJSON(tl), "mcp__") {
						t.Error("the Critic was offered an MCP tool given to the Worker only")
					}
				}
			}
		})
	}
}
