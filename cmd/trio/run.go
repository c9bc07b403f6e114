package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/cmd/trio/config"
	"github.com/trioagent/trio/examples/demo"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
)

// runRecord is how the command started a run, kept in the run's
// checkpoint as agent metadata (keys "trio.*") so that trio resume
// rebuilds the same model, policy and sandbox.
type runRecord struct {
	// Model is "endpoint", "demo" or "script".
	Model      string
	Script     string
	Config     string
	Policy     string
	Unattended bool
	Sandbox    string
	// Models and Reasoning are the --model and --reasoning values the run
	// was started (and resumed) with, in order, applied again over
	// trio.yaml on resume so that a resumed run keeps its models.
	Models, Reasoning []string
}

// metadata is the record as agent.WithMetadata takes it.
func (r runRecord) metadata() map[string]string {
	md := map[string]string{"trio.model": r.Model, "trio.sandbox": r.Sandbox}
	for k, v := range map[string]string{"trio.script": r.Script, "trio.config": r.Config, "trio.policy": r.Policy} {
		if v != "" {
			md[k] = v
		}
	}
	if r.Unattended {
		md["trio.unattended"] = "true"
	}
	maps.Copy(md, r.modelMetadata())
	return md
}

// modelMetadata is the part of the record --model and --reasoning make,
// each list as one JSON array.
func (r runRecord) modelMetadata() map[string]string {
	md := map[string]string{}
	for k, v := range map[string][]string{"trio.models": r.Models, "trio.reasoning": r.Reasoning} {
		if len(v) > 0 {
			b, _ := json.Marshal(v)
			md[k] = string(b)
		}
	}
	return md
}

// recordOf reads a run's metadata back; a run started by another program
// is taken for an endpoint run.
func recordOf(md map[string]string) (runRecord, error) {
	r := runRecord{Model: md["trio.model"], Script: md["trio.script"], Config: md["trio.config"],
		Policy: md["trio.policy"], Unattended: md["trio.unattended"] == "true", Sandbox: md["trio.sandbox"]}
	if r.Model == "" {
		r.Model = "endpoint"
	}
	var err error
	for k, v := range map[string]*[]string{"trio.models": &r.Models, "trio.reasoning": &r.Reasoning} {
		if md[k] != "" {
			if jerr := json.Unmarshal([]byte(md[k]), v); jerr != nil {
				err = errors.Join(err, fmt.Errorf("the run's metadata %s: %w", k, jerr))
			}
		}
	}
	return r, err
}

// runFlags are the flags of run, demo and resume.
type runFlags struct {
	goal, goalFile string
	workspace      string
	policy         string
	sandbox        string
	quiet, json    bool
	unattended     bool
	// tests is --tests, the person's acceptance tests; withDesigned adds
	// the Critic's designed tests to them.
	tests        string
	withDesigned bool
	// reuse is --reuse-workspace: build on files another run left.
	reuse bool
	// trust is --trust-config: accept changed control files.
	trust bool
	// reasoning is --reasoning: LEVEL or ROLE=LEVEL, each.
	reasoning []string
	// models is --model: NAME or ROLE=NAME, each.
	models []string
}

// modelFlags are --model and --reasoning, of run and resume.
func (f *runFlags) modelFlags(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.models, "model", nil, "the model: NAME for every role or ROLE=NAME for one, repeatable (default: models of trio.yaml, else $TRIO_MODEL; on resume, the run's own)")
	cmd.Flags().StringArrayVar(&f.reasoning, "reasoning", nil, "reasoning_effort sent to an OpenAI reasoning model, a thinking budget on Anthropic: LEVEL for every role or ROLE=LEVEL for one, repeatable (none, minimal, low, medium, high, xhigh; default: reasoning of trio.yaml; on resume, the run's own)")
}

func (f *runFlags) output(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "no progress on stderr (the final report is still printed)")
	cmd.Flags().BoolVar(&f.json, "json", false, "write the event stream as JSON lines on stdout")
}

// checkSandbox refuses an unknown --sandbox before anything is created.
func (f *runFlags) checkSandbox() error {
	switch f.sandbox {
	case "", agent.SandboxAuto, agent.SandboxContainerd, agent.SandboxUserns, agent.SandboxLandlock, agent.SandboxLocal:
		return nil
	}
	return configError(fmt.Errorf("--sandbox %q: want containerd, userns, landlock, local (no isolation) or auto", f.sandbox))
}

