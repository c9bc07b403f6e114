package planner_test

import (
	"context"
	"fmt"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/planner"
)

// cannedModel answers every request with the same content.
type cannedModel string

func (m cannedModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: string(m)}}, nil
}

func ExampleNew() {
	model := cannedModel(`{
	  "steps": [{"title": "module", "description": "Create go.mod and hello.go printing a greeting.",
	             "files": ["go.mod", "hello.go"], "expected": "go run . prints hello", "acceptance": "go test ./... passes"}],
	  "risks": [], "test_command": "go test ./...", "cli": ["go", "run", "."], "tests_dir": ""}`)

	p := planner.New(model, planner.WithObserver(func(req llm.Request, resp llm.Response, err error) {
		fmt.Println("model call by", req.Agent)
	}))
	plan, err := p.Plan(context.Background(), "Print hello.", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(plan.Steps[0].ID, plan.Steps[0].Files, plan.TestCommand, plan.TestsDir)
	// Output:
	// model call by planner
	// 1 [go.mod hello.go] go test ./... acceptance
}
