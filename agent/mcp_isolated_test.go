package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/tools"
)

// End to end in each isolating kind: a stdio MCP server declared without
// host starts inside the run's sandbox once the policy allows its command
// line; the Worker calls its tools through the gate; the server reads a
// workspace file but not a secret beside the workspace on the host; the
// run completes.
func TestRunMCPServerIsolated(t *testing.T) {
	t.Parallel()
	eachIsolatedKind(t, func(t *testing.T, kind string) {
		e := newEnv(t)
		secret := filepath.Join(filepath.Dir(e.ws), "secret.txt")
		if err := os.WriteFile(secret, []byte("hunter2-agent-mcp"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.ws, "notes.txt"), []byte("ticket T-1: Add must add"), 0o644); err != nil {
			t.Fatal(err)
		}
		sandboxtest.BuildMCPServer(t, filepath.Join(e.ws, "mcpserver"))
		p, err := policy.Parse("p.yaml", []byte("version: 1\nmode: unattended\ntools:\n  allow: [\"mcp__srv__*\"]\ncommands:\n  allow: [\"go test *\", \"./mcpserver\"]\n"))
		if err != nil {
			t.Fatal(err)
		}
		plan := text(mustJSON(map[string]any{
			"steps": []map[string]any{{
				"title": "calc package", "description": "Write go.mod and calc.go with Add.",
				"files": []string{"go.mod", "calc.go", "mcpserver", "notes.txt"}, "expected": "calc.Add adds", "acceptance": "go test passes",
			}},
			"risks": []string{}, "test_command": "go test ./...", "cli": []string{}, "tests_dir": "acceptance",
		}))
		m := newFake().add(agent.RolePlanner, plan).add(agent.RoleTestDesigner, calcSuite()).
			add(agent.RoleWorker, calls("",
				call{"mcp__srv__read", map[string]string{"path": "notes.txt"}},
				call{"mcp__srv__read", map[string]string{"path": secret}},
				write("go.mod", goMod), write("calc.go", calcGood), finish("done")))
		srv := tools.MCPServer{Name: "srv", Command: []string{"./mcpserver"}}
		rep := run(t, m, nil, e.folderOpts(agent.WithSandboxConfig(agent.SandboxConfig{Kind: kind}), agent.WithPolicy(p),
			agent.WithRunID("mcp-"+kind), agent.WithMCPServers([]string{agent.RoleWorker}, srv))...)
		if rep.Reason != agent.StopCompleted {
			t.Fatalf("%s (%s)", rep.Reason, rep.Detail)
		}
		trace := readFile(t, filepath.Join(e.runs, "mcp-"+kind, "trace.jsonl"))
		var got []string
		for _, line := range strings.Split(trace, "\n") {
			if strings.Contains(line, `"kind":"tool_call"`) && strings.Contains(line, `"tool":"mcp__srv__read"`) {
				got = append(got, line)
			}
		}
		if len(got) != 2 || !strings.Contains(got[0], "ticket T-1: Add must add") {
			t.Fatalf("the Worker's reads of the MCP server: %q", got)
		}
		if strings.Contains(got[1], "hunter2") || !strings.Contains(got[1], "no such file") {
			t.Fatalf("the MCP server in the %s sandbox read a host file beside the workspace (or failed otherwise): %q", kind, got[1])
		}
		audit := readFile(t, filepath.Join(e.runs, "mcp-"+kind, agent.AuditFile))
		if !strings.Contains(audit, `"tool":"mcp__srv"`) || !strings.Contains(audit, `"tool":"mcp__srv__read"`) {
			t.Errorf("the audit lacks the server's start or its calls:\n%s", audit)
		}
		if strings.Contains(audit, "hunter2") {
			t.Error("the secret is in the audit")
		}
	})
}