func (f *runFlags) sandboxFlag(cmd *cobra.Command) {
	f.trustFlag(cmd)
	cmd.Flags().StringVar(&f.sandbox, "sandbox", "", "where commands run: containerd, userns (no root needed), landlock (nothing to install), local (no isolation) or auto: containerd, else userns, else landlock, else local after a yes (default: sandbox.kind of trio.yaml, else auto)")
}

func newRunCmd(g *globals, io stdio) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run --goal TEXT | --goal-file FILE",
		Short: "Plan, build and verify a goal with a model endpoint",
		Long: `Run plans, builds and verifies a goal with the model endpoint of trio.yaml or of
the environment (OPENAI_API_KEY, TRIO_MODEL, OPENAI_BASE_URL), and leaves a
run folder (runs/<run-id>/) with the checkpoint, trace, audit log and report.

The workspace is --workspace, else the policy file's workspace when it names
one other than ".", else runs/<run-id>/workspace.

Risky commands the policy marks "ask" are put to you on the terminal (y once,
n no, a always for this run); without a terminal on stdin, or with
--unattended or an unattended policy, nothing waits: ask means deny.

--tests DIR makes your own tests (every file under DIR, at the same relative
paths inside the plan's tests folder) the Critic's acceptance suite, alone or,
with --tests-with-designed, together with the tests it designs. They are kept
in the run folder, read-only to the Worker, restored before every check (a
change by the project's code is a tampering finding), and never rewritten: a
test the Critic suspects is wrong stops the run and is reported to you.

` + exitCodesHelp,
		Example: `  export OPENAI_API_KEY=sk-... TRIO_MODEL=gpt-4.1-mini
  trio run --goal "A Python CLI that counts words in files, with unittest tests"
  trio run --goal-file goal.md --policy configs/policy.unattended.yaml --unattended
  trio run --goal-file goal.md --config trio.yaml --workspace ./wordcount --json > events.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.checkSandbox(); err != nil {
				return err
			}
			if f.withDesigned && f.tests == "" {
				return configError(errors.New("--tests-with-designed needs --tests DIR"))
			}
			cfg, err := loadConfig(g.config)
			if err != nil {
				return err
			}
			if err := applyReasoning(cfg, f.reasoning); err != nil {
				return err
			}
			if err := applyModels(cfg, f.models); err != nil {
				return err
			}
			goal, err := readGoal(f, cfg.Budgets.MaxGoalBytes)
			if err != nil {
				return err
			}
			rec := runRecord{Model: "endpoint", Sandbox: f.sandbox, Unattended: f.unattended, Models: f.models, Reasoning: f.reasoning}
			if g.config != "" {
				rec.Config = abs(g.config)
			}
			if path := os.Getenv(envScript); path != "" {
				rec.Model, rec.Script = "script", abs(path)
			}
			model, closeModel, err := modelOf(rec, cfg)
			if err != nil {
				return err
			}
			defer closeModel()
			return runGoal(cmd.Context(), io, f, cfg, runsDir(g, cfg), goal, model, rec, "")
		},
	}
	cmd.Flags().StringVar(&f.goal, "goal", "", "the goal, as text")
	cmd.Flags().StringVar(&f.goalFile, "goal-file", "", "a file holding the goal (Markdown); - reads it from standard input")
	f.modelFlags(cmd)
	cmd.Flags().StringVar(&f.workspace, "workspace", "", "folder the project is built in, created if missing (default: the policy's workspace, else runs/<run-id>/workspace)")
	cmd.Flags().StringVar(&f.policy, "policy", "", "policy file (default: policy of trio.yaml, else the built-in strict policy)")
	cmd.Flags().BoolVar(&f.unattended, "unattended", false, "never ask: every action the policy marks ask is denied")
	cmd.Flags().StringVar(&f.tests, "tests", "", "a folder of your own acceptance tests: the Critic's suite, kept out of the Worker's reach and never rewritten")
	cmd.Flags().BoolVar(&f.withDesigned, "tests-with-designed", false, "with --tests: add the Critic's designed tests to yours (default: yours alone)")
	cmd.Flags().BoolVar(&f.reuse, "reuse-workspace", false, "build on the files an earlier run left in the workspace (without it such a workspace is refused, exit 3)")
	f.sandboxFlag(cmd)
	f.output(cmd)
	return cmd
}

func newDemoCmd(g *globals, io stdio) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the offline demo: a Markdown-to-HTML converter, built, broken, repaired, green",
		Long: `Demo runs Trio end to end without a model service: a scripted model, served on
