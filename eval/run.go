package eval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
)

// Files and folders of an eval's output folder.
const (
	ReportJSON = "eval.json"
	ReportMD   = "eval.md"
	TasksDir   = "tasks" // tasks/<id>/sample-<k>/{runs,workspace,judge,result.json}
	ResultFile = "result.json"
	// ProvenanceDir keeps the provenance of every configuration whose
	// results are in the folder, as <config hash>.json.
	ProvenanceDir = "provenance"
	lockFile      = "eval.lock"
)

// ErrMixed is wrapped when the output folder holds results of another
// configuration and the eval was not told to mix them (WithMix).
var ErrMixed = errors.New("eval output folder holds results of another configuration")

// SampleDir is the folder of a task's k-th run under out.
func SampleDir(out, id string, sample int) string {
	return filepath.Join(out, TasksDir, id, fmt.Sprintf("sample-%d", sample))
}

// ModelFunc returns the model a task's run uses and a function that
// releases it; it is called once per task run, possibly concurrently.
type ModelFunc func(ctx context.Context, t Task) (llm.Model, func(), error)

// ReplayScript is the task's replay script, parsed; an error when the task
// has none.
func ReplayScript(t Task) (*llm.Scripted, error) {
	if t.Replay == "" {
		return nil, fmt.Errorf("%w: task %s has no replay script (%s)", ErrInvalidSuite, t.ID, filepath.Join(t.Dir, ReplayFile))
	}
	s, err := llm.LoadScript(t.Replay)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSuite, err)
	}
	return s, nil
}

// EventKind names what an eval did.
type EventKind string

// The events of an eval.
const (
	EventTaskStarted  EventKind = "task_started"
	EventTaskFinished EventKind = "task_finished"
	// EventTaskSkipped is a task an earlier eval finished; Result is its.
	EventTaskSkipped EventKind = "task_skipped"
	// EventRun wraps one event of a task's run.
	EventRun          EventKind = "run_event"
	EventEvalFinished EventKind = "eval_finished"
)

// Event is one thing an eval did, for progress lines and JSON streams.
type Event struct {
	Time time.Time `json:"time"`
	Kind EventKind `json:"kind"`
	Task string    `json:"task,omitempty"`
	// Done and Total count finished (or skipped) tasks so far.
	Done   int          `json:"done,omitempty"`
	Total  int          `json:"total,omitempty"`
	Result *TaskResult  `json:"result,omitempty"`
	Run    *agent.Event `json:"run,omitempty"`
	Report *Report      `json:"report,omitempty"`
}

// Option configures an Evaluator.
type Option func(*config) error

type config struct {
	out       string
	parallel  int
	policy    *policy.Policy
	sandbox   agent.SandboxConfig
	budgets   agent.Budgets
	agentOpts []agent.Option
	observers []func(Event)
	prices    map[string]Price
	// modelPrices price a role by the model its replies came from, when
	// prices has nothing for the role.
	modelPrices map[string]Price
	samples     int
	seed        uint64
	resamples   int
	provenance  Provenance
	mix         bool
	remote      Remote
}

// WithOut sets the output folder (eval.json, eval.md, tasks/). Required.
func WithOut(dir string) Option {
	return func(c *config) error {
		if dir == "" {
			return errors.New("eval: WithOut: empty folder")
		}
		c.out = dir
		return nil
	}
}

// WithParallel sets how many tasks run at once; default DefaultParallel.
func WithParallel(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("eval: WithParallel(%d): want at least 1", n)
		}
		c.parallel = n
		return nil
	}
}

// WithPolicy sets the policy of every run; its limits also bound the
// hidden command. Default policy.Default().
func WithPolicy(p *policy.Policy) Option {
	return func(c *config) error {
		if p == nil {
			return errors.New("eval: WithPolicy: nil policy")
		}
		c.policy = p
		return nil
	}
}

// WithSandboxConfig says where runs and hidden tests run. Auto is decided
// once for the whole eval. Default auto.
func WithSandboxConfig(sc agent.SandboxConfig) Option {
	return func(c *config) error {
		c.sandbox = sc
		return nil
	}
}

// WithBudgets sets the budgets of every run; a task's own budgets override
// them field by field.
func WithBudgets(b agent.Budgets) Option {
	return func(c *config) error {
		c.budgets = b
		return nil
	}
}

