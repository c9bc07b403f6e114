package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trioagent/trio/critic"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/planner"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/summarizer"
	"github.com/trioagent/trio/tools"
)

// cursorModel is a model whose position can be saved and restored, such as
// llm's scripted model.
type cursorModel interface {
	Cursor() map[string]int
	Seek(map[string]int) error
}

// run is one execution (or resumed execution) of a goal.
type run struct {
	a   *Agent
	cfg config
	dir string
	st  *state

	model    llm.Model // metered
	rawModel llm.Model
	sb       *timedSandbox
	ownSB    sandbox.Sandbox // closed at the end when the run made it
	choice   sandboxChoice
	// pathRules is the policy whose path rules the sandbox lays out: the
	// base policy, then the Worker's (the tests folder read-only).
	pathRules atomic.Pointer[policy.Policy]
	ws        *tools.Workspace
	reg       *tools.Registry
	// mcpConns are the WithMCPServers servers of this session, and
	// mcpExtra their tools with the roles they are for.
	mcpConns []*tools.MCPConn
	mcpExtra []roleTool

	criticGate *tools.Gate
	workerGate *tools.Gate
	workerView tools.View
	workerDefs []llm.ToolDef // workerView's, built once
	critic     *critic.Critic
	// win is the Worker's token-budgeted history; it exists once the plan
	// does, and every Worker message goes through it (appendHistory).
	win *summarizer.Window
	// counter counts tokens for the window and for calls whose usage the
	// endpoint did not report (it remembers the Worker's tool definitions,
	// sent on every turn).
	counter *summarizer.Counter

	wal      *wal
	histOut  *jsonl
	traceOut *jsonl
	auditOut *jsonl

	mu      sync.Mutex // guards usage and counters updated from observers
	session time.Time
	histErr error // a failed history append; the next checkpoint fails
	// lastModelErr is the latest failed model call, to tell a Critic
	// failure caused by the model from one caused by the sandbox.
	lastModelErr error
	// lastRecord is the gate's record of the latest call.
	lastRecord *tools.Record
	// ended is the run context's Err, set once the loop starts: a call
	// that fails after it is non-nil was cut off by the run's end.
	ended func() error
	// infraErr is a failure of the run's machinery, returned by Run too.
	infraErr error
	// hookStop is a hook's "continue": false (under mu), which stops the
	// run after the call it ran for.
	hookStop *stop
	// Times of earlier sessions, to which this session's are added.
	baseElapsed, baseSandbox time.Duration
	// healed says what was cut from the run folder's files when it opened.
	healed []string
	// clk times the session's start, up to its first model call.
	clk *setupClock
	// refused is the latest model call the meter refused to send (over
	// the token budget or the context window); admitted calls clear it.
	refused *stop
	// critic tracks the Critic's calls of the current check in calls.jsonl.
	criticLog criticWAL
	// unified is the run's diff as report() last computed it, for report.md.
	unified string
}

// stop ends the run with a reason; it travels as an error through the loop.
type stop struct {
	reason StopReason
	detail string
}

func (s *stop) Error() string { return string(s.reason) + ": " + s.detail }

func stopf(r StopReason, format string, args ...any) error {
	return &stop{reason: r, detail: fmt.Sprintf(format, args...)}
}

