package agent

import (
	"errors"
	"fmt"
	"slices"
	"text/template"
	"time"

	"github.com/trioagent/trio/critic"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/summarizer"
	"github.com/trioagent/trio/tools"
)

// The model roles of a run. They are the Agent names of llm.Request, the
// keys of per-role tool subsets, prompts and usage.
const (
	RolePlanner      = "planner"
	RoleTestDesigner = "test_designer"
	RoleWorker       = "worker"
	RoleCritic       = "critic"
	RoleSummarizer   = "summarizer"
	// RoleReviewer reviews a change whose checks passed (WithReview).
	RoleReviewer = critic.AgentReviewer
)

// FinishStepName is the tool the Worker calls to end a step.
const FinishStepName = "finish_step"

// Budgets bound one run. A zero field means the default of DefaultBudgets.
type Budgets struct {
	// MaxSteps is the Worker turns (model replies) allowed per plan step or
	// repair round; a step or round that has not called finish_step by
	// then stops the run (stop reason budget_steps).
	MaxSteps int `json:"max_steps"`
	// MaxTotalTurns is the Worker turns allowed in the whole run
	// (stop reason budget_steps).
	MaxTotalTurns int `json:"max_total_turns"`
	// MaxRepairRounds is the repair rounds allowed after the first check
	// (stop reason budget_repairs). A negative value allows none.
	MaxRepairRounds int `json:"max_repair_rounds"`
	// MaxTokens is the prompt plus completion tokens of every role
	// (stop reason budget_tokens); at 80% the Worker is told to wrap up.
	MaxTokens int `json:"max_tokens"`
	// MaxWallTime is the run's wall time, summed over resumes
	// (stop reason budget_time).
	MaxWallTime time.Duration `json:"max_wall_time_ns"`
	// MaxGoalBytes is the largest goal Run accepts (DefaultMaxGoalBytes
	// when zero); a larger one is an error wrapping ErrInvalidInput.
	MaxGoalBytes int `json:"max_goal_bytes,omitempty"`
}

// DefaultBudgets are the budgets of a run that sets none.
func DefaultBudgets() Budgets {
	return Budgets{
		MaxSteps:        25,
		MaxTotalTurns:   200,
		MaxRepairRounds: 3,
		MaxTokens:       2_000_000,
		MaxWallTime:     30 * time.Minute,
		MaxGoalBytes:    DefaultMaxGoalBytes,
	}
}

func (b Budgets) withDefaults() Budgets {
	d := DefaultBudgets()
	if b.MaxSteps <= 0 {
		b.MaxSteps = d.MaxSteps
	}
	if b.MaxTotalTurns <= 0 {
		b.MaxTotalTurns = d.MaxTotalTurns
	}
	if b.MaxRepairRounds == 0 {
		b.MaxRepairRounds = d.MaxRepairRounds
	} else if b.MaxRepairRounds < 0 {
		b.MaxRepairRounds = 0
	}
	if b.MaxTokens <= 0 {
		b.MaxTokens = d.MaxTokens
	}
	if b.MaxWallTime <= 0 {
		b.MaxWallTime = d.MaxWallTime
	}
	if b.MaxGoalBytes <= 0 {
		b.MaxGoalBytes = d.MaxGoalBytes
	}
	return b
}

// Option configures an Agent.
type Option func(*config) error

