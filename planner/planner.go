package planner

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/trioagent/trio/llm"
)

// Agent is the role name the Planner puts in every llm.Request.
const Agent = "planner"

//go:embed prompt.md
var defaultPrompt string

// maxListing caps the workspace listing sent to the model, in bytes.
const maxListing = 16 << 10

// Observer sees every model call the Planner makes, with its reply or error,
// so that callers can trace tokens per role.
type Observer func(req llm.Request, resp llm.Response, err error)

// Option configures a Planner.
type Option func(*Planner)

// WithPrompt replaces the embedded system prompt.
func WithPrompt(text string) Option {
	return func(p *Planner) { p.prompt = text }
}

// WithMaxTokens caps each reply; zero leaves the provider's default.
func WithMaxTokens(n int) Option {
	return func(p *Planner) { p.maxTokens = n }
}

// WithObserver registers a function called after every model call.
func WithObserver(o Observer) Option {
	return func(p *Planner) { p.observer = o }
}

// Planner turns a goal into a validated Plan with one model.
type Planner struct {
	model     llm.Model
	prompt    string
	maxTokens int
	observer  Observer
	schema    *llm.OutputSchema
}

// New returns a Planner that asks model.
func New(model llm.Model, opts ...Option) *Planner {
	p := &Planner{
		model:  model,
		prompt: defaultPrompt,
		schema: llm.SchemaOf[planReply]("plan", "An ordered plan that builds the goal, with its test command."),
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Plan asks the model for a plan for goal. workspaceListing is what the
// workspace holds now (one path a line; empty for an empty workspace). An
// invalid reply goes back to the model once with its problems; a second
// invalid reply is an error wrapping ErrInvalidPlan. A failing model call is
// returned wrapped, without a retry (the provider retries).
func (p *Planner) Plan(ctx context.Context, goal, workspaceListing string) (Plan, error) {
	if strings.TrimSpace(goal) == "" {
		return Plan{}, errors.New("planner: goal is empty")
	}
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: p.prompt},
		{Role: llm.RoleUser, Content: userMessage(goal, workspaceListing)},
	}
	var last error
	for attempt := 1; attempt <= 2; attempt++ {
		req := llm.Request{
			Agent:     Agent,
			Messages:  slices.Clip(msgs),
			Output:    p.schema,
			MaxTokens: p.maxTokens,
		}
		resp, err := p.model.Complete(ctx, req)
		if p.observer != nil {
			p.observer(req, resp, err)
		}
		if err != nil {
			return Plan{}, fmt.Errorf("planner: model call %d: %w", attempt, err)
		}
		plan, err := parseReply(goal, resp)
		if err == nil {
			return plan, nil
		}
		last = err
		reply := resp.Message.Content
		if strings.TrimSpace(reply) == "" {
			reply = "(empty reply)"
		}
		msgs = append(msgs,
			llm.Message{Role: llm.RoleAssistant, Content: reply},
			llm.Message{Role: llm.RoleUser, Content: fixMessage(err)},
		)
	}
	return Plan{}, fmt.Errorf("planner: the model's plan was invalid twice: %w", last)
}

// planReply is the model-facing plan: the goal is ours and step ids are
// assigned in order, so the model cannot get them wrong. Every field is
// required (strict structured output); empty values are allowed where the
// plan allows them.
type planReply struct {
	Steps       []stepReply `json:"steps" jsonschema_description:"Ordered steps; each one a unit of work that ends in files on disk."`
	Risks       []string    `json:"risks" jsonschema_description:"What could go wrong and how the plan avoids it."`
	TestCommand string      `json:"test_command" jsonschema_description:"One command line that runs every test, the acceptance tests included, e.g. go test ./..."`
	CLI         []string    `json:"cli" jsonschema_description:"argv of the command-line program the project provides, without --help; empty if there is none."`
	TestsDir    string      `json:"tests_dir" jsonschema_description:"Workspace-relative folder for the independent acceptance tests; empty means acceptance."`
}