// WithAgentOptions adds options to every run (prompts, window, tools...).
// The eval sets the run folder, run id, workspace, policy, sandbox and
// budgets itself, after these.
func WithAgentOptions(opts ...agent.Option) Option {
	return func(c *config) error {
		c.agentOpts = append(c.agentOpts, opts...)
		return nil
	}
}

// WithObserver adds a function that receives every Event. Events of
// different tasks arrive from different goroutines, one at a time.
func WithObserver(fn func(Event)) Option {
	return func(c *config) error {
		if fn == nil {
			return errors.New("eval: WithObserver: nil function")
		}
		c.observers = append(c.observers, fn)
		return nil
	}
}

// WithPrices sets token prices per role ("*" for every role without its
// own), for the cost metrics; without prices every cost is 0.
func WithPrices(p map[string]Price) Option {
	return func(c *config) error {
		c.prices = p
		return nil
	}
}

// WithModelPrices sets token prices per model name, for the roles that
// WithPrices leaves out: a role is priced by the model its replies came
// from.
func WithModelPrices(p map[string]Price) Option {
	return func(c *config) error {
		c.modelPrices = p
		return nil
	}
}

// WithSamples runs every task n times, each in a fresh workspace; default 1.
func WithSamples(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("eval: WithSamples(%d): want at least 1", n)
		}
		c.samples = n
		return nil
	}
}

// WithSeed seeds the bootstrap intervals; default DefaultSeed. The seed is
// recorded in eval.json.
func WithSeed(seed uint64) Option {
	return func(c *config) error {
		c.seed = seed
		return nil
	}
}

// WithProvenance gives what the caller knows of the eval's origin: the
// model source, the models and endpoints per role, temperature, the
// effective configuration and policy texts. The eval adds the budgets,
// prices, sandbox, Trio's build, the suite and the times, and computes
// the configuration hash.
func WithProvenance(p Provenance) Option {
	return func(c *config) error {
		c.provenance = p
		return nil
	}
}

// WithMix lets the eval keep results that an eval of another
// configuration left in the output folder (without it, Run refuses with
// ErrMixed); the report lists their configuration hashes.
func WithMix(mix bool) Option {
	return func(c *config) error {
		c.mix = mix
		return nil
	}
}

// Evaluator runs the tasks of a suite.
type Evaluator struct {
	models ModelFunc
	cfg    config

	mu   sync.Mutex // serialises observers and counts
	done int
}

// New returns an Evaluator whose runs get their models from models.
func New(models ModelFunc, opts ...Option) (*Evaluator, error) {
	if models == nil {
		return nil, errors.New("eval: New: nil ModelFunc")
	}
	e := &Evaluator{models: models}
	for _, o := range opts {
		if err := o(&e.cfg); err != nil {
			return nil, err
		}
	}
	if e.cfg.out == "" {
		return nil, errors.New("eval: no output folder (WithOut)")
	}
	if e.cfg.parallel == 0 {
		e.cfg.parallel = DefaultParallel(0)
	}
	if e.cfg.policy == nil {
		e.cfg.policy = policy.Default()
	}
	if e.cfg.samples == 0 {
		e.cfg.samples = 1
	}
	if e.cfg.seed == 0 {
		e.cfg.seed = DefaultSeed
	}
	if e.cfg.resamples == 0 {
		e.cfg.resamples = DefaultResamples
	}
	return e, nil
}

// DefaultParallel is the number of tasks to run at once on this machine:
// one per CPU, but no more than the available memory holds at perTask
// bytes each (the policy's memory limit; 1 GiB when 0), and at least one.
func DefaultParallel(perTask int64) int {
	if perTask <= 0 {
		perTask = 1 << 30
	}
	n := runtime.NumCPU()
	if avail := memAvailable(); avail > 0 {
		n = min(n, int(avail/perTask))
	}
	return max(n, 1)
}

