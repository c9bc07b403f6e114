package agent

import (
	"context"
	_ "embed"
	"strings"

	"github.com/trioagent/trio/tools"
)

//go:embed prompts/finish_step.md
var finishStepDescription string

// FinishArgs are the arguments of finish_step.
type FinishArgs struct {
	// finish_step only ends the step: nothing for the policy to judge.
	tools.NoEffects
	Note string `json:"note" jsonschema:"description=What the step did\\, in a sentence or two."`
}

// finishStep is the tool that ends the Worker's step. It changes nothing;
// the Worker loop watches for it.
func finishStep() tools.Tool {
	return tools.New[FinishArgs](FinishStepName, strings.TrimSpace(finishStepDescription),
		func(ctx context.Context, a FinishArgs) (tools.Result, error) {
			return tools.Result{OK: true, Output: "step finished"}, nil
		})
}

// FinishStep returns the finish_step tool every run gives the Worker, for
// listing its schema next to the built-ins (as `trio tools` does); a run
// registers its own.
func FinishStep() tools.Tool { return finishStep() }