type stepReply struct {
	Title       string   `json:"title" jsonschema_description:"A few words."`
	Description string   `json:"description" jsonschema_description:"What to do, precisely enough to do it without the goal at hand."`
	Files       []string `json:"files" jsonschema_description:"Workspace-relative paths the step creates or changes."`
	Expected    string   `json:"expected" jsonschema_description:"What exists or works when the step is done."`
	Acceptance  string   `json:"acceptance" jsonschema_description:"How to check that the step is done."`
}

func parseReply(goal string, resp llm.Response) (Plan, error) {
	content := strings.TrimSpace(resp.Message.Content)
	if content == "" {
		why := "the reply is empty"
		if len(resp.Message.ToolCalls) > 0 {
			why = "the reply calls tools instead of giving the plan"
		}
		if resp.FinishReason == "length" {
			why += " (cut by the token limit)"
		}
		return Plan{}, fmt.Errorf("%w: %s", ErrInvalidPlan, why)
	}
	r, err := llm.DecodeOutput[planReply](content)
	if err != nil {
		why := err.Error()
		if resp.FinishReason == "length" {
			why += " (the reply was cut by the token limit: be more concise)"
		}
		return Plan{}, fmt.Errorf("%w: the reply does not match the schema: %s", ErrInvalidPlan, why)
	}
	plan := r.toPlan(goal)
	if err := plan.Validate(); err != nil {
		return Plan{}, err
	}
	return plan, nil
}

func (r planReply) toPlan(goal string) Plan {
	p := Plan{
		Goal:        goal,
		Risks:       trimAll(r.Risks),
		TestCommand: strings.TrimSpace(r.TestCommand),
		CLI:         trimAll(r.CLI),
		TestsDir:    strings.TrimSpace(r.TestsDir),
	}
	if p.TestsDir == "" {
		p.TestsDir = DefaultTestsDir
	} else if checkRelPath(p.TestsDir, false) == "" {
		p.TestsDir = path.Clean(p.TestsDir)
	}
	for i, s := range r.Steps {
		st := Step{
			ID:          i + 1,
			Title:       strings.TrimSpace(s.Title),
			Description: strings.TrimSpace(s.Description),
			Expected:    strings.TrimSpace(s.Expected),
			Acceptance:  strings.TrimSpace(s.Acceptance),
		}
		for _, f := range s.Files {
			f = strings.TrimSpace(f)
			if checkRelPath(f, false) == "" {
				f = path.Clean(f)
			}
			st.Files = append(st.Files, f)
		}
		p.Steps = append(p.Steps, st)
	}
	return p
}

func trimAll(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func userMessage(goal, listing string) string {
	var b strings.Builder
	b.WriteString("# Goal\n\n")
	b.WriteString(strings.TrimSpace(goal))
	b.WriteString("\n\n# Workspace\n\n")
	listing = strings.TrimSpace(listing)
	switch {
	case listing == "":
		b.WriteString("(empty)\n")
	case len(listing) > maxListing:
		cut := strings.LastIndexByte(listing[:maxListing], '\n')
		if cut < 0 {
			cut = maxListing
		}
		b.WriteString(listing[:cut])
		fmt.Fprintf(&b, "\n… (listing cut: %d more bytes)\n", len(listing)-cut)
	default:
		b.WriteString(listing)
		b.WriteString("\n")
	}
	return b.String()
}

func fixMessage(err error) string {
	var b strings.Builder
	b.WriteString("Your plan cannot be used:\n")
	var ve *ValidationError
	if errors.As(err, &ve) {
		for _, p := range ve.Problems {
			b.WriteString("- ")
			b.WriteString(p.String())
			b.WriteString("\n")
		}
	} else {
		b.WriteString("- ")
		b.WriteString(err.Error())
		b.WriteString("\n")
	}
	b.WriteString("\nReply with the whole corrected plan as JSON matching the schema. Step numbers in field paths count from 0.")
	return b.String()
}