type config struct {
	workspace string
	// reuseWorkspace accepts a workspace another run left files in.
	reuseWorkspace bool
	runsDir        string
	runID          string
	policy         *policy.Policy
	sandbox        sandbox.Sandbox
	// sandboxCfg describes the sandbox the run opens (WithSandboxConfig).
	sandboxCfg *SandboxConfig
	metadata   map[string]string
	confirmer  policy.Confirmer
	observers  []func(Event)
	roleTools  map[string][]string
	prompts    map[string]string
	budgets    Budgets
	window     *summarizer.Config
	// roleExtra are tools for some roles only (WithToolsFor).
	roleExtra []roleTool
	// mcpServers are connected when the sandbox opens (WithMCPServers).
	mcpServers []roleServer
	// hooks run around tool calls and at the end (WithHooks).
	hooks *tools.Hooks
	// controlFiles are loaded as configuration or run on the host
	// (WithControlFiles).
	controlFiles []string
	// workspaceControl are workspace-relative control files, pinned when
	// a session starts (WithWorkspaceControlFiles).
	workspaceControl []string
	prices           map[string]llm.Price // WithPrices, by role
	// repairTmpl is the "worker_repair" prompt, parsed once by WithPrompt.
	repairTmpl *template.Template
	// userTests are the person's acceptance tests (WithTests).
	userTests *userTests
	review    ReviewConfig
	lint      LintConfig
	replan    bool
	// checkpointHooks run after every checkpoint (WithCheckpointHook).
	checkpointHooks []func(runDir string) error
}

// WithReplan allows one re-plan per run (default: none): when the same
// failure comes back after a repair (same_failure) or the repair budget is
// spent (budget_repairs), the Planner reads the findings and the history
// summary and appends the steps to carry out instead, before the run gives
// up. The revised steps are built and checked like the first ones; if the
// run is stuck again it stops with the reason it would have had.
func WithReplan(on bool) Option {
	return func(c *config) error {
		c.replan = on
		return nil
	}
}

// LintConfig turns on the Critic's lint check: the linters of the
// languages the workspace uses (go vet, gofmt, py_compile, pyflakes and
// ruff where installed, node --check; see tools.DetectLinters) run through
// run_linter under the Critic's policy, and a blocking linter's finding
// fails the round like a failing test.
type LintConfig struct {
	Enabled bool
	// Blocking names the linters whose findings fail the check; the rest
	// are advisory (listed in the findings only). Nil keeps the defaults
	// (go_vet, py_compile, node_check); an empty, non-nil slice makes
	// every linter advisory.
	Blocking []string
}

// WithLint configures the lint check (default: off).
func WithLint(lc LintConfig) Option {
	return func(c *config) error {
		known := tools.LinterNames()
		for i, n := range lc.Blocking {
			if !slices.Contains(known, n) {
				return fmt.Errorf("agent: WithLint: Blocking[%d]: %q is not a known linter (known: %v)", i, n, known)
			}
		}
		c.lint = lc
		return nil
	}
}

// ReviewConfig turns on the reviewer: once every deterministic check
// passes, the Critic's model (role "reviewer", its tokens counted under
// that role) reads the goal, the plan and the files the run changed, and
// answers with findings, each with a severity, and a score.
type ReviewConfig struct {
	Enabled bool
	// BlockAt is the lowest severity that sends the Worker back for a
	// review round; empty makes the review advisory (only the report
	// shows it).
	BlockAt critic.Severity
	// MaxRounds bounds the review rounds (default 1); when they are spent
	// and the reviewer still blocks, the run stops with review_blocked.
	// They are counted apart from the repair rounds.
	MaxRounds int
}

// WithReview configures the reviewer (default: off). A review never turns
// a failing check into a pass: it runs only when every check passed.
func WithReview(rc ReviewConfig) Option {
	return func(c *config) error {
		if rc.BlockAt != "" {
			if _, err := critic.ParseSeverity(string(rc.BlockAt)); err != nil {
				return fmt.Errorf("agent: WithReview: BlockAt: %w", err)
			}
		}
		if rc.MaxRounds < 0 {
			return fmt.Errorf("agent: WithReview: MaxRounds %d is negative", rc.MaxRounds)
		}
		if rc.MaxRounds == 0 {
			rc.MaxRounds = 1
		}
		c.review = rc
		return nil
	}
}