// execute runs a session of the run in dir; the caller holds the run's and
// the workspace's locks. healed are the repairs already made to the run
// folder (history.jsonl cut back), for the trace.
//
// clk has timed the session's start so far (from Run or Resume being
// called), and times the rest of it up to the first model call.
func (a *Agent) execute(ctx context.Context, dir string, st *state, resumed bool, choice sandboxChoice, healed []string, clk *setupClock) (*Report, error) {
	r := &run{a: a, cfg: a.cfg, dir: dir, st: st, rawModel: a.model, session: clk.began, clk: clk,
		baseElapsed: st.Elapsed, baseSandbox: st.SandboxTime, choice: choice, healed: healed}
	clk.attach(r)
	defer r.close()
	r.model = meteredModel{inner: a.model, r: r}
	if resumed {
		// Before anything checkpoints: the checkpoint saves the cursor.
		if cm, ok := a.model.(cursorModel); ok && st.Cursor != nil {
			if err := cm.Seek(st.Cursor); err != nil {
				return nil, fmt.Errorf("agent: resume %s: restore the model's script position %v: %w", dir, st.Cursor, err)
			}
		}
	}
	// Counted before open's checkpoint, so that a session killed early is
	// counted too (and the Critic's call ids, which carry the session
	// number, stay unique).
	st.Sessions++
	if err := r.open(ctx); err != nil {
		return nil, err
	}
	if resumed {
		// The totals so far, for progress lines that count from them.
		tot := totalUsage(st.Usage)
		r.emit(Event{Kind: EventRunResumed, Message: resumeText(st), RunDir: dir,
			Tokens: Tokens{TotalPrompt: tot.PromptTokens, TotalCompletion: tot.CompletionTokens}})
	} else {
		r.emit(Event{Kind: EventRunStarted, Message: st.Goal, RunDir: dir})
	}
	r.traceHealed()
	if w := r.sandboxWarning(); w != "" {
		r.emit(Event{Kind: EventWarning, Message: w})
	}

	// A wall-time budget is a deadline on a child context; its expiry is
	// told apart from the caller's cancellation below.
	left := r.cfg.budgets.MaxWallTime - st.Elapsed
	runCtx, cancel := context.WithTimeout(ctx, max(left, time.Millisecond))
	defer cancel()

	r.ended = runCtx.Err
	err := r.loop(runCtx)
	reason, detail := r.classify(ctx, runCtx, err)
	return r.finish(reason, detail)
}

// classify turns the loop's error into a stop reason.
func (r *run) classify(parent, runCtx context.Context, err error) (StopReason, string) {
	var s *stop
	if ref := r.refusal(err); ref != nil {
		return ref.reason, ref.detail
	}
	switch {
	case err == nil:
		return StopCompleted, ""
	case errors.As(err, &s):
		return s.reason, s.detail
	case parent.Err() != nil:
		return StopInterrupted, context.Cause(parent).Error()
	case runCtx.Err() != nil:
		return StopBudgetTime, fmt.Sprintf("wall time %s spent", r.cfg.budgets.MaxWallTime)
	}
	// The run's own machinery failed (a checkpoint could not be written...).
	r.infraErr = err
	return StopSandboxError, err.Error()
}

// open prepares the run folder, the workspace, the sandbox and the gates
// that do not need the plan.
func (r *run) open(ctx context.Context) error {
	if err := r.openFiles(); err != nil {
		return err
	}
	r.clk.flush()
	if err := r.keepUserTests(); err != nil {
		return err
	}
	if err := os.MkdirAll(r.st.Workspace, 0o755); err != nil {
		return fmt.Errorf("agent: create workspace: %w", err)
	}
	// Before the sandbox lays out the path rules: Trio's own files in the
	// workspace are out of the Worker's reach (control.go).
	runDirIn, err := r.protectControl()
	if err != nil {
		return err
	}
	r.clk.mark("run folder's records opened")
	limits := policyLimits(r.cfg.policy.Limits())
	sb, owned, err := r.openSandbox(ctx, limits)
	if err != nil {
		return err
	}
	r.ownSB = owned
	r.clk.mark("sandbox " + sb.Info().Kind + " opened")
	if runDirIn != "" && !sb.Info().Isolated {
		return optionError{fmt.Errorf("agent: the run folder %s is inside the workspace (%s), and the %s sandbox cannot hide it from commands: choose a runs folder outside the workspace (WithRunsDir; trio --runs-dir), or an isolating sandbox (containerd, userns)", r.dir, runDirIn, sb.Info().Kind)}
	}
	r.sb = &timedSandbox{Sandbox: sb}
	// The kind, and what it enforces when it says: report and inspect
	// show this line.
	r.st.Sandbox = sb.Info().Summary()
	if r.ws, err = tools.OpenWorkspace(r.st.Workspace, r.sb, limits); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	r.ws.MaxFile = r.cfg.policy.Limits().File
	r.reg, err = runRegistry(r.ws, r.a.reg)
	if err == nil {
		err = r.registerRoleTools()
	}
	if err == nil {
		r.clk.mark("tools ready")
		err = r.connectMCP(ctx)
	}
	if err != nil {
		return err
	}
	if n := len(r.mcpConns); n > 0 {
		r.clk.mark(plural(n, "MCP server", "MCP servers") + " started")
	}
	// Loading the tokenizer takes about a second; it began with the
	// session (setupClock), beside the snapshot and the sandbox.
	if r.counter, err = r.newCounter(); err != nil {
		return err
	}
	r.clk.mark("token counter ready")
	r.criticGate = r.newGate(r.cfg.policy, RoleCritic)
	if r.st.Plan != nil {
		if err := r.planReady(); err != nil {
			return err
		}
	}
	if err := r.restoreOnResume(); err != nil {
		return err
	}
	if err := r.checkpoint(); err != nil {
		return err
	}
	r.clk.mark("checkpoint written")
	return nil
}

