package planner

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/trioagent/trio/llm"
)

//go:embed prompt_revise.md
var revisePrompt string

// Revision says why a run is stuck, for Revise.
type Revision struct {
	// Why is the stop the run would make without a new plan
	// ("same_failure: ...", "budget_repairs: ...").
	Why string
	// Findings are the Critic's last findings, as the Worker read them.
	Findings string
	// History is what the Worker did so far: the rolling summary, its
	// repair analyses and step notes.
	History string
}

// reviseReply is the model-facing revision: the steps that replace the
// remaining work.
type reviseReply struct {
	Reason string      `json:"reason" jsonschema_description:"Why the earlier approach failed and what the new steps do differently."`
	Steps  []stepReply `json:"steps" jsonschema_description:"The steps to carry out now, in order; at least one."`
}

// Revise asks the model (role "planner") for new steps once the run is
// stuck: the same failure came back after a repair, or the repair budget
// is spent. The model reads the goal, the plan, the Critic's findings and
// the history summary. The steps done so far stay; the new steps are
// appended after them (ids continue), and the test command, CLI and tests
// folder are kept, since the acceptance tests were written for them. An
// invalid reply goes back once; a second is an error wrapping
// ErrInvalidPlan.
func (p *Planner) Revise(ctx context.Context, plan Plan, rev Revision) (Plan, error) {
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: revisePrompt},
		{Role: llm.RoleUser, Content: reviseMessage(plan, rev)},
	}
	schema := llm.SchemaOf[reviseReply]("revised_steps", "New steps that replace the remaining work of a stuck plan.")
	var last error
	for attempt := 1; attempt <= 2; attempt++ {
		req := llm.Request{Agent: Agent, Messages: slices.Clip(msgs), Output: schema, MaxTokens: p.maxTokens}
		resp, err := p.model.Complete(ctx, req)
		if p.observer != nil {
			p.observer(req, resp, err)
		}
		if err != nil {
			return Plan{}, fmt.Errorf("planner: revise: model call %d: %w", attempt, err)
		}
		revised, err := parseRevision(plan, resp)
		if err == nil {
			return revised, nil
		}
		last = err
		reply := resp.Message.Content
		if strings.TrimSpace(reply) == "" {
			reply = "(empty reply)"
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: reply},
			llm.Message{Role: llm.RoleUser, Content: strings.Replace(fixMessage(err), "whole corrected plan", "corrected reason and steps", 1) +
				fmt.Sprintf(" The field paths count the whole plan: your first new step is steps[%d].", len(plan.Steps))})
	}
	return Plan{}, fmt.Errorf("planner: the revised steps were invalid twice: %w", last)
}

func parseRevision(plan Plan, resp llm.Response) (Plan, error) {
	content := strings.TrimSpace(resp.Message.Content)
	if content == "" {
		return Plan{}, fmt.Errorf("%w: the reply is empty", ErrInvalidPlan)
	}
	r, err := llm.DecodeOutput[reviseReply](content)
	if err != nil {
		return Plan{}, fmt.Errorf("%w: the reply does not match the schema: %s", ErrInvalidPlan, err)
	}
	if len(r.Steps) == 0 {
		return Plan{}, fmt.Errorf("%w: steps: give at least one step", ErrInvalidPlan)
	}
	// The new steps go through the same conversion and validation as a
	// first plan, then follow the steps already done.
	fresh := planReply{Steps: r.Steps, Risks: plan.Risks, TestCommand: plan.TestCommand, CLI: plan.CLI, TestsDir: plan.TestsDir}.toPlan(plan.Goal)
	out := plan
	out.Steps = slices.Clone(plan.Steps)
	for _, s := range fresh.Steps {
		s.ID = len(out.Steps) + 1
		out.Steps = append(out.Steps, s)
	}
	if err := out.Validate(); err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			return Plan{}, err
		}
		return Plan{}, fmt.Errorf("%w: %v", ErrInvalidPlan, err)
	}
	return out, nil
}

func reviseMessage(plan Plan, rev Revision) string {
	var b strings.Builder
	b.WriteString("# Goal\n\n")
	b.WriteString(strings.TrimSpace(plan.Goal))
	b.WriteString("\n\n# The plan so far (every step was carried out)\n\n")
	for _, s := range plan.Steps {
		fmt.Fprintf(&b, "%d. %s: %s (files: %s)\n", s.ID, s.Title, s.Description, strings.Join(s.Files, ", "))
	}
	fmt.Fprintf(&b, "\nTest command: %s\nAcceptance tests folder (fixed, read-only for the Worker): %s/\n", plan.TestCommand, plan.TestsFolder())
	fmt.Fprintf(&b, "\n# Why the run is stuck\n\n%s\n", strings.TrimSpace(rev.Why))
	fmt.Fprintf(&b, "\n# The Critic's last findings\n\n%s\n", strings.TrimSpace(rev.Findings))
	if h := strings.TrimSpace(rev.History); h != "" {
		fmt.Fprintf(&b, "\n# What the Worker did\n\n%s\n", h)
	}
	return b.String()
}