// WithWorkspace sets the folder the project is built in (created if
// missing); a relative one is relative to the current folder. Default: the
// policy's workspace (see WithPolicy) when it names a folder other than
// ".", else "workspace" inside the run's folder
// (<runs dir>/<run id>/workspace). Resume keeps the run's workspace unless
// WithWorkspace is given.
func WithWorkspace(dir string) Option {
	return func(c *config) error {
		if dir == "" {
			return errors.New("agent: WithWorkspace: empty directory")
		}
		c.workspace = dir
		return nil
	}
}

// runWorkspace is the workspace a new run builds in as configured:
// WithWorkspace, else the policy's when it names a folder other than ".";
// "" leaves it to the run (<run folder>/workspace).
func (c *config) runWorkspace() string {
	if c.workspace != "" {
		return c.workspace
	}
	if c.policy != nil {
		if ws := c.policy.Workspace(); ws != "" && ws != "." {
			return ws
		}
	}
	return ""
}

// WithRunsDir sets the folder under which each run gets its own folder
// <dir>/<run-id>. Default: "runs" under the current directory. A runs
// folder inside the workspace is never taken for stray files.
func WithRunsDir(dir string) Option {
	return func(c *config) error {
		if dir == "" {
			return errors.New("agent: WithRunsDir: empty directory")
		}
		c.runsDir = dir
		return nil
	}
}

// WithRunID names the run (and its folder). Default: a UTC timestamp with a
// random suffix.
func WithRunID(id string) Option {
	return func(c *config) error {
		if id == "" || id == "." || id == ".." || containsSep(id) {
			return fmt.Errorf("agent: WithRunID: %q is not a valid folder name", id)
		}
		c.runID = id
		return nil
	}
}

// WithPolicy sets the policy every tool call is judged by. Default:
// policy.Default(). When the policy names a workspace other than "." and
// WithWorkspace is not given, Run builds the project there (relative to
// the current folder).
func WithPolicy(p *policy.Policy) Option {
	return func(c *config) error {
		if p == nil {
			return errors.New("agent: WithPolicy: nil policy")
		}
		c.policy = p
		return nil
	}
}

// WithSandbox sets an embedder's own sandbox, already open on the
// workspace, instead of one the run opens (WithSandboxConfig; default
// auto: containerd when it answers, else local with a warning event). The
// Agent closes neither a sandbox given here nor its workspace's files. It
// cannot be combined with WithSandboxConfig.
func WithSandbox(sb sandbox.Sandbox) Option {
	return func(c *config) error {
		if sb == nil {
			return errors.New("agent: WithSandbox: nil sandbox")
		}
		c.sandbox = sb
		return nil
	}
}

// WithConfirmer sets who answers the policy's "ask" decisions. Without one,
// every ask is a no.
func WithConfirmer(cf policy.Confirmer) Option {
	return func(c *config) error {
		c.confirmer = cf
		return nil
	}
}

// WithObserver adds a function that receives every Event, in order, on the
// run's goroutine; it must return quickly. May be given several times.
func WithObserver(fn func(Event)) Option {
	return func(c *config) error {
		if fn == nil {
			return errors.New("agent: WithObserver: nil function")
		}
		c.observers = append(c.observers, fn)
		return nil
	}
}

// WithRoleTools sets the tools a role may call (by name), replacing the
// role's default subset (DefaultRoleTools). Roles: planner, worker,
// critic. The Worker always also gets finish_step.
func WithRoleTools(role string, names ...string) Option {
	return func(c *config) error {
		switch role {
		case RolePlanner, RoleWorker, RoleCritic:
		default:
			return fmt.Errorf("agent: WithRoleTools: unknown role %q (want planner, worker or critic)", role)
		}
		if c.roleTools == nil {
			c.roleTools = map[string][]string{}
		}
		c.roleTools[role] = append([]string(nil), names...)
		return nil
	}
}