// openFiles opens the run folder's JSONL files for appending, each healed
// first (cut back to its last complete record; see healJSONL). A file
// damaged before its last record stops the session here, before the
// sandbox opens or anything is appended.
func (r *run) openFiles() error {
	var cut int64
	var err error
	note := func(name string) {
		if cut > 0 {
			r.healed = append(r.healed, fmt.Sprintf("%s: cut a torn last record (%s)", name, byteSize(cut)))
		}
	}
	if r.traceOut, cut, err = openJSONL(filepath.Join(r.dir, TraceFile)); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	note(TraceFile)
	if r.auditOut, cut, err = openJSONL(filepath.Join(r.dir, AuditFile)); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	note(AuditFile)
	if r.wal, cut, err = openWAL(filepath.Join(r.dir, CallsFile)); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	note(CallsFile)
	if r.histOut, cut, err = openJSONL(filepath.Join(r.dir, HistoryFile)); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	note(HistoryFile)
	return nil
}

// traceHealed records the repairs made to the run folder when it opened.
func (r *run) traceHealed() {
	for _, h := range r.healed {
		r.trace(TraceEntry{Kind: "healed", Detail: h})
		r.emit(Event{Kind: EventWarning, Message: "run folder healed: " + h})
	}
}

func (r *run) close() {
	r.closeMCP()
	if r.ws != nil {
		r.ws.Close()
	}
	if r.ownSB != nil {
		r.ownSB.Close()
	}
	if r.wal != nil {
		r.wal.out.close()
	}
	r.histOut.close()
	r.traceOut.close()
	r.auditOut.close()
}

// runRegistry holds the built-ins working in ws plus the embedder's tools.
func runRegistry(ws *tools.Workspace, user *tools.Registry) (*tools.Registry, error) {
	reg, err := tools.NewRegistry(tools.Builtins(ws)...)
	if err != nil {
		return nil, fmt.Errorf("agent: built-in tools: %w", err)
	}
	if err := reg.Register(finishStep()); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	for _, name := range user.Names() {
		t, _ := user.Tool(name)
		if err := reg.Register(t); err != nil {
			return nil, fmt.Errorf("agent: custom tool %q: %w (built-in names are reserved)", name, err)
		}
	}
	return reg, nil
}

// roleNames returns the tool names of a role: the configured subset, or
// the default.
func (r *run) roleNames(role string) []string {
	if names, ok := r.cfg.roleTools[role]; ok {
		return r.withRoleTools(role, names)
	}
	if role == RoleWorker {
		return r.withRoleTools(role, r.reg.Names()) // the built-ins, finish_step and the registry's
	}
	return r.withRoleTools(role, DefaultRoleTools(role))
}

// planReady builds what needs the plan: the Worker's gate (the tests folder
// read-only), its tool view, its window and the Critic.
func (r *run) planReady() error {
	plan := *r.st.Plan
	workerPolicy := r.cfg.policy.WithReadOnly(plan.TestsFolder() + "/**")
	r.pathRules.Store(workerPolicy)
	r.workerGate = r.newGate(workerPolicy, RoleWorker)
	names := r.roleNames(RoleWorker)
	hasFinish := false
	for _, n := range names {
		hasFinish = hasFinish || n == FinishStepName
	}
	if !hasFinish {
		names = append(append([]string(nil), names...), FinishStepName)
	}
	v, err := r.reg.View(names...)
	if err != nil {
		return fmt.Errorf("agent: worker tools: %w", err)
	}
	r.workerView = v
	r.workerDefs = v.Definitions()
	cv, err := r.reg.View(r.roleNames(RoleCritic)...)
	if err != nil {
		return fmt.Errorf("agent: critic tools: %w", err)
	}
	if cv, err = r.criticView(cv); err != nil {
		return err
	}
	if r.critic, err = r.newCritic(cv); err != nil {
		return err
	}
	r.win, err = r.newWindow()
	return err
}

// checkpoint writes state.json atomically.
func (r *run) checkpoint() error {
	return r.checkpointCursor(true)
}