loopback and reached through the real OpenAI-compatible provider, plans a
Markdown-to-HTML converter in Go, writes it with a real bug, the Critic's
acceptance tests catch it when go test really runs in the sandbox, and the
Worker repairs it until every check passes. It needs Go on the machine and
uses the built-in strict policy.

Without --workspace it makes a new folder ./trio-demo (or trio-demo-2, ...)
holding project/ (the workspace) and runs/ (the run folder); with
--workspace the run folder goes under --runs-dir, else ./runs.

` + exitCodesHelp,
		Example: `  trio demo
  trio demo --sandbox local --quiet
  trio demo --json > events.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if err := f.checkSandbox(); err != nil {
				return err
			}
			cfg, err := loadConfig(g.config)
			if err != nil {
				return err
			}
			runs := g.runsDir
			if f.workspace == "" {
				base, ferr := newDemoFolder()
				if ferr != nil {
					return failure(ferr)
				}
				// A demo that could not start (containerd unreachable...)
				// leaves no empty folder behind.
				defer func() {
					var ee *exitError
					if errors.As(err, &ee) && ee.code == exitConfig {
						removeEmpty(filepath.Join(base, "project"), filepath.Join(base, "runs"), base)
					}
				}()
				f.workspace = filepath.Join(base, "project")
				if runs == "" {
					runs = filepath.Join(base, "runs")
				}
				fmt.Fprintf(io.err, "trio demo: working in %s\n", abs(base))
			}
			if runs == "" {
				runs = runsDir(g, cfg)
			}
			// The demo's script is written for the built-in policy.
			cfg = withoutPolicy(cfg)
			rec := runRecord{Model: "demo", Sandbox: f.sandbox}
			model, closeModel, err := modelOf(rec, cfg)
			if err != nil {
				return err
			}
			defer closeModel()
			return runGoal(cmd.Context(), io, f, cfg, runs, demo.Goal(), model, rec, "")
		},
	}
	cmd.Flags().StringVar(&f.workspace, "workspace", "", "folder the demo project is built in (default: a new ./trio-demo/project)")
	f.sandboxFlag(cmd)
	f.output(cmd)
	return cmd
}