// memAvailable reads MemAvailable from /proc/meminfo (0 when unknown).
func memAvailable() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// Run runs tasks of suite, at most the configured number at once, skipping
// those a previous eval in the same output folder finished (for the same
// task content), and writes eval.json and eval.md. A cancelled context
// stops the runs (their checkpoints are written), records the finished
// tasks and returns the report marked Interrupted with the context's
// error. A task whose run could not start is an error for the whole eval.
func (e *Evaluator) Run(ctx context.Context, suite *Suite, tasks []Task) (*Report, error) {
	out, err := filepath.Abs(e.cfg.out)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(out, TasksDir), 0o755); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	unlock, err := lock(filepath.Join(out, lockFile))
	if err != nil {
		return nil, err
	}
	defer unlock()

	if err := outsideWorkspaces(suite.Dir, out); err != nil {
		return nil, err
	}
	sc, err := e.resolveSandbox(ctx)
	if err != nil {
		return nil, err
	}
	isolated := sc.Kind != agent.SandboxLocal
	started := time.Now().UTC()
	prov := e.provenanceOf(suite, tasks, sc, started)
	mixed, err := otherConfigs(out, prov.ConfigHash)
	if err != nil {
		return nil, err
	}
	if len(mixed) > 0 && !e.cfg.mix {
		return nil, fmt.Errorf("eval: %s: %w (%s; this eval's is %s): choose another output folder, or mix the results on purpose with --mix",
			out, ErrMixed, strings.Join(mixed, ", "), prov.ConfigHash)
	}
	if err := writeProvenance(out, prov); err != nil {
		return nil, err
	}
	rep := &Report{Suite: suite.Name, SuiteDir: suite.Dir, Out: out, Parallel: e.cfg.parallel, Sandbox: sc.Kind, Isolated: isolated,
		Started: started, Samples: e.cfg.samples}
	var jobList []job
	for i := range tasks {
		for k := 1; k <= e.cfg.samples; k++ {
			jobList = append(jobList, job{i, k})
		}
	}
	total := len(jobList)
	results := make([]*TaskResult, total)
	var pending []int
	for j, jb := range jobList {
		t := tasks[jb.task]
		if r, ok := finished(out, t, jb.sample, isolated, prov.ConfigHash, e.cfg.mix); ok {
			r.price(e.cfg.prices, e.cfg.modelPrices)
			results[j] = r
			rep.Skipped = append(rep.Skipped, sampleName(t.ID, jb.sample))
			e.emit(Event{Kind: EventTaskSkipped, Task: t.ID, Result: r, Total: total}, true)
			continue
		}
		pending = append(pending, j)
	}
	if e.cfg.remote != nil && len(pending) > 0 {
		if err := e.startRemote(ctx, prov.ConfigHash, tasks, jobList, pending); err != nil {
			return nil, err
		}
	}

	jobs := make(chan int)
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var firstErr error
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range min(e.cfg.parallel, max(len(pending), 1)) {
		wg.Go(func() {
			for i := range jobs {
				run := e.runTask
				if e.cfg.remote != nil {
					run = e.runRemote
				}
				r, err := run(runCtx, out, sc, tasks[jobList[i].task], jobList[i].sample, prov.ConfigHash, total)
				if err != nil {
					errMu.Lock()
					if firstErr == nil && ctx.Err() == nil {
						firstErr = err
						cancel() // a broken setup breaks every task the same way
					}
					errMu.Unlock()
					continue
				}
				results[i] = r
			}
		})
	}
feed:
	for _, i := range pending {
		select {
		case jobs <- i:
		case <-runCtx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()

	for _, r := range results {
		if r != nil {
			rep.Tasks = append(rep.Tasks, *r)
		}
	}
	rep.Interrupted = len(rep.Tasks) < total
	rep.Totals = Total(rep.Tasks)
	rep.Stats, rep.PerTask = Summarize(rep.Tasks, e.cfg.samples, e.cfg.seed, e.cfg.resamples)
	for _, r := range rep.Tasks {
		if r.ConfigHash != prov.ConfigHash && !slices.Contains(rep.MixedConfigs, r.ConfigHash) {
			rep.MixedConfigs = append(rep.MixedConfigs, r.ConfigHash)
		}
		if prov.Sandbox.Enforced == nil && r.ConfigHash == prov.ConfigHash {
			prov.Sandbox.Enforced, prov.Sandbox.NotEnforced = r.Hidden.Enforced, r.Hidden.NotEnforced
		}
	}
	rep.Finished = time.Now().UTC()
	rep.WallTime = rep.Finished.Sub(rep.Started)
	prov.Finished = rep.Finished
	rep.Provenance = prov
	if err := writeProvenance(out, prov); err != nil {
		return rep, err
	}
	if err := rep.write(out); err != nil {
		return rep, err
	}
	e.emit(Event{Kind: EventEvalFinished, Report: rep, Total: total}, false)
	if firstErr != nil {
		return rep, firstErr
	}
	if rep.Interrupted {
		return rep, fmt.Errorf("eval: interrupted with %d of %d task runs finished: %w", len(rep.Tasks), total, context.Cause(ctx))
	}
	return rep, nil
}

// resolveSandbox decides auto once, by the rule of every run
// (agent.ChooseSandbox), so that every run and judge of the eval uses the
// same kind: containerd, else userns, else a refusal wrapping
// agent.ErrNoIsolation. Nobody is asked: local is used only when asked
// for, and then every result is marked unisolated.
func (e *Evaluator) resolveSandbox(ctx context.Context) (agent.SandboxConfig, error) {
	ch, err := agent.ChooseSandbox(ctx, e.cfg.sandbox, e.cfg.policy, nil)
	if err != nil {
		return ch.Config, fmt.Errorf("eval: %w", err)
	}
	return ch.Config, nil
}

// outsideWorkspaces is an error when a task's workspace could hold the
// suite, whose hidden folders no run may read: every workspace is made
// under out, so the suite must not be there.
func outsideWorkspaces(suite, out string) error {
	real := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return p
	}
	if rel, err := filepath.Rel(real(out), real(suite)); err == nil && (rel == "." || filepath.IsLocal(rel)) {
		return fmt.Errorf("eval: %w: the suite %s is inside the output folder %s, where the task workspaces are made; "+
			"the hidden tests must stay out of every workspace: choose an output folder outside the suite", ErrLayout, suite, out)
	}
	return nil
}