// checkpointCursor writes state.json; the model's cursor is saved only at
// points consistent with the rest of the state (an interrupted Critic or
// Planner call must be asked again on resume, from the same position).
func (r *run) checkpointCursor(withCursor bool) error {
	st := r.st
	if r.histErr != nil {
		return fmt.Errorf("agent: checkpoint: history: %w", r.histErr)
	}
	if err := r.histOut.sync(); err != nil {
		return fmt.Errorf("agent: checkpoint: history: %w", err)
	}
	st.Updated = time.Now().UTC()
	r.stampTimes()
	if cm, ok := r.rawModel.(cursorModel); ok && withCursor {
		st.Cursor = cm.Cursor()
	}
	histLen := st.HistoryLen
	if r.win != nil {
		// The window's state and the history length are taken together,
		// after the history is durable, so that they describe the same
		// messages on resume.
		st.HistoryLen = r.win.Len()
		ws := r.win.State()
		st.Window = &ws
	}
	b, err := encodeState(st)
	if err != nil {
		return fmt.Errorf("agent: encode checkpoint: %w", err)
	}
	if err := saveCheckpoint(r.dir, b, st.HistoryLen != histLen); err != nil {
		return fmt.Errorf("agent: checkpoint: %w", err)
	}
	if err := r.afterCheckpoint(); err != nil {
		return fmt.Errorf("agent: checkpoint hook: %w", err)
	}
	return nil
}

// stampTimes adds this session's wall and sandbox time to the earlier
// sessions'.
func (r *run) stampTimes() {
	r.st.Elapsed = r.baseElapsed + time.Since(r.session)
	if r.sb != nil {
		r.st.SandboxTime = r.baseSandbox + r.sb.spent()
	}
}

// setPhase records a phase change durably.
func (r *run) setPhase(p phase) error {
	r.st.Phase = p
	r.trace(TraceEntry{Kind: "phase", Phase: string(p), Step: r.st.Step + 1, Repair: r.st.RepairRound})
	return r.checkpoint()
}

// emit stamps an event and hands it to every observer.
func (r *run) emit(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	ev.RunID = r.st.RunID
	if r.st.Plan != nil && ev.Steps == 0 {
		ev.Steps = len(r.st.Plan.Steps)
	}
	for _, o := range r.cfg.observers {
		o(ev)
	}
}

func (r *run) addUsage(role string, u llm.Usage, estimated bool, d time.Duration, err error) RoleUsage {
	r.mu.Lock()
	defer r.mu.Unlock()
	ru := r.st.Usage[role]
	ru.Calls++
	if estimated {
		ru.Estimated++
	}
	ru.PromptTokens += u.PromptTokens
	ru.CompletionTokens += u.CompletionTokens
	ru.Duration += d
	if err != nil {
		ru.Errors++
	}
	r.st.Usage[role] = ru
	r.st.ModelTime += d
	return totalUsage(r.st.Usage)
}

// totalUsage sums the usage of every role.
func totalUsage(roles map[string]RoleUsage) RoleUsage {
	var tot RoleUsage
	for _, v := range roles {
		tot.Calls += v.Calls
		tot.PromptTokens += v.PromptTokens
		tot.CompletionTokens += v.CompletionTokens
		tot.Errors += v.Errors
		tot.Estimated += v.Estimated
		tot.Duration += v.Duration
	}
	return tot
}

// totalTokens is prompt plus completion tokens of every role so far.
func (r *run) totalTokens() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := totalUsage(r.st.Usage)
	return t.PromptTokens + t.CompletionTokens
}

// resumeText says where a resumed run picks up: the plan step while
// building, the repair round while repairing, else the phase.
func resumeText(st *state) string {
	switch {
	case st.Phase == phaseRepair:
		return fmt.Sprintf("resuming at repair round %d", st.RepairRound)
	case st.Phase == phaseBuild && st.Plan != nil && st.Step < len(st.Plan.Steps):
		return fmt.Sprintf("resuming at phase build, step %d of %d", st.Step+1, len(st.Plan.Steps))
	}
	return fmt.Sprintf("resuming at phase %s", st.Phase)
}