func newResumeCmd(g *globals, io stdio) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "resume RUN",
		Short: "Continue an interrupted run from its checkpoint (RUN is a run id or a run folder)",
		Long: `Resume continues a run from its checkpoint (state.json). A tool call that
completed before the interruption is not run again, the Worker's and the
Critic's alike: both are recorded in calls.jsonl (a "begin" before the call,
an "end" with its result after), and a completed call's recorded result is
reused. Only a call in flight when the run died runs again; audit.jsonl
marks a Critic call run again "rerun" and one answered from the record
"replayed". A resumed run that has no calls.jsonl but a checkpoint with
calls pending stops with exit 3 rather than run them again silently.

The model, policy and sandbox are those the run started with (recorded in
the checkpoint's metadata, --model and --reasoning included); --sandbox
overrides the sandbox, and --model and --reasoning override the models over
the recorded ones (kept for a later resume).

A session holds an exclusive lock on the run folder and on the workspace
themselves (deleting run.lock or .<name>.trio-lock next to the workspace,
which name the holder, does not release them) until it ends: a second resume of
the same run, or a run on a workspace in use, exits 3 at once naming the
pid and host that hold it. The kernel releases the locks of a process that
dies, even by kill -9, so a killed run can be resumed straight away (on NFS
the locks are only as good as the server's lock manager).

A record torn by a crash or a full disk at the end of calls.jsonl,
trace.jsonl, audit.jsonl or history.jsonl is cut off before anything is
appended, and the cut is noted in the trace; damage before the last record
exits 3 naming the file and line. The checkpoint before the latest is kept
(state.json.prev): a damaged state.json, or a torn history.jsonl record the
checkpoint counted, resumes from it, noted in the trace.

` + exitCodesHelp,
		Example: `  trio resume runs/20261130-172510-6eab9f
  trio resume 20261130-172510-6eab9f           # an id under ./runs (or --runs-dir)
  trio resume --sandbox local trio-demo/runs/20261130-172510-6eab9f`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.checkSandbox(); err != nil {
				return err
			}
			cfg, err := loadConfig(g.config)
			if err != nil {
				return err
			}
			dir, err := resolveRun(args[0], runsDir(g, cfg))
			if err != nil {
				return err
			}
			st, err := inspectRun(dir)
			if err != nil {
				return err
			}
			rec, err := recordOf(st.Metadata)
			if err != nil {
				return configError(fmt.Errorf("run %s: %w", filepath.Base(dir), err))
			}
			if g.config == "" && rec.Config != "" {
				if cfg, err = loadConfig(rec.Config); err != nil {
					return err
				}
			}
			// The models the run was started with, then this resume's.
			if (len(f.models) > 0 || len(f.reasoning) > 0) && rec.Model != "endpoint" {
				return configError(fmt.Errorf("--model and --reasoning: run %s plays the %s model's script, which names no model", filepath.Base(dir), rec.Model))
			}
			rec.Models = append(rec.Models, f.models...)
			rec.Reasoning = append(rec.Reasoning, f.reasoning...)
			if err := applyReasoning(cfg, rec.Reasoning); err != nil {
				return err
			}
			if err := applyModels(cfg, rec.Models); err != nil {
				return err
			}
			// The policy the run started with ("" is the built-in one).
			f.policy, f.unattended, cfg = rec.Policy, rec.Unattended, withoutPolicy(cfg)
			if f.sandbox == "" {
				f.sandbox = rec.Sandbox
			}
			model, closeModel, err := modelOf(rec, cfg)
			if err != nil {
				return err
			}
			defer closeModel()
			return runGoal(cmd.Context(), io, f, cfg, filepath.Dir(dir), "", model, rec, dir)
		},
	}
	f.modelFlags(cmd)
	f.sandboxFlag(cmd)
	f.output(cmd)
	return cmd
}

// withoutPolicy is cfg without its policy key, so that an empty --policy
// means the built-in policy.
func withoutPolicy(cfg *config.File) *config.File {
	c := *cfg
	c.Policy = ""
	return &c
}

// modelOf builds the model rec names: the demo's script or a script file
// ("demo", "script") behind the loopback endpoint, else the endpoint of cfg
// and the environment. closeModel releases it.
func modelOf(rec runRecord, cfg *config.File) (model llm.Model, closeModel func(), err error) {
	if rec.Model == "demo" || rec.Model == "script" {
		m, err := scriptModel(rec)
		if err != nil {
			return nil, nil, err
		}
		return m, m.Close, nil
	}
	if model, err = endpointModel(cfg); err != nil {
		return nil, nil, err
	}
	return model, func() {}, nil
}

// scriptModel is the demo's script, or the TRIO_SCRIPT file, behind the
// loopback endpoint.
func scriptModel(rec runRecord) (*demo.Endpoint, error) {
	var s *llm.Scripted
	var err error
	if rec.Model == "demo" {
		s, err = demo.Model()
	} else {
		s, err = llm.LoadScript(rec.Script)
	}
	if err != nil {
		return nil, configError(err)
	}
	m, err := demo.ServeScript(s)
	if err != nil {
		return nil, failure(err)
	}
	return m, nil
}

// readGoal is --goal or the --goal-file's text, at most limit bytes (0:
// the agent's default) of UTF-8; a larger file is refused from its size,
// without reading it.
func readGoal(f *runFlags, limit int) (string, error) {
	if f.goal != "" && f.goalFile != "" {
		return "", configError(errors.New("give --goal TEXT or --goal-file FILE, not both"))
	}
	if limit <= 0 {
		limit = agent.DefaultMaxGoalBytes
	}
	goal, what := f.goal, "--goal"
	if f.goalFile != "" {
		what = "--goal-file " + f.goalFile
		b, err := readGoalFile(f.goalFile, limit)
		if err != nil {
			return "", configError(fmt.Errorf("--goal-file: %w", err))
		}
		goal = string(b)
	}
	if len(goal) > limit {
		return "", configError(fmt.Errorf("%s: the goal is %d bytes, more than the limit of %d (budgets.max_goal_bytes in trio.yaml)", what, len(goal), limit))
	}
	if !utf8.ValidString(goal) || strings.ContainsRune(goal, 0) {
		return "", configError(fmt.Errorf("%s: the goal is not UTF-8 text (a binary file?)", what))
	}
	if strings.TrimSpace(goal) == "" {
		if f.goalFile != "" {
			return "", configError(fmt.Errorf("--goal-file %s is empty", f.goalFile))
		}
		return "", configError(errors.New("no goal: give --goal TEXT or --goal-file FILE"))
	}
	return goal, nil
}

