package critic

import (
	"context"
	_ "embed"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/tools"
)

// Role names the Critic puts in llm.Request.Agent.
const (
	AgentCritic       = "critic"
	AgentTestDesigner = "test_designer"
)

// Names of the tools the Critic's view must hold.
const (
	runTestsTool   = "run_tests"
	runCommandTool = "run_command"
	runLinterTool  = "run_linter"
)

var (
	//go:embed prompt_critic.md
	promptCritic string
	//go:embed prompt_test_designer.md
	promptTestDesigner string
	//go:embed prompt_reviewer.md
	promptReviewer string
)

// Observer sees every model call the Critic makes, with its reply or error,
// so that callers can trace tokens per role (req.Agent says which).
type Observer func(req llm.Request, resp llm.Response, err error)

// Option configures a Critic.
type Option func(*Critic)

// WithPrompt replaces the embedded system prompt of a role: AgentCritic
// ("critic"), AgentTestDesigner ("test_designer") or AgentReviewer
// ("reviewer"). Other roles are ignored.
func WithPrompt(role, text string) Option {
	return func(c *Critic) {
		switch role {
		case AgentCritic:
			c.promptCritic = text
		case AgentTestDesigner:
			c.promptDesigner = text
		case AgentReviewer:
			c.promptReviewer = text
		}
	}
}

// WithObserver registers a function called after every model call.
func WithObserver(o Observer) Option {
	return func(c *Critic) { c.observer = o }
}

// WithMaxTokens caps each reply; zero leaves the provider's default.
func WithMaxTokens(n int) Option {
	return func(c *Critic) { c.maxTokens = n }
}

// WithBaseline names workspace-relative files that existed before the run;
// they are never stray.
func WithBaseline(paths ...string) Option {
	return func(c *Critic) {
		for _, p := range paths {
			c.baseline[path.Clean(strings.TrimPrefix(strings.TrimSpace(p), "./"))] = true
		}
	}
}

// WithAllowed adds path globs that are never stray. A glob is matched
// against the slash-separated workspace-relative path, segment by segment
// with path.Match; "**" matches any number of segments ("runs/**",
// "**/*.md").
func WithAllowed(globs ...string) Option {
	return func(c *Critic) { c.allowed = append(c.allowed, globs...) }
}

// WithSuite restores the last test suite (from a checkpoint), so that
// versions keep counting up after a resume.
func WithSuite(s TestSuite) Option {
	return func(c *Critic) { c.suite = s }
}

// WithSuiteFiles restores the canonical files of the suite given with
// WithSuite, as SuiteFiles returned them (check them with TestSuite.Verify
// first), so that RestoreSuite and Check hold the workspace to them after a
// resume.
func WithSuiteFiles(files ...SuiteFile) Option {
	return func(c *Critic) {
		c.files = slices.Clone(files)
		slices.SortFunc(c.files, func(a, b SuiteFile) int { return strings.Compare(a.Path, b.Path) })
	}
}

// WithPending restores suite changes that RestoreSuite found and no Check
// has reported yet (PendingChanges, kept across a crash): the next Check
// reports them as tampering.
func WithPending(changes ...SuiteChange) Option {
	return func(c *Critic) { c.pending = append(c.pending, changes...) }
}

// WithSentinelSeed sets where each check's sentinel tests (see package
// critic/sentinel) get their names and nonces: seed returns the seed of the
// check about to run, the same for the same check in every session, so
// that a check replayed from a write-ahead log after a crash verifies its
// recorded result, and a check's sentinels left behind by a crash are
// recognised as such. It must be a secret the Worker cannot read (the
// agent derives it from a key in the run folder). Without it each check
// draws a random seed.
func WithSentinelSeed(seed func() []byte) Option {
	return func(c *Critic) { c.sentinelSeed = seed }
}