// loop runs the phases from wherever the state is.
func (r *run) loop(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s := r.hookStopped(); s != nil {
			return s
		}
		var err error
		switch r.st.Phase {
		case phasePlan:
			err = r.plan(ctx)
		case phaseDesignTests:
			err = r.designTests(ctx, nil)
		case phaseBuild:
			err = r.build(ctx)
		case phaseCheck:
			err = r.check(ctx)
		case phaseRepair:
			err = r.repair(ctx)
		case phaseTestRepair:
			err = r.designTests(ctx, r.st.Findings)
		case phaseDone:
			return nil
		default:
			return fmt.Errorf("agent: %s: unknown phase %q (written by another version?)", filepath.Join(r.dir, StateFile), r.st.Phase)
		}
		if err != nil {
			return err
		}
	}
}

func (r *run) plan(ctx context.Context) error {
	opts := []planner.Option{planner.WithObserver(r.notePlanRejection)}
	if p, ok := r.cfg.prompts[RolePlanner]; ok {
		opts = append(opts, planner.WithPrompt(p))
	}
	// The starting workspace is the start snapshot's (never stray, however
	// many files): nothing of it goes into the checkpoint.
	listing, err := r.startListing()
	if err != nil {
		return fmt.Errorf("agent: list workspace: %w", err)
	}
	if err := r.loadInstructions(); err != nil {
		return err
	}
	r.clk.mark("the workspace's listing and instructions read for the planner")
	plan, err := planner.New(r.model, opts...).Plan(ctx, r.plannerGoal(), listing)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		if errors.Is(err, planner.ErrInvalidPlan) {
			r.addPlanRejection(err.Error())
			return stopf(StopPlanInvalid, "%v", err)
		}
		return stopf(StopModelError, "%v", err)
	}
	r.st.Plan = &plan
	if err := r.planReady(); err != nil {
		return err
	}
	r.trace(TraceEntry{Kind: "plan", Plan: &plan})
	r.emit(Event{Kind: EventPlanReady, Role: RolePlanner, Steps: len(plan.Steps), Message: fmt.Sprintf("%s; tests in %s; test command %q", plural(len(plan.Steps), "step", "steps"), plan.TestsFolder(), plan.TestCommand)})
	return r.setPhase(phaseDesignTests)
}

func (r *run) build(ctx context.Context) error {
	plan := r.st.Plan
	for r.st.Step < len(plan.Steps) {
		step := plan.Steps[r.st.Step]
		if !r.st.SegmentStarted {
			text, err := render(stepTmpl, map[string]any{"Index": r.st.Step + 1, "Total": len(plan.Steps), "Step": step})
			if err != nil {
				return err
			}
			r.startSegment(text)
			r.emit(Event{Kind: EventStepStarted, Role: RoleWorker, Step: r.st.Step + 1, Message: step.Title})
			if err := r.checkpoint(); err != nil {
				return err
			}
		}
		if err := r.worker(ctx); err != nil {
			return err
		}
		r.emit(Event{Kind: EventStepFinished, Role: RoleWorker, Step: r.st.Step + 1, Message: lastNote(r.st.StepNotes)})
		r.st.Step++
		r.st.SegmentStarted = false
		if err := r.checkpoint(); err != nil {
			return err
		}
	}
	return r.setPhase(phaseCheck)
}

// startSegment begins a step or a repair round with its prompt.
func (r *run) startSegment(prompt string) {
	msg := llm.Message{Role: llm.RoleUser, Content: prompt}
	r.appendHistory(msg)
	r.st.SegmentStarted = true
	r.st.SegmentTurns = 0
	r.st.StepFinished = false
}

// appendHistory adds Worker messages to the window, history.jsonl (made
// durable by the next checkpoint) and the trace.
func (r *run) appendHistory(msgs ...llm.Message) {
	r.win.Append(msgs...)
	for i := range msgs {
		if err := r.histOut.write(msgs[i], false); err != nil && r.histErr == nil {
			r.histErr = err
		}
		r.trace(TraceEntry{Kind: "message", Role: RoleWorker, Message: &msgs[i]})
	}
}

func (r *run) repair(ctx context.Context) error {
	if !r.st.SegmentStarted {
		tmpl := repairTmpl
		if r.cfg.repairTmpl != nil {
			tmpl = r.cfg.repairTmpl
		}
		text, err := render(tmpl, map[string]any{
			"Round": r.st.RepairRound, "MaxRounds": r.cfg.budgets.MaxRepairRounds,
			"Findings": findingsText(*r.st.Findings), "TestsDir": r.st.Plan.TestsFolder(),
		})
		if err != nil {
			return err
		}
		if advice := adviceFor(*r.st.Findings); advice != "" {
			text += "\n\n" + advice
		}
		r.startSegment(text)
		r.st.AnalysisPending = true
		r.st.AnalysisReminded = false
		r.emit(Event{Kind: EventRepairStarted, Role: RoleWorker, Repair: r.st.RepairRound, Verdict: string(r.st.Findings.Verdict), Message: oneLine(findingsText(*r.st.Findings), 300)})
		if err := r.checkpoint(); err != nil {
			return err
		}
	}
	if err := r.worker(ctx); err != nil {
		return err
	}
	r.st.SegmentStarted = false
	return r.setPhase(phaseCheck)
}

