package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/cmd/trio/config"
	"github.com/trioagent/trio/eval"
	"github.com/trioagent/trio/examples/demo"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/sandbox"
)

// Model sources of trio eval.
const (
	evalReplay   = "replay"
	evalEndpoint = "endpoint"
)

type evalFlags struct {
	tasks, tags []string
	parallel    int
	out         string
	model       string
	policy      string
	sandbox     string
	prices      []string
	samples     int
	seed        uint64
	mix         bool
	failUnder   float64
	quiet, json bool
	temporal    temporalEval
}

// Exit codes of trio eval beyond the common ones.
const exitBelowRate = 4 // --fail-under: pass@1 below the rate

const evalExitCodesHelp = `Exit codes:
  0    every task run reached a verdict of the hidden tests (whether they
       passed or not), and pass@1 is at least --fail-under
  1    a task run could not be run or judged (its run failed in Trio's
       machinery, the hidden command could not start): see the error and
       the task's result
  3    usage or configuration error (bad flag, suite, trio.yaml or policy,
       no model endpoint, no isolating sandbox, the output folder in use or
       holding results of another configuration without --mix)
  4    --fail-under RATE: every run reached a verdict but pass@1 is below
       RATE
  130  interrupted (Ctrl-C): finished runs are kept; run the same command
       again to finish the others`

func newEvalCmd(g *globals, io stdio) *cobra.Command {
	f := &evalFlags{}
	cmd := &cobra.Command{
		Use:   "eval SUITE",
		Short: "Run a suite of goals, judge each run by hidden tests, and report the metrics across runs",
		Long: `Eval runs every task of SUITE (a folder with suite.yaml, or the file itself)
as a normal Trio run, each with its own run folder, workspace and sandbox,
--parallel at a time. When a run ends, the task's hidden tests are laid over a
fresh copy of its workspace and the task's hidden command runs them in a fresh
sandbox: the run never saw those tests.

--sandbox chooses as trio run does: containerd, else userns, else the eval is
refused; nobody is asked. The hidden tests are copied only into the judge's
copy, which no run's sandbox sees. --sandbox local runs everything without
isolation, where a run's code can read the hidden tests of every task: every
result is then marked UNISOLATED in eval.json, the table and the progress
lines.

--samples N runs every task N times, each in a fresh workspace. The results
go to --out (default <runs dir>/eval-<suite name>): tasks/<id>/sample-<k>/
with the run folder, the workspace, the judged copy and result.json, then
eval.json and eval.md (a table per run, the totals and the statistics:
pass@1 and the Critic's agreement with the hidden tests and its false-success
rate, each with a 95% Wilson interval; pass@k for k up to N by the unbiased
estimator with a bootstrap interval over tasks, seeded by --seed; cost and
tokens per task with p50 and p90). A line per finished run goes to stderr;
--json writes every event as JSON lines on stdout instead of the table.

eval.json records the provenance: the model, provider and endpoint host of
each role (never a key), temperature and reasoning, the effective
configuration and policy with their hashes, budgets, prices, the sandbox and
what it enforced, Trio's version and VCS revision, the suite's hash and the
times. Results of another configuration in --out are refused (exit 3) unless
--mix keeps them beside the new ones.

Run it again with the same --out after an interruption: runs with a
result.json (for the task as it is now, of this configuration) are skipped,
the others start afresh.

--price MODEL=IN,OUT prices a model (US dollars per million prompt and
completion tokens; repeatable; over trio.yaml's prices); --price IN,OUT prices
every role. Each role is priced by its model; roles without a price are named
in the summary.

trio eval compare A B compares two evals (see trio eval compare --help).

--temporal runs the tasks on Temporal (see trio worker): one child workflow
per task and sample, whose id comes from the task's hash, the sample and
the configuration, so a second submission runs no task twice. Each run's
goal, replay script (--model replay), seed, budgets and policy go to the
store; the workers run them, each --parallel at a time, with their own
sandbox. Here, each finished run is restored from the store and judged as
above (the hidden tests never leave this host), and eval.json is written
as for a local eval; --parallel bounds the judges.

--model replay (the default) drives each run with the task's replay.yaml
through the OpenAI-compatible provider on loopback, offline; --model endpoint
uses the model endpoint of trio.yaml or the environment, as trio run does.

` + evalExitCodesHelp,
		Example: `  trio eval evals/
  trio eval evals/ --samples 5 --fail-under 0.8
  trio eval evals/ --tags python --parallel 2 --sandbox local
  trio eval evals/ --model endpoint --price gpt-4.1-mini=0.4,1.6 --out runs/eval-gpt
  trio eval compare runs/eval-a runs/eval-b
  trio eval evals/ --json > events.jsonl
  TRIO_STORE=/srv/trio-store trio eval evals/ --temporal`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runEval(cmd.Context(), g, io, f, args[0])
		},
	}
	cmd.AddCommand(newEvalImportCmd(g, io), newEvalReportCmd(g, io), newEvalCompareCmd(io))
	fl := cmd.Flags()
	fl.StringSliceVar(&f.tasks, "tasks", nil, "run only these task ids (comma-separated)")
	fl.StringSliceVar(&f.tags, "tags", nil, "run only tasks with at least one of these tags (comma-separated)")
	fl.IntVar(&f.parallel, "parallel", 0, "tasks at once (default: one per CPU, bounded by available memory over the policy's memory limit)")
	fl.StringVar(&f.out, "out", "", "output folder (default <runs dir>/eval-<suite name>)")
	fl.StringVar(&f.model, "model", evalReplay, "replay (each task's replay.yaml, offline) or endpoint (trio.yaml or the environment)")
	fl.StringVar(&f.policy, "policy", "", "policy file of every run (default: policy of trio.yaml, else the built-in strict policy)")
	fl.StringArrayVar(&f.prices, "price", nil, "MODEL=IN,OUT: a model's US dollars per million prompt and completion tokens (repeatable); IN,OUT alone prices every role")
	fl.IntVar(&f.samples, "samples", 1, "runs of each task, each in a fresh workspace (pass@k for k up to N)")
	fl.Uint64Var(&f.seed, "seed", eval.DefaultSeed, "seed of the bootstrap intervals (recorded in eval.json)")
	fl.BoolVar(&f.mix, "mix", false, "keep results of another configuration in --out beside the new ones (else refused, exit 3)")
	fl.Float64Var(&f.failUnder, "fail-under", 0, "exit 4 when pass@1 is below this rate (0..1)")
	fl.StringVar(&f.sandbox, "sandbox", "", "where runs and hidden tests run: containerd, userns (no root needed), local (no isolation; every result is marked UNISOLATED) or auto: containerd, else userns, else a refusal (default: sandbox.kind of trio.yaml, else auto)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress lines on stderr")
	fl.BoolVar(&f.json, "json", false, "write every event as JSON lines on stdout")
	f.temporal.add(cmd)
	return cmd
}