func (e *Evaluator) emit(ev Event, count bool) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if count {
		e.done++
	}
	if ev.Kind == EventTaskFinished || ev.Kind == EventTaskSkipped {
		ev.Done = e.done
	}
	for _, o := range e.cfg.observers {
		o(ev)
	}
}

// finished returns the result an earlier eval left for t's sample, when
// it is for the task as it is now, of this configuration (or of any, with
// mix) and, for an isolated eval, was isolated too.
func finished(out string, t Task, sample int, isolated bool, config string, mix bool) (*TaskResult, bool) {
	b, err := os.ReadFile(filepath.Join(SampleDir(out, t.ID, sample), ResultFile))
	if err != nil {
		return nil, false
	}
	var r TaskResult
	if json.Unmarshal(b, &r) != nil || r.Hash != t.Hash || r.ID != t.ID || r.Sample != sample || (isolated && !r.Isolated) ||
		(r.ConfigHash != config && !mix) {
		return nil, false
	}
	return &r, true
}

// otherConfigs lists the configuration hashes, other than config, of the
// results and the eval.json in out ("unrecorded" for results that name
// none: an older Trio's).
func otherConfigs(out, config string) ([]string, error) {
	var found []string
	add := func(h string) {
		if h == "" {
			h = "unrecorded"
		}
		if h != config && !slices.Contains(found, h) {
			found = append(found, h)
		}
	}
	if b, err := os.ReadFile(filepath.Join(out, ReportJSON)); err == nil {
		var rep struct {
			Tasks      []TaskResult `json:"tasks"`
			Provenance struct {
				ConfigHash string `json:"config_hash"`
			} `json:"provenance"`
		}
		if json.Unmarshal(b, &rep) == nil && len(rep.Tasks) > 0 {
			add(rep.Provenance.ConfigHash)
		}
	}
	for _, pattern := range []string{"*/" + ResultFile, "*/*/" + ResultFile} {
		files, err := filepath.Glob(filepath.Join(out, TasksDir, pattern))
		if err != nil {
			return nil, fmt.Errorf("eval: %w", err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			var r TaskResult
			if json.Unmarshal(b, &r) == nil {
				add(r.ConfigHash)
			}
		}
	}
	slices.Sort(found)
	return found, nil
}

// job is one run of an eval: a task (its index) and a sample.
type job struct {
	task   int
	sample int
}

func sampleName(id string, sample int) string {
	if sample == 1 {
		return id
	}
	return fmt.Sprintf("%s#%d", id, sample)
}

// runTask runs one sample of a task afresh (whatever an interrupted eval
// left of it is removed first), judges it and writes its result.json.
func (e *Evaluator) runTask(ctx context.Context, out string, sc agent.SandboxConfig, t Task, sample int, config string, total int) (*TaskResult, error) {
	dir := SampleDir(out, t.ID, sample)
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("eval: task %s: %w", t.ID, err)
	}
	ws := filepath.Join(dir, "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return nil, fmt.Errorf("eval: task %s: %w", t.ID, err)
	}
	if seed := t.SeedPath(); seed != "" {
		if err := sandbox.CopyTree(seed, ws); err != nil {
			return nil, fmt.Errorf("eval: task %s: seed: %w", t.ID, err)
		}
	}
	model, release, err := e.models(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("eval: task %s: model: %w", t.ID, err)
	}
	defer release()
	e.emit(Event{Kind: EventTaskStarted, Task: t.ID, Total: total}, false)

	runID := t.ID + "-" + randomHex(4)
	opts := append(append([]agent.Option(nil), e.cfg.agentOpts...),
		agent.WithRunsDir(filepath.Join(dir, "runs")), agent.WithRunID(runID), agent.WithWorkspace(ws),
		agent.WithPolicy(e.cfg.policy), agent.WithSandboxConfig(sc), agent.WithBudgets(mergeBudgets(e.cfg.budgets, t.Budgets)),
		agent.WithMetadata(map[string]string{"trio.eval.task": t.ID}),
		agent.WithObserver(func(ev agent.Event) { e.emit(Event{Kind: EventRun, Task: t.ID, Run: &ev}, false) }))
	a, err := agent.New(model, nil, opts...)
	if err != nil {
		return nil, fmt.Errorf("eval: task %s: %w", t.ID, err)
	}
	rep, runErr := a.Run(ctx, t.Goal)
	if rep == nil {
		return nil, fmt.Errorf("eval: task %s: %w", t.ID, runErr)
	}
	if ctx.Err() != nil || rep.Reason == agent.StopInterrupted {
		return nil, fmt.Errorf("eval: task %s interrupted: %w", t.ID, context.Cause(ctx))
	}
	// The report on disk is the truth the eval's table must equal.
	disk, err := agent.LoadReport(rep.RunDir)
	if err != nil {
		return nil, fmt.Errorf("eval: task %s: %w", t.ID, err)
	}
	disk.Workspace = ws
	return e.judgeAndRecord(ctx, t, sample, dir, disk, runErr, runID+"-judge", sc, config, total, true)
}