// WithPrompt replaces a role's system prompt. The Worker's prompts are
// "worker" (system) and "worker_repair", the message that opens a repair
// round: a text/template with .Round, .MaxRounds, .Findings and .TestsDir
// (see prompts/repair.md). Planner, critic and test_designer prompts are
// passed to their packages.
func WithPrompt(role, text string) Option {
	return func(c *config) error {
		switch role {
		case RolePlanner, RoleWorker, RoleCritic, RoleTestDesigner, RoleReviewer, "worker_repair":
		default:
			return fmt.Errorf("agent: WithPrompt: unknown role %q", role)
		}
		if text == "" {
			return fmt.Errorf("agent: WithPrompt(%s): empty prompt", role)
		}
		if role == "worker_repair" {
			t, err := template.New(role).Funcs(funcs).Parse(text)
			if err != nil {
				return fmt.Errorf("agent: WithPrompt(%s): %w", role, err)
			}
			c.repairTmpl = t
		}
		if c.prompts == nil {
			c.prompts = map[string]string{}
		}
		c.prompts[role] = text
		return nil
	}
}

// WithBudgets sets the run's budgets; zero fields keep their defaults.
func WithBudgets(b Budgets) Option {
	return func(c *config) error {
		if b.MaxSteps < 0 || b.MaxTotalTurns < 0 || b.MaxTokens < 0 || b.MaxWallTime < 0 || b.MaxGoalBytes < 0 {
			return fmt.Errorf("agent: WithBudgets: negative budget in %+v", b)
		}
		c.budgets = b
		return nil
	}
}

// WithWindow configures the Worker's context window (context limit, reply
// reserve, summary cadence). Default: the summarizer's defaults.
//
// A ContextLimit below MinContextLimit is an error: no prompt fits.
func WithWindow(w summarizer.Config) Option {
	return func(c *config) error {
		if w.ContextLimit != 0 && w.ContextLimit < MinContextLimit {
			return fmt.Errorf("agent: WithWindow: context limit %d is below the minimum of %d tokens", w.ContextLimit, MinContextLimit)
		}
		c.window = &w
		return nil
	}
}

// WithMetadata records how a run was started (for example the model
// source, the policy file, the sandbox kind) in its checkpoint; Inspect
// returns it, so a tool that resumes runs can rebuild the same setup. Keys
// given several times, or again to Resume, replace the stored values.
func WithMetadata(md map[string]string) Option {
	return func(c *config) error {
		if c.metadata == nil {
			c.metadata = map[string]string{}
		}
		for k, v := range md {
			if k == "" {
				return errors.New("agent: WithMetadata: empty key")
			}
			c.metadata[k] = v
		}
		return nil
	}
}

// DefaultRoleTools returns the names of the tools a role is offered unless
// WithRoleTools says otherwise, sorted: planner read_file, list_files,
// search_files; critic run_tests, run_linter, run_command, read_file,
// list_files;
// worker every built-in of package tools and finish_step (a run's Worker
// also gets every tool of the Agent's registry). Another role has none.
func DefaultRoleTools(role string) []string {
	var names []string
	switch role {
	case RolePlanner:
		names = []string{tools.ReadFileName, tools.ListFilesName, tools.SearchFilesName}
	case RoleCritic:
		names = []string{tools.RunTestsName, tools.RunLinterName, tools.RunCommandName, tools.ReadFileName, tools.ListFilesName}
	case RoleWorker:
		names = append(builtinNames(), FinishStepName)
	}
	slices.Sort(names)
	return names
}

// builtinNames are the tools of tools.Builtins (checked by a test).
func builtinNames() []string {
	return []string{tools.ReadFileName, tools.WriteFileName, tools.EditFileName, tools.DeleteFileName,
		tools.ListFilesName, tools.SearchFilesName, tools.RunCommandName, tools.RunTestsName, tools.RunLinterName}
}

func containsSep(s string) bool {
	for _, r := range s {
		if r == '/' || r == '\\' {
			return true
		}
	}
	return false
}