func runEval(ctx context.Context, g *globals, io stdio, f *evalFlags, suiteDir string) error {
	rf := runFlags{sandbox: f.sandbox}
	if err := rf.checkSandbox(); err != nil {
		return err
	}
	if f.model != evalReplay && f.model != evalEndpoint {
		return configError(fmt.Errorf("--model %q: want replay or endpoint", f.model))
	}
	if f.parallel < 0 {
		return configError(fmt.Errorf("--parallel %d: want at least 1", f.parallel))
	}
	if f.samples < 1 {
		return configError(fmt.Errorf("--samples %d: want at least 1", f.samples))
	}
	if f.failUnder < 0 || f.failUnder > 1 || math.IsNaN(f.failUnder) {
		return configError(fmt.Errorf("--fail-under %v: want a rate from 0 to 1", f.failUnder))
	}
	if f.seed == 0 {
		return configError(errors.New("--seed 0: want a positive seed"))
	}
	cfg, err := loadConfig(g.config)
	if err != nil {
		return err
	}
	flat, err := applyPrices(cfg, f.prices)
	if err != nil {
		return err
	}
	suite, err := eval.Load(suiteDir)
	if err != nil {
		return configError(err)
	}
	tasks, err := suite.Select(f.tasks, f.tags)
	if err != nil {
		return configError(err)
	}
	if len(tasks) == 0 {
		return configError(fmt.Errorf("%s: no task has the tags %s", filepath.Join(suite.Dir, eval.SuiteFile), strings.Join(f.tags, ", ")))
	}
	pol, polPath, err := loadPolicy(f.policy, cfg, true)
	if err != nil {
		return err
	}
	prov, err := evalProvenance(f.model, cfg, pol, polPath)
	if err != nil {
		return err
	}
	var models eval.ModelFunc = noModels
	// On Temporal the workers' models run the tasks; a replay eval still
	// needs each task's script, checked here.
	if !f.temporal.on || f.model == evalReplay {
		if models, err = evalModels(f.model, cfg, tasks); err != nil {
			return err
		}
	}
	out := f.out
	if out == "" {
		out = filepath.Join(runsDir(g, cfg), "eval-"+suite.Name)
	}
	parallel := f.parallel
	if parallel == 0 {
		parallel = eval.DefaultParallel(pol.Limits().Memory)
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)

	var mu sync.Mutex
	enc := json.NewEncoder(io.out)
	observe := func(ev eval.Event) {
		mu.Lock()
		defer mu.Unlock()
		if f.json {
			enc.Encode(ev)
		}
		if !f.quiet && (ev.Kind == eval.EventTaskFinished || ev.Kind == eval.EventTaskSkipped) {
			fmt.Fprintln(io.err, progressLine(ev))
		}
	}
	if !f.quiet {
		samples := ""
		if f.samples > 1 {
			samples = fmt.Sprintf(" × %d samples", f.samples)
		}
		fmt.Fprintf(io.err, "trio eval: %d tasks%s of %s, %d at a time, model %s, output in %s\n", len(tasks), samples, suite.Name, parallel, f.model, abs(out))
	}
	opts := []eval.Option{
		eval.WithOut(out), eval.WithParallel(parallel), eval.WithPolicy(pol),
		eval.WithSandboxConfig(sandboxConfig(f.sandbox, cfg)), eval.WithObserver(observe),
		eval.WithAgentOptions(agentOptions(cfg, workerModelName(cfg))...),
		eval.WithPrices(evalRolePrices(f.model, cfg, flat)), eval.WithModelPrices(modelPrices(cfg)),
		eval.WithSamples(f.samples), eval.WithSeed(f.seed), eval.WithProvenance(prov), eval.WithMix(f.mix),
	}
	if b := cfg.Budgets; b.MaxSteps != 0 || b.MaxTotalTurns != 0 || b.MaxRepairRounds != 0 || b.MaxTokens != 0 || b.MaxWallTime.Duration != 0 {
		opts = append(opts, eval.WithBudgets(agent.Budgets{MaxSteps: b.MaxSteps, MaxTotalTurns: b.MaxTotalTurns,
			MaxRepairRounds: b.MaxRepairRounds, MaxTokens: b.MaxTokens, MaxWallTime: b.MaxWallTime.Duration}))
	}
	if f.temporal.on {
		r, err := f.temporal.remote(io, f.model, pol, polPath)
		if err != nil {
			return err
		}
		defer r.c.Close()
		opts = append(opts, eval.WithRemote(r))
	}
	e, err := eval.New(models, opts...)
	if err != nil {
		return configError(err)
	}
	rep, err := e.Run(ctx, suite, tasks)
	if rep != nil && !f.json {
		fmt.Fprint(io.out, rep.Markdown())
	}
	if rep != nil && !f.quiet {
		fmt.Fprintf(io.err, "trio eval: %s and %s written\n", filepath.Join(rep.Out, eval.ReportJSON), filepath.Join(rep.Out, eval.ReportMD))
	}
	if rep != nil && rep.Unisolated() > 0 {
		fmt.Fprintf(io.err, "trio eval: UNISOLATED: %d of %d results ran with the local sandbox, which does NOT isolate: "+
			"a run's code could read the hidden tests of every task\n", rep.Unisolated(), len(rep.Tasks))
	}
	if rep != nil && len(rep.Stats.UnpricedRoles) > 0 && !f.quiet {
		fmt.Fprintf(io.err, "trio eval: unpriced roles: %s (their tokens are not in the cost; --price MODEL=IN,OUT or trio.yaml's prices)\n", strings.Join(rep.Stats.UnpricedRoles, ", "))
	}
	if rep != nil && len(rep.MixedConfigs) > 0 {
		fmt.Fprintf(io.err, "trio eval: MIXED: %s holds results of other configurations (%s) beside this one's (%s)\n", rep.Out, strings.Join(rep.MixedConfigs, ", "), rep.Provenance.ConfigHash)
	}
	if err == nil {
		var failed []string
		for _, r := range rep.Tasks {
			if r.Error != "" {
				failed = append(failed, fmt.Sprintf("%s (sample %d): %s", r.ID, r.Sample, r.Error))
			}
		}
		if len(failed) > 0 {
			return failure(fmt.Errorf("eval: %d of %d runs failed in Trio's machinery, so their verdicts do not measure the model:\n  %s", len(failed), len(rep.Tasks), strings.Join(failed, "\n  ")))
		}
		if p := rep.Stats.PassAt1; p.Value < f.failUnder {
			return &exitError{code: exitBelowRate, err: fmt.Errorf("pass@1 %.3f [%.3f, %.3f] is below --fail-under %v", p.Value, p.Low, p.High, f.failUnder)}
		}
		return nil
	}
	switch {
	case rep != nil && rep.Interrupted && ctx.Err() != nil:
		fmt.Fprintf(io.err, "trio eval: interrupted; run the same command again to finish the %d remaining tasks\n", len(tasks)-len(rep.Tasks))
		return &exitError{code: exitInterrupted}
	case errors.Is(err, sandbox.ErrUnavailable), errors.Is(err, agent.ErrNoIsolation):
		return configError(withLocalAdvice(err))
	case errors.Is(err, eval.ErrInvalidSuite), errors.Is(err, eval.ErrLocked), errors.Is(err, eval.ErrLayout), errors.Is(err, eval.ErrMixed),
		errors.Is(err, agent.ErrInvalidOption), errors.Is(err, agent.ErrInvalidInput):
		return configError(err)
	}
	return failure(err)
}

