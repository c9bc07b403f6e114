package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/tools"
)

// exampleScript drives the examples: a one-step plan, one acceptance test,
// and a Worker that asks the custom tool, writes the module and finishes.
const exampleScript = `
roles:
  planner:
    - output:
        steps:
          - {title: Greeting, description: Write module hello with Greeting() returning the ticket's text., files: [go.mod, hello.go], expected: Greeting works, acceptance: go test passes}
        risks: []
        test_command: go test ./...
        cli: []
        tests_dir: acceptance
  test_designer:
    - output:
        notes: One check of Greeting.
        files:
          - path: acceptance/hello_test.go
            content: "package acceptance\n\nimport (\n\t\"testing\"\n\n\t\"hello\"\n)\n\nfunc TestGreeting(t *testing.T) {\n\tif hello.Greeting() != \"hi\" {\n\t\tt.Fail()\n\t}\n}\n"
  worker:
    - tool_calls:
        - {name: lookup_ticket, arguments: {id: TRIO-1}}
    - tool_calls:
        - {name: write_file, arguments: {path: go.mod, content: "module hello\n\ngo 1.22\n"}}
        - {name: write_file, arguments: {path: hello.go, content: "// Package hello greets.\npackage hello\n\n// Greeting is what ticket TRIO-1 asks for.\nfunc Greeting() string { return \"hi\" }\n"}}
        - {name: finish_step, arguments: {note: hello.Greeting returns hi}}
`

// TicketArgs are the arguments of an embedder's own tool.
type TicketArgs struct {
	// The lookup reads the embedder's own map: nothing for the policy.
	tools.NoEffects
	ID string `json:"id" jsonschema:"description=Ticket id such as TRIO-1."`
}

func lookupTicket(_ context.Context, a TicketArgs) (tools.Result, error) {
	if a.ID != "TRIO-1" {
		return tools.Result{OK: false, Output: "id: no such ticket"}, nil
	}
	return tools.Result{OK: true, Output: `Greeting() must return "hi".`}, nil
}

func ExampleNew() {
	dir, _ := os.MkdirTemp("", "trio-example-")
	defer os.RemoveAll(dir)

	model, err := llm.ParseScript("example", []byte(exampleScript))
	if err != nil {
		fmt.Println(err)
		return
	}
	reg, err := tools.NewRegistry(tools.New[TicketArgs]("lookup_ticket", "Look up a ticket by id.", lookupTicket))
	if err != nil {
		fmt.Println(err)
		return
	}
	a, err := agent.New(model, reg,
		agent.WithWorkspace(filepath.Join(dir, "ws")),
		agent.WithRunsDir(filepath.Join(dir, "runs")),
		// Only the Worker gets the custom tool.
		agent.WithRoleTools(agent.RoleWorker, tools.ReadFileName, tools.WriteFileName, tools.EditFileName, tools.RunTestsName, "lookup_ticket"),
		agent.WithBudgets(agent.Budgets{MaxTotalTurns: 20, MaxRepairRounds: 2}),
		agent.WithObserver(func(e agent.Event) {}),
	)
	fmt.Println(a != nil, err)
	// Output: true <nil>
}

func ExampleAgent_Run() {
	dir, _ := os.MkdirTemp("", "trio-example-")
	defer os.RemoveAll(dir)

	model, _ := llm.ParseScript("example", []byte(exampleScript))
	reg, _ := tools.NewRegistry(tools.New[TicketArgs]("lookup_ticket", "Look up a ticket by id.", lookupTicket))
	a, err := agent.New(model, reg,
		agent.WithWorkspace(filepath.Join(dir, "ws")),
		agent.WithRunsDir(filepath.Join(dir, "runs")),
		agent.WithObserver(func(e agent.Event) {
			switch e.Kind {
			case agent.EventToolCall:
				fmt.Println("tool", e.Tool, e.Decision)
			case agent.EventCriticVerdict:
				fmt.Println("verdict", e.Verdict)
			}
		}),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, err := a.Run(context.Background(), "Do what ticket TRIO-1 asks in Go module hello.")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rep.Status, rep.Metrics.FirstPass, rep.Metrics.ModelCalls)
	// Output:
	// tool lookup_ticket allow
	// tool write_file allow
	// tool write_file allow
	// tool finish_step allow
	// tool run_tests allow
	// verdict pass
	// completed true 4
}