// Critic designs acceptance tests and checks the Worker's result.
type Critic struct {
	model          llm.Model
	gate           *tools.Gate
	view           tools.View
	ws             *tools.Workspace
	promptCritic   string
	promptDesigner string
	promptReviewer string
	observer       Observer
	maxTokens      int
	baseline       map[string]bool
	allowed        []string
	// lint turns on the lint check; lintBlocking names the blocking
	// linters (nil: the table's defaults). See WithLint.
	lint         bool
	lintBlocking []string
	// baseSums are the workspace's files before the run (WithBaselineSums).
	baseSums map[string]string
	// changeList lists the run's changes for the reviewer (WithChangeList).
	changeList func() ([]ChangedFile, error)

	findingsSchema *llm.OutputSchema
	suiteSchema    *llm.OutputSchema
	reviewSchema   *llm.OutputSchema

	mu    sync.Mutex
	suite TestSuite
	// files are the canonical suite's contents, sorted by path: the truth
	// RestoreSuite holds the tests folder to.
	files []SuiteFile
	// pending are suite changes found since the last Check.
	pending []SuiteChange
	// userFiles are the person's tests (WithUserTests), relative to the
	// tests folder; userDesigned adds the designer's to them.
	userFiles    []SuiteFile
	userDesigned bool
	calls        int // tool calls made, for call ids
	// sentinelSeed gives the seed of the next check's sentinels
	// (WithSentinelSeed); nil draws a random one per check.
	sentinelSeed func() []byte
}

// New returns a Critic. gate and view run the checks' commands: view must
// hold run_tests, and run_command when a plan declares a CLI. ws is the
// workspace; the Critic reads it and writes the acceptance tests through
// ws.Root.
func New(model llm.Model, gate *tools.Gate, view tools.View, ws *tools.Workspace, opts ...Option) *Critic {
	c := &Critic{
		model:          model,
		gate:           gate,
		view:           view,
		ws:             ws,
		promptCritic:   promptCritic,
		promptDesigner: promptTestDesigner,
		promptReviewer: promptReviewer,
		baseline:       make(map[string]bool),
		findingsSchema: llm.SchemaOf[findingsReply]("findings", "The verdict on one round of checks, with each failure."),
		suiteSchema:    llm.SchemaOf[suiteReply]("acceptance_tests", "Acceptance test files written from the goal and the plan."),
		reviewSchema:   llm.SchemaOf[reviewReply]("review", "A review of a change whose checks passed: findings with severities and a score."),
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Suite returns the last test suite written (zero before DesignTests).
func (c *Critic) Suite() TestSuite {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.suite
	s.Files = slices.Clone(s.Files)
	s.Tests = slices.Clone(s.Tests)
	s.User = slices.Clone(s.User)
	return s
}

// complete makes one model call and reports it to the observer.
func (c *Critic) complete(ctx context.Context, agent string, msgs []llm.Message, schema *llm.OutputSchema) (llm.Response, error) {
	req := llm.Request{
		Agent:     agent,
		Messages:  slices.Clip(msgs),
		Output:    schema,
		MaxTokens: c.maxTokens,
	}
	resp, err := c.model.Complete(ctx, req)
	if c.observer != nil {
		c.observer(req, resp, err)
	}
	if err != nil {
		return resp, fmt.Errorf("critic: %s model call: %w", agent, err)
	}
	return resp, nil
}

// nextCallID numbers the Critic's own tool calls so traces can tell them
// from the Worker's.
func (c *Critic) nextCallID(tool string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	return fmt.Sprintf("critic-%s-%d", tool, c.calls)
}

// replyText returns a reply's content, or why it has none.
func replyText(resp llm.Response) (string, error) {
	content := strings.TrimSpace(resp.Message.Content)
	if content != "" {
		return content, nil
	}
	why := "the reply is empty"
	if len(resp.Message.ToolCalls) > 0 {
		why = "the reply calls tools instead of answering with JSON"
	}
	if resp.FinishReason == "length" {
		why += " (cut by the token limit)"
	}
	return "", fmt.Errorf("%s", why)
}

// reask appends the model's invalid reply and the problem to msgs.
func reask(msgs []llm.Message, resp llm.Response, problem string) []llm.Message {
	reply := resp.Message.Content
	if strings.TrimSpace(reply) == "" {
		reply = "(empty reply)"
	}
	return append(msgs,
		llm.Message{Role: llm.RoleAssistant, Content: reply},
		llm.Message{Role: llm.RoleUser, Content: "Your reply cannot be used:\n" + problem +
			"\n\nReply again with the whole answer as JSON matching the schema."},
	)
}