// evalModels is the ModelFunc of --model: each task's replay behind its
// own loopback endpoint, or the configured endpoint (checked once, here).
func evalModels(kind string, cfg *config.File, tasks []eval.Task) (eval.ModelFunc, error) {
	if kind == evalEndpoint {
		m, err := endpointModel(cfg)
		if err != nil {
			return nil, err
		}
		return func(context.Context, eval.Task) (llm.Model, func(), error) { return m, func() {}, nil }, nil
	}
	for _, t := range tasks {
		if t.Replay == "" {
			return nil, configError(fmt.Errorf("%s: task %s has no %s (needed by --model replay)", filepath.Join(t.Dir, eval.TaskFile), t.ID, eval.ReplayFile))
		}
	}
	return func(_ context.Context, t eval.Task) (llm.Model, func(), error) {
		s, err := eval.ReplayScript(t)
		if err != nil {
			return nil, nil, err
		}
		ep, err := demo.ServeScript(s)
		if err != nil {
			return nil, nil, err
		}
		return ep, ep.Close, nil
	}, nil
}

// progressLine is the line of a finished (or skipped) task.
func progressLine(ev eval.Event) string {
	r := ev.Result
	hidden := fmt.Sprintf("hidden FAIL (%s)", r.Hidden.Detail)
	if r.Hidden.Pass {
		hidden = "hidden pass (1 test)"
		if r.Hidden.Passed != 1 {
			hidden = fmt.Sprintf("hidden pass (%d tests)", r.Hidden.Passed)
		}
	}
	note := ""
	if !r.Isolated {
		note = "  UNISOLATED"
	}
	if r.Disagrees() {
		note = "  <- the run said COMPLETED"
	}
	if ev.Kind == eval.EventTaskSkipped {
		note += "  (finished earlier, skipped)"
	}
	id := r.ID
	if r.Sample > 1 {
		id = fmt.Sprintf("%s#%d", r.ID, r.Sample)
	}
	return fmt.Sprintf("[%d/%d] %s: %s; run %s (%s), %d repairs, %d tokens, %s%s",
		ev.Done, ev.Total, id, hidden, r.Status, r.Reason, r.RepairRounds, r.Tokens, r.WallTime.Round(time.Millisecond), note)
}
