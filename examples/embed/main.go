// Command embed shows Trio as a library: it registers a custom typed tool
// (lookup_ticket) that only the Worker may call, loads its own policy
// (policy.yaml: `go version` must be confirmed), answers the policy's
// questions with its own Confirmer, watches the run through an event
// observer, and runs agent.Run with the scripted model of script.yaml in a
// temporary workspace. It prints the events and the report's numbers.
//
//	go run ./examples/embed
package main

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/tools"
)

//go:embed script.yaml
var script []byte

//go:embed policy.yaml
var policyFile []byte

// LookupArgs are the arguments of the custom tool.
type LookupArgs struct {
	// The lookup reads the program's own map, no file or command: it says
	// so, or the registry would refuse it (see tools.Registry.Register).
	tools.NoEffects
	ID string `json:"id" jsonschema:"description=Ticket id such as TRIO-7."`
}

// tickets stands in for an issue tracker.
var tickets = map[string]string{
	"TRIO-7": "Write greeting.txt containing exactly: Hello from ticket TRIO-7",
}

func lookupTicket(_ context.Context, a LookupArgs) (tools.Result, error) {
	text, ok := tickets[strings.ToUpper(a.ID)]
	if !ok {
		// A problem the model can fix: an error result naming the field.
		return tools.Result{OK: false, Output: fmt.Sprintf("id: no ticket %q", a.ID)}, nil
	}
	return tools.Result{OK: true, Output: text}, nil
}

// yesConfirmer approves once whatever the policy asks about, and says so.
type yesConfirmer struct{}

func (yesConfirmer) Confirm(_ context.Context, req policy.ConfirmRequest) (policy.Answer, error) {
	fmt.Printf("  confirm %s %q (rule %s): yes\n", req.Tool, req.Command+req.Path, req.Decision.Rule)
	return policy.AnswerYes, nil
}

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	tmp, err := os.MkdirTemp("", "trio-embed-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	model, err := llm.ParseScript("examples/embed/script.yaml", script)
	if err != nil {
		return err
	}
	reg, err := tools.NewRegistry(tools.New[LookupArgs]("lookup_ticket", "Look up a ticket of the issue tracker by id.", lookupTicket))
	if err != nil {
		return err
	}
	pol, err := policy.Parse("examples/embed/policy.yaml", policyFile)
	if err != nil {
		return err
	}
	a, err := agent.New(model, reg,
		agent.WithPolicy(pol),
		agent.WithWorkspace(filepath.Join(tmp, "workspace")),
		agent.WithRunsDir(filepath.Join(tmp, "runs")),
		agent.WithRunID("embed"),
		agent.WithConfirmer(yesConfirmer{}),
		// The custom tool goes to the Worker only (the Critic keeps its defaults).
		agent.WithRoleTools(agent.RoleWorker, tools.ReadFileName, tools.WriteFileName, tools.ListFilesName, tools.RunTestsName, tools.RunCommandName, "lookup_ticket"),
		agent.WithObserver(func(e agent.Event) {
			switch e.Kind {
			case agent.EventToolCall:
				fmt.Printf("  %s %s %s\n", e.Role, e.Tool, e.Decision)
			case agent.EventPlanReady, agent.EventTestsDesigned, agent.EventStepStarted, agent.EventCriticVerdict, agent.EventWarning:
				fmt.Println(e.Kind, strings.Join(strings.Fields(e.Message), " "))
			}
		}),
	)
	if err != nil {
		return err
	}
	rep, err := a.Run(ctx, "Do what ticket TRIO-7 asks, in a Go module named greeting with a test that checks the file.")
	if err != nil {
		return err
	}
	fmt.Printf("stopped: %s (%s)\nfirst pass %v, repair rounds %d, model calls %d, tool calls %d, confirmations %d\n",
		rep.Reason, rep.Explanation, rep.Metrics.FirstPass, rep.Metrics.RepairRounds, rep.Metrics.ModelCalls, rep.Metrics.ToolCalls, rep.Metrics.Confirmations)
	if rep.Reason != agent.StopCompleted {
		return fmt.Errorf("run stopped: %s: %s", rep.Reason, rep.Detail)
	}
	return nil
}