// judgeAndRecord judges the run whose report is disk (its workspace at
// disk.Workspace), writes the sample's result.json in dir and tells the
// observers. judgeID names the judge's sandbox (unique among concurrent
// evals); ranIsolated says the run's own sandbox isolated it (a local
// run's is the eval's kind, already in sc).
func (e *Evaluator) judgeAndRecord(ctx context.Context, t Task, sample int, dir string, disk *agent.Report, runErr error,
	judgeID string, sc agent.SandboxConfig, config string, total int, ranIsolated bool) (*TaskResult, error) {
	h, err := judge(ctx, t, disk.Workspace, filepath.Join(dir, "judge"), judgeID, sc, e.cfg.policy)
	if err != nil {
		return nil, fmt.Errorf("eval: task %s: hidden tests: %w", t.ID, err)
	}
	r := resultOf(t, disk, h, e.cfg.prices, e.cfg.modelPrices)
	r.Sample, r.ConfigHash = sample, config
	r.Isolated = sc.Kind != agent.SandboxLocal && h.Isolated && ranIsolated
	if runErr != nil {
		r.Error = runErr.Error()
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("eval: task %s: %w", t.ID, err)
	}
	// Written last: its presence is what makes the task finished.
	if err := writeFileAtomic(filepath.Join(dir, ResultFile), append(b, '\n')); err != nil {
		return nil, fmt.Errorf("eval: task %s: %w", t.ID, err)
	}
	e.emit(Event{Kind: EventTaskFinished, Task: t.ID, Result: &r, Total: total}, true)
	return &r, nil
}

// mergeBudgets is base with every non-zero field of task.
func mergeBudgets(base, task agent.Budgets) agent.Budgets {
	if task.MaxSteps != 0 {
		base.MaxSteps = task.MaxSteps
	}
	if task.MaxTotalTurns != 0 {
		base.MaxTotalTurns = task.MaxTotalTurns
	}
	if task.MaxRepairRounds != 0 {
		base.MaxRepairRounds = task.MaxRepairRounds
	}
	if task.MaxTokens != 0 {
		base.MaxTokens = task.MaxTokens
	}
	if task.MaxWallTime != 0 {
		base.MaxWallTime = task.MaxWallTime
	}
	return base
}

func (r *Report) write(out string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("eval: encode report: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(out, ReportJSON), append(b, '\n')); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(out, ReportMD), []byte(r.Markdown()))
}

// lock takes an exclusive lock on path, so that two evals never share an
// output folder; the kernel drops it when the process dies.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("eval: %s: %w (another trio eval uses this output folder)", path, ErrLocked)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
