package tools

import (
	"context"
	"encoding/json"
	"time"

	"github.com/invopop/jsonschema"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/tools/testreport"
)

// Tool is one capability offered to a model. Build typed tools with New;
// implement Tool directly only for tools whose arguments are not a struct.
type Tool interface {
	Name() string
	// Description is the long text the model reads.
	Description() string
	// Schema is the JSON schema of the arguments, derived once.
	Schema() *jsonschema.Schema
	// Decode validates raw arguments strictly and returns what the call
	// would do. An error here is the model's to fix (it names the field) and
	// goes back to it as an error result.
	Decode(args json.RawMessage) (Invocation, error)
}

// Invocation is a decoded call: the effects the gate must clear with the
// policy, and the function that carries it out once cleared.
type Invocation struct {
	Effects []Effect
	Run     func(ctx context.Context) (Result, error)
}

// EffectKind says what an effect does.
type EffectKind string

// The effects the policy judges.
const (
	EffectRead  EffectKind = "read"
	EffectWrite EffectKind = "write"
	EffectExec  EffectKind = "exec"
)

// Effect is one thing a call does outside the model: read or write a
// workspace-relative path, or run a command.
type Effect struct {
	Kind    EffectKind     `json:"kind"`
	Path    string         `json:"path,omitempty"`
	Command policy.Command `json:"command,omitzero"`
	// Dir is the workspace-relative folder a command runs in ("" for the
	// root); the policy judges its relative arguments from there.
	Dir string `json:"dir,omitempty"`
	// Links, for a command, shows the policy where the workspace's paths
	// lead through symlinks, so that its path arguments are judged by what
	// they reach (Workspace.Links). Nil: judged as written.
	Links policy.Links `json:"-"`
}

// Call is a model's tool call as it reaches the gate.
type Call struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Result is what a tool call gives back to the model. A problem the model can
// fix is a Result with OK false; an infrastructure failure is a Go error.
type Result struct {
	OK        bool          `json:"ok"`
	Output    string        `json:"output,omitempty"`
	Stdout    string        `json:"stdout,omitempty"`
	Stderr    string        `json:"stderr,omitempty"`
	ExitCode  int           `json:"exit_code"`
	Duration  time.Duration `json:"duration_ms"`
	Truncated bool          `json:"truncated,omitempty"`
	// Denied is set when the gate refused the call; Output says why.
	Denied bool `json:"denied,omitempty"`
	// Tests is the structured report of a run_tests call that ran (nil for
	// other tools). The model reads the same report in Output (ForModel
	// leaves this field out); programs such as the Critic read it here.
	Tests *testreport.Report `json:"tests,omitempty"`
}