// readLimited reads path when it holds at most limit bytes; a larger file
// is an error giving its size, and is not read.
func readLimited(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > int64(limit) {
		return nil, fmt.Errorf("%s is %d bytes, more than the goal limit of %d (budgets.max_goal_bytes in trio.yaml)", path, fi.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err == nil && len(b) > limit {
		err = fmt.Errorf("%s grew past the goal limit of %d bytes while read", path, limit)
	}
	return b, err
}

// runGoal runs goal (or resumes the run in resumeDir) and turns the report
// into an exit code.
func runGoal(ctx context.Context, io stdio, f *runFlags, cfg *config.File, runs, goal string, model llm.Model, rec runRecord, resumeDir string) error {
	pol, polPath, err := loadPolicy(f.policy, cfg, f.unattended)
	if err != nil {
		return err
	}
	rec.Policy = abs(polPath)
	prog := newProgress(io.err, io.out, f.quiet, f.json)
	// Before anything they name is loaded or started (control.go).
	ws := pinWorkspace(f, pol.Workspace())
	if resumeDir != "" {
		if st, err := agent.Inspect(resumeDir); err == nil {
			ws = st.Workspace
		}
	}
	control := controlFiles(cfg, polPath, ws)
	if err := pinControl(ws, control, f.trust, prog); err != nil {
		return err
	}

	// Ctrl-C (or SIGTERM) cancels the run, which checkpoints and stops; a
	// second Ctrl-C kills the process the usual way.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)

	tel, err := telemetryFor(cfg, rec, prog)
	if err != nil {
		return err
	}
	defer flushTelemetry(tel, prog)
	opts := append(agentOptions(cfg, workerModelName(cfg)),
		agent.WithPolicy(pol), agent.WithSandboxConfig(sandboxConfig(f.sandbox, cfg)),
		agent.WithObserver(prog.event), agent.WithObserver(tel.Observe), agent.WithControlFiles(control...), agent.WithWorkspaceControlFiles(workspaceConfig))
	var asker policy.Confirmer
	if cf := confirmerFor(io, pol, polPath != "", prog); cf != nil {
		defer cf.Close()
		opts = append(opts, agent.WithConfirmer(cf))
		asker = cf
	}
	ext, closeExt, err := extensionOptions(ctx, cfg, asker, prog.warn)
	defer closeExt()
	if err != nil {
		return err
	}
	opts = append(opts, ext...)

	var rep *agent.Report
	if resumeDir != "" {
		// A --model given to this resume is kept for the next one.
		if md := rec.modelMetadata(); len(md) > 0 {
			opts = append(opts, agent.WithMetadata(md))
		}
		rep, err = agent.Resume(ctx, resumeDir, model, nil, opts...)
		if errors.Is(err, agent.ErrRunFinished) && rep != nil {
			fmt.Fprintf(io.err, "trio: run %s already finished (%s); nothing to resume\n", filepath.Base(resumeDir), rep.Reason)
			prog.report(rep, resumeDir)
			return &exitError{code: exitCode(rep.Reason)}
		}
	} else {
		// The workspace is --workspace, else the agent's default: the
		// policy's when it names one, else runs/<run-id>/workspace.
		if f.workspace != "" {
			opts = append(opts, agent.WithWorkspace(f.workspace))
		} else if ws := pol.Workspace(); ws != "" && ws != "." {
			// Not silently: a second run would find the first one's files.
			fmt.Fprintf(io.err, "trio: building in %s, the policy's workspace (workspace: %s in %s); --workspace chooses another\n", abs(ws), ws, policyName(polPath))
		}
		if f.tests != "" {
			opts = append(opts, agent.WithTests(f.tests, f.withDesigned))
		}
		if f.reuse {
			opts = append(opts, agent.WithReuseWorkspace())
			prog.printf("trio: --reuse-workspace: building on the files already in the workspace; the diff starts from them\n")
		}
		opts = append(opts, agent.WithRunsDir(runs), agent.WithMetadata(rec.metadata()))
		var a *agent.Agent
		a, err = agent.New(model, nil, opts...)
		if err == nil {
			rep, err = a.Run(ctx, goal)
		}
	}
	var mcpErr *agent.MCPStartError
	switch {
	case err == nil:
	case errors.As(err, &mcpErr):
		// A server of trio.yaml that the policy refused, or that did not
		// start in the sandbox: the configuration's to fix.
		key := "mcp.servers." + mcpErr.Server
		if s, ok := cfg.MCP.Servers[mcpErr.Server]; ok && s.Key != "" {
			key = s.Key // mcpServers.<name>, or the .mcp.json's
		}
		return configError(fmt.Errorf("%s: %s: %w", cfg.Path, key, err))
	case errors.Is(err, agent.ErrControlChanged):
		return configError(fmt.Errorf("%w\n  Check the file; if the change is yours, run again with --trust-config", err))
	case errors.Is(err, sandbox.ErrUnavailable), errors.Is(err, agent.ErrNoIsolation):
		return configError(withLocalAdvice(err))
	case errors.Is(err, agent.ErrWorkspaceUsed):
		return configError(fmt.Errorf("%w\n  To build on those files: trio run --reuse-workspace; or give another --workspace", err))
	case errors.Is(err, agent.ErrInvalidOption), errors.Is(err, sandbox.ErrConfig),
		errors.Is(err, agent.ErrInvalidInput), errors.Is(err, agent.ErrLocked):
		return configError(err)
	default:
		return failure(err)
	}
	prog.report(rep, rep.RunDir)
	code := exitCode(rep.Reason)
	if code == exitOK {
		return nil
	}
	return &exitError{code: code}
}

// exitCode maps a stop reason to the command's exit code.
func exitCode(r agent.StopReason) int {
	switch {
	case r == agent.StopCompleted:
		return exitOK
	case r == agent.StopInterrupted:
		return exitInterrupted
	case r.Budget():
		return exitBudget
	}
	return exitFailed
}

// confirmerFor returns the terminal prompt when a person can answer: an
// interactive policy and a terminal on stdin. Otherwise nil: ask means deny.
// The note that nobody can answer is shown for a policy file only: the
// built-in policy asks about nothing.
func confirmerFor(io stdio, pol *policy.Policy, fromFile bool, prog *progress) *ttyConfirmer {
	if pol.Unattended() {
		return nil
	}
	if io.in == nil || !term.IsTerminal(int(io.in.Fd())) {
		if !fromFile {
			return nil
		}
		prog.printf("trio: note: stdin is not a terminal, so nobody can be asked: every action the policy marks \"ask\" is denied (--unattended makes that explicit)\n")
		return nil
	}
	cf, err := openTTYConfirmer()
	if err != nil {
		prog.warn(fmt.Sprintf("cannot open the terminal for confirmations (%v): every ask is denied", err))
		return nil
	}
	return cf
}

// newDemoFolder creates ./trio-demo, or trio-demo-2, -3... when taken.
func newDemoFolder() (string, error) {
	for i := 1; i < 1000; i++ {
		name := "trio-demo"
		if i > 1 {
			name = fmt.Sprintf("trio-demo-%d", i)
		}
		err := os.Mkdir(name, 0o755)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("demo folder: %w", err)
		}
	}
	return "", errors.New("demo folder: trio-demo … trio-demo-999 all exist")
}

// removeEmpty removes the folders that are empty, in order.
func removeEmpty(dirs ...string) {
	for _, d := range dirs {
		if entries, err := os.ReadDir(d); err == nil && len(entries) == 0 {
			os.Remove(d)
		}
	}
}

func abs(p string) string {
	if p == "" {
		return ""
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// withLocalAdvice adds the command's way to the local sandbox to a
// library error that names the local kind in the library's words.
func withLocalAdvice(err error) error {
	return fmt.Errorf("%w\n  To run commands without isolation instead: --sandbox local, or in trio.yaml: sandbox: {kind: local}", err)
}

// policyName is the policy file for messages ("the built-in policy" for "").
func policyName(path string) string {
	if path == "" {
		return "the built-in policy"
	}
	return path
}