// finish writes the final checkpoint and the report.
func (r *run) finish(reason StopReason, detail string) (*Report, error) {
	st := r.st
	st.Reason, st.Detail = reason, detail
	if !reason.Resumable() {
		st.Phase = phaseDone
	}
	r.stampTimes()
	rep := r.report()
	r.trace(TraceEntry{Kind: "stop", Reason: reason, Detail: detail})
	r.stopHooks(reason, detail)
	cerr := r.checkpointCursor(!reason.Resumable())
	werr := rep.write(r.dir, r.unified)
	// Observers see run_finished once report.json is on disk.
	r.emit(Event{Kind: EventRunFinished, Reason: reason, Verdict: rep.Status, Message: reason.Explain(),
		Duration: rep.Metrics.WallTime, Tokens: Tokens{TotalPrompt: rep.Metrics.PromptTokens, TotalCompletion: rep.Metrics.CompletionTokens},
		Cost: rep.Metrics.costOf()})
	if werr != nil {
		return rep, fmt.Errorf("agent: %w", werr)
	}
	if cerr != nil {
		return rep, cerr
	}
	if r.infraErr != nil {
		return rep, fmt.Errorf("agent: run %s: %w", st.RunID, r.infraErr)
	}
	return rep, nil
}

func (r *run) report() *Report {
	st := r.st
	abs, _ := filepath.Abs(r.dir)
	rep := &Report{
		RunID: st.RunID, RunDir: abs, Goal: st.Goal, Workspace: st.Workspace,
		Status: statusOf(st.Reason), Reason: st.Reason, Explanation: st.Reason.Explain(), Detail: st.Detail,
		Plan: st.Plan, PlanRejections: st.PlanRejections, SuiteVersion: st.SuiteVersion, Findings: st.Findings, Analyses: st.Analyses,
		Started: st.Started, Finished: time.Now().UTC(),
		Sandbox: st.Sandbox, Phase: string(st.Phase), Metadata: maps.Clone(st.Metadata),
	}
	rep.Files, _ = workspaceFiles(st.Workspace, 2000)
	rep.Changes, rep.ChangesNote, r.unified = changesOf(r.dir, st.Workspace)
	rep.Instructions = st.Instructions.Paths()
	m := &rep.Metrics
	m.Completed = st.Reason == StopCompleted
	m.FirstPass = st.FirstPass != nil && *st.FirstPass
	m.RepairRounds = st.RepairRound
	m.TestRepairs = st.TestRepairs
	m.ReviewRounds = st.ReviewRounds
	m.Checks = st.Checks
	if st.Plan != nil {
		m.Steps = len(st.Plan.Steps)
		m.StepsDone = min(st.Step, m.Steps)
	}
	m.WorkerTurns = st.TotalTurns
	m.Roles = maps.Clone(st.Usage)
	if m.Roles == nil {
		m.Roles = map[string]RoleUsage{}
	}
	tot := totalUsage(st.Usage)
	m.ModelCalls, m.PromptTokens, m.CompletionTokens = tot.Calls, tot.PromptTokens, tot.CompletionTokens
	m.Counters = st.Counters
	m.WallTime = st.Elapsed
	m.ModelTime = st.ModelTime
	m.ToolTime = st.ToolTime
	m.SandboxTime = st.SandboxTime
	m.StartTime = st.StartTime
	m.OtherTime = max(0, m.WallTime-m.StartTime-m.ModelTime-m.ToolTime)
	m.Sessions = st.Sessions
	return rep
}

func lastNote(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	return notes[len(notes)-1]
}

// policyLimits converts the policy's limits for the sandbox.
func policyLimits(l policy.Limits) sandbox.Limits {
	return sandbox.Limits{Timeout: l.Timeout, Memory: l.Memory, CPUs: l.CPUs, Pids: l.Pids, Output: l.Output, Disk: l.Disk, Network: l.Network}
}
