package eval

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/trioagent/trio/agent"
)

// Price is what a model's tokens cost, in US dollars per million.
type Price struct {
	Prompt     float64 `json:"prompt_per_mtok"`
	Completion float64 `json:"completion_per_mtok"`
}

// RoleMetrics are one role's model use in a run.
type RoleMetrics struct {
	Calls            int     `json:"calls"`
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	Cost             float64 `json:"cost_usd"`
	// Priced says the role's model had a price, so a zero Cost is a real
	// zero; Model is the model the role's replies came from.
	Priced bool   `json:"priced,omitempty"`
	Model  string `json:"model,omitempty"`
}

// Hidden is what the hidden tests said of a run's workspace.
type Hidden struct {
	Pass     bool   `json:"pass"`
	ExitCode int    `json:"exit_code"`
	TimedOut bool   `json:"timed_out,omitempty"`
	Passed   int    `json:"passed"`
	Failed   int    `json:"failed"`
	Errors   int    `json:"errors"`
	Detail   string `json:"detail,omitempty"`
	// Forged says the runner's report was not one an honest runner could
	// have made: a sentinel test laid over the hidden tests was reported
	// wrong (a patched assertion, forged output, an early exit...). Pass
	// is then false and Detail starts with "forged:".
	Forged bool `json:"forged,omitempty"`
	// Sandbox is where the hidden command ran, and Isolated whether that
	// sandbox isolates it.
	Sandbox  string        `json:"sandbox"`
	Isolated bool          `json:"isolated"`
	Duration time.Duration `json:"duration_ns"`
	// Enforced and NotEnforced are what the judge's sandbox said of its
	// limits and walls (sandbox.Info).
	Enforced    []string `json:"enforced,omitempty"`
	NotEnforced []string `json:"not_enforced,omitempty"`
}

// TaskResult is one task's run and judgement. Every run metric is copied
// from the run folder's report.json.
type TaskResult struct {
	ID   string   `json:"id"`
	Tags []string `json:"tags,omitempty"`
	// Sample numbers the task's runs, from 1 (--samples N: 1..N).
	Sample int    `json:"sample"`
	Hash   string `json:"task_hash"`
	RunID  string `json:"run_id"`
	RunDir string `json:"run_dir"`
	// ConfigHash is the Provenance.ConfigHash of the eval that made this
	// result: results of different configurations are never mixed unless
	// asked for (WithMix).
	ConfigHash string `json:"config_hash,omitempty"`

	Hidden Hidden `json:"hidden"`
	// Status and Reason are the run's own verdict ("completed", "stopped")
	// and stop reason.
	Status       string `json:"status"`
	Reason       string `json:"reason"`
	Completed    bool   `json:"completed"`
	FirstPass    bool   `json:"first_pass"`
	RepairRounds int    `json:"repair_rounds"`
	// Steps is the plan's length; WorkerTurns the Worker's model replies.
	Steps       int                    `json:"steps"`
	WorkerTurns int                    `json:"worker_turns"`
	Roles       map[string]RoleMetrics `json:"roles"`
	Tokens      int                    `json:"tokens"`
	Cost        float64                `json:"cost_usd"`
	// UnpricedRoles made calls without a price: their tokens are not in
	// Cost.
	UnpricedRoles []string      `json:"unpriced_roles,omitempty"`
	ToolCalls     int           `json:"tool_calls"`
	ToolFailures  int           `json:"tool_failures"`
	WallTime      time.Duration `json:"wall_time_ns"`
	// Error is a failure of the run's machinery, if any.
	Error string `json:"error,omitempty"`
	// Isolated says the run and the judge both ran in an isolating
	// sandbox. False (the local kind, asked for) means the run's code
	// could read anything this user can, the suite's hidden tests
	// included, so its result proves less.
	Isolated bool `json:"isolated"`
}

// Disagrees reports a run that said COMPLETED while the hidden tests fail.
func (r TaskResult) Disagrees() bool { return r.Completed && !r.Hidden.Pass }

// ToolFailureRate is failed over all tool calls (0 without calls).
func (r TaskResult) ToolFailureRate() float64 { return ratio(r.ToolFailures, r.ToolCalls) }

// Outcome is the result without what changes from one execution to the
// next (times, folders): two evals of the same suite and replays have
// equal outcomes whatever their parallelism.
func (r TaskResult) Outcome() TaskResult {
	r.RunDir, r.WallTime, r.Hidden.Duration = "", 0, 0
	r.Roles = maps.Clone(r.Roles)
	return r
}

// resultOf fills a task's result from the run's report and the hidden
// verdict.
//
// A role's cost is at its price in prices, else at the price in
// modelPrices of the model its replies came from, else at prices["*"],
// else the cost the run itself computed from its price table; a role with
// none of these is unpriced.
func resultOf(t Task, rep *agent.Report, h Hidden, prices, modelPrices map[string]Price) TaskResult {
	m := rep.Metrics
	r := TaskResult{
		ID: t.ID, Tags: t.Tags, Hash: t.Hash, RunID: rep.RunID, RunDir: rep.RunDir,
		Hidden: h, Status: rep.Status, Reason: string(rep.Reason), Completed: m.Completed,
		FirstPass: m.FirstPass, RepairRounds: m.RepairRounds, Steps: m.Steps, WorkerTurns: m.WorkerTurns,
		Roles: map[string]RoleMetrics{}, Tokens: m.PromptTokens + m.CompletionTokens,
		ToolCalls: m.ToolCalls, ToolFailures: m.ToolFailures, WallTime: m.WallTime,
	}
	for role, u := range m.Roles {
		r.Roles[role] = RoleMetrics{Calls: u.Calls, PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
			Model: u.Model, Cost: u.Cost, Priced: u.Priced}
	}
	r.price(prices, modelPrices)
	return r
}

// price computes the cost of each role from its tokens at its price (see
// resultOf); a role without one keeps the cost it has. An earlier eval's
// result is priced again with the current prices when it is reused.
func (r *TaskResult) price(prices, modelPrices map[string]Price) {
	r.Cost = 0
	for role, rm := range r.Roles {
		p, ok := prices[role]
		if !ok {
			p, ok = modelPrices[rm.Model]
		}
		if !ok {
			p, ok = prices["*"]
		}
		if ok {
			rm.Cost = (float64(rm.PromptTokens)*p.Prompt + float64(rm.CompletionTokens)*p.Completion) / 1e6
			rm.Priced = true
		}
		r.Roles[role] = rm
		r.Cost += rm.Cost
	}
	r.UnpricedRoles = unpriced(r.Roles)
}

// Totals are the metrics across the tasks of an eval.
type Totals struct {
	Tasks int `json:"tasks"`
	// HiddenPass counts runs whose hidden tests pass; PassAt1 is its rate.
	HiddenPass int     `json:"hidden_pass"`
	PassAt1    float64 `json:"pass_at_1"`
	Completed  int     `json:"completed"`
	// CompletionRate is how often the run itself said COMPLETED.
	CompletionRate float64 `json:"completion_rate"`
	// Agreement is how often the run's verdict and the hidden tests agree.
	Agreement float64 `json:"agreement"`
	// FalseCompleted counts COMPLETED runs whose hidden tests fail;
	// FalseCompletedRate is that over the completed runs.
	FalseCompleted     int     `json:"false_completed"`
	FalseCompletedRate float64 `json:"false_completed_rate"`
	FirstPass          int     `json:"first_pass"`
	MeanRepairRounds   float64 `json:"mean_repair_rounds"`
	MeanTokens         float64 `json:"mean_tokens"`
	MeanCost           float64 `json:"mean_cost_usd"`
	ToolCalls          int     `json:"tool_calls"`
	ToolFailures       int     `json:"tool_failures"`
	ToolFailureRate    float64 `json:"tool_failure_rate"`
	// RunWallTime is the sum of the runs' wall times (the eval's own wall
	// time is shorter when tasks ran in parallel).
	RunWallTime time.Duration `json:"run_wall_time_ns"`
}

// Total computes the totals of results.
func Total(results []TaskResult) Totals {
	var t Totals
	t.Tasks = len(results)
	var repairs, tokens int
	var cost float64
	agree := 0
	for _, r := range results {
		if r.Hidden.Pass {
			t.HiddenPass++
		}
		if r.Completed {
			t.Completed++
		}
		if r.Completed == r.Hidden.Pass {
			agree++
		}
		if r.Disagrees() {
			t.FalseCompleted++
		}
		if r.FirstPass {
			t.FirstPass++
		}
		repairs += r.RepairRounds
		tokens += r.Tokens
		cost += r.Cost
		t.ToolCalls += r.ToolCalls
		t.ToolFailures += r.ToolFailures
		t.RunWallTime += r.WallTime
	}
	t.PassAt1 = ratio(t.HiddenPass, t.Tasks)
	t.CompletionRate = ratio(t.Completed, t.Tasks)
	t.Agreement = ratio(agree, t.Tasks)
	t.FalseCompletedRate = ratio(t.FalseCompleted, t.Completed)
	t.MeanRepairRounds = ratio(repairs, t.Tasks)
	t.MeanTokens = ratio(tokens, t.Tasks)
	if t.Tasks > 0 {
		t.MeanCost = cost / float64(t.Tasks)
	}
	t.ToolFailureRate = ratio(t.ToolFailures, t.ToolCalls)
	return t
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Report is an eval's outcome, written to eval.json and eval.md.
type Report struct {
	Suite    string `json:"suite"`
	SuiteDir string `json:"suite_dir"`
	Out      string `json:"out"`
	Parallel int    `json:"parallel"`
	Sandbox  string `json:"sandbox"`
	// Isolated is false when the eval ran with the local sandbox, asked
	// for: every result is then unisolated.
	Isolated bool          `json:"isolated"`
	Started  time.Time     `json:"started"`
	Finished time.Time     `json:"finished"`
	WallTime time.Duration `json:"wall_time_ns"`
	// Samples is how many times each task runs (--samples).
	Samples int `json:"samples"`
	// Skipped are the task runs whose result an earlier eval left, as
	// "<id>" for sample 1 and "<id>#<sample>" for the others.
	Skipped []string `json:"skipped,omitempty"`
	// Tasks holds every run: one per task and sample, in suite order.
	Tasks  []TaskResult `json:"tasks"`
	Totals Totals       `json:"totals"`
	// Stats are the rates with their 95 % intervals, pass@k and the cost
	// and token distributions; PerTask the same per task.
	Stats   Stats       `json:"stats"`
	PerTask []TaskStats `json:"per_task"`
	// Provenance says what produced the results: models, endpoints,
	// configuration, policy, budgets, sandbox, Trio's version, the suite.
	Provenance Provenance `json:"provenance"`
	// MixedConfigs lists the configuration hashes of results an earlier
	// eval with another configuration left, kept because of WithMix.
	MixedConfigs []string `json:"mixed_configs,omitempty"`
	// Interrupted says the eval was cancelled before every task finished.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Markdown renders the per-task table and the totals.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Eval: %s\n\n", r.Suite)
	fmt.Fprintf(&b, "%d tasks, parallel %d, sandbox %s, wall time %s", len(r.Tasks), r.Parallel, r.Sandbox, r.WallTime.Round(time.Millisecond))
	if r.Interrupted {
		b.WriteString(" (interrupted: not every task finished)")
	}
	b.WriteString("\n\n")
	if n := r.Unisolated(); n > 0 {
		fmt.Fprintf(&b, "**UNISOLATED: %d of %d results ran without isolation** (the local sandbox): their code could read this machine's files, the hidden tests of every task included.\n\n", n, len(r.Tasks))
	}
	roles := map[string]bool{}
	for _, t := range r.Tasks {
		for role := range t.Roles {
			roles[role] = true
		}
	}
	names := slices.Sorted(maps.Keys(roles))
	b.WriteString("| task | hidden | run | agree | first pass | repairs | steps | turns | tokens |")
	for _, n := range names {
		fmt.Fprintf(&b, " %s tokens (p/c) |", n)
	}
	b.WriteString(" cost $ | tool calls | tool fail rate | wall | stop reason |\n|---|---|---|---|---|---|---|---|---|")
	for range names {
		b.WriteString("---|")
	}
	b.WriteString("---|---|---|---|---|\n")
	for _, t := range r.Tasks {
		hidden := fmt.Sprintf("FAIL (%d/%d)", t.Hidden.Passed, t.Hidden.Passed+t.Hidden.Failed+t.Hidden.Errors)
		if t.Hidden.Pass {
			hidden = fmt.Sprintf("pass (%d)", t.Hidden.Passed)
		}
		if t.Hidden.Forged {
			hidden = "FAIL (forged)"
		}
		if !t.Isolated {
			hidden += " UNISOLATED"
		}
		agree := "yes"
		if t.Completed != t.Hidden.Pass {
			agree = "**no**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | %d | %d | %d |", t.ID, hidden, t.Status, agree, yesNo(t.FirstPass), t.RepairRounds, t.Steps, t.WorkerTurns, t.Tokens)
		for _, n := range names {
			u := t.Roles[n]
			fmt.Fprintf(&b, " %d/%d |", u.PromptTokens, u.CompletionTokens)
		}
		fmt.Fprintf(&b, " %.4f | %d | %.3f | %s | %s |\n", t.Cost, t.ToolCalls, t.ToolFailureRate(), t.WallTime.Round(time.Millisecond), t.Reason)
	}
	x := r.Totals
	b.WriteString("\n## Totals\n\n| metric | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| hidden-test pass rate (pass@1) | %.3f (%d/%d) |\n", x.PassAt1, x.HiddenPass, x.Tasks)
	fmt.Fprintf(&b, "| completion rate (run said COMPLETED) | %.3f (%d/%d) |\n", x.CompletionRate, x.Completed, x.Tasks)
	fmt.Fprintf(&b, "| agreement of Critic and hidden tests | %.3f |\n", x.Agreement)
	fmt.Fprintf(&b, "| COMPLETED but hidden tests fail | %.3f (%d/%d) |\n", x.FalseCompletedRate, x.FalseCompleted, x.Completed)
	fmt.Fprintf(&b, "| first pass | %d/%d |\n", x.FirstPass, x.Tasks)
	fmt.Fprintf(&b, "| mean repair rounds | %.3f |\n", x.MeanRepairRounds)
	fmt.Fprintf(&b, "| mean tokens per task | %.1f |\n", x.MeanTokens)
	fmt.Fprintf(&b, "| mean cost per task ($) | %.4f |\n", x.MeanCost)
	fmt.Fprintf(&b, "| tool failure rate | %.3f (%d/%d) |\n", x.ToolFailureRate, x.ToolFailures, x.ToolCalls)
	fmt.Fprintf(&b, "| summed run wall time | %s |\n", x.RunWallTime.Round(time.Millisecond))
	r.statsMarkdown(&b)
	return b.String()
}

// statsMarkdown renders the rates with their intervals, the distributions,
// the per-task pass rates (with samples) and the provenance.
func (r *Report) statsMarkdown(b *strings.Builder) {
	s := r.Stats
	est := func(e Estimate) string {
		out := fmt.Sprintf("%.3f [%.3f, %.3f]", e.Value, e.Low, e.High)
		if e.Method == MethodWilson {
			out += fmt.Sprintf(" (%d/%d)", e.Successes, e.Trials)
		}
		return out
	}
	fmt.Fprintf(b, "\n## Statistics\n\n%d tasks × %d samples = %d runs; %.0f %% intervals: Wilson over runs for rates, bootstrap over tasks (%d resamples, seed %d) for pass@k and means.\n\n",
		s.Tasks, s.Samples, s.Runs, s.Confidence*100, s.Resamples, s.Seed)
	b.WriteString("| statistic | value [95 % interval] |\n|---|---|\n")
	fmt.Fprintf(b, "| pass@1 (hidden tests, Wilson) | %s |\n", est(s.PassAt1))
	for _, k := range s.PassAtK {
		fmt.Fprintf(b, "| pass@%d (unbiased, bootstrap) | %s |\n", k.K, est(k.Estimate))
	}
	fmt.Fprintf(b, "| Critic agreement with hidden tests | %s |\n", est(s.Agreement))
	fmt.Fprintf(b, "| false success (COMPLETED, hidden fail) | %s |\n", est(s.FalseSuccess))
	fmt.Fprintf(b, "| completion rate | %s |\n", est(s.CompletionRate))
	fmt.Fprintf(b, "| cost per task ($): mean, p50, p90 | %.4f [%.4f, %.4f], %.4f, %.4f |\n", s.Cost.Mean.Value, s.Cost.Mean.Low, s.Cost.Mean.High, s.Cost.P50, s.Cost.P90)
	fmt.Fprintf(b, "| tokens per task: mean, p50, p90 | %.0f [%.0f, %.0f], %.0f, %.0f |\n", s.Tokens.Mean.Value, s.Tokens.Mean.Low, s.Tokens.Mean.High, s.Tokens.P50, s.Tokens.P90)
	if len(s.UnpricedRoles) > 0 {
		fmt.Fprintf(b, "\n**Unpriced roles: %s**: their tokens are not in the cost (price them in trio.yaml's prices or with --price MODEL=IN,OUT).\n", strings.Join(s.UnpricedRoles, ", "))
	}
	if s.Samples > 1 {
		b.WriteString("\n| task | passed | pass rate [95 %] |")
		for k := 1; k <= s.Samples; k++ {
			fmt.Fprintf(b, " pass@%d |", k)
		}
		b.WriteString(" agree | mean cost $ | mean tokens |\n|---|---|---|")
		for range s.Samples {
			b.WriteString("---|")
		}
		b.WriteString("---|---|---|\n")
		for _, t := range r.PerTask {
			fmt.Fprintf(b, "| %s | %d/%d | %.2f [%.2f, %.2f] |", t.ID, t.Passed, t.Runs, t.PassRate.Value, t.PassRate.Low, t.PassRate.High)
			for k := range s.Samples {
				if k < len(t.PassAtK) {
					fmt.Fprintf(b, " %.3f |", t.PassAtK[k])
				} else {
					b.WriteString(" — |")
				}
			}
			fmt.Fprintf(b, " %d/%d | %.4f | %.0f |\n", t.Agreed, t.Runs, t.MeanCost, t.MeanTokens)
		}
	}
	p := r.Provenance
	fmt.Fprintf(b, "\n## Provenance\n\nconfiguration %s; models (%s): %s; policy sha256 %.12s; config sha256 %.12s; sandbox %s; trio %s %.12s; suite sha256 %.12s\n",
		p.ConfigHash, p.ModelSource, roleModels(p.Roles), p.Policy.SHA256, p.Config.SHA256, p.Sandbox.Kind, p.Trio.Version, p.Trio.Revision, p.SuiteHash)
	if len(r.MixedConfigs) > 0 {
		fmt.Fprintf(b, "\n**MIXED: results of other configurations (%s) are included (--mix).**\n", strings.Join(r.MixedConfigs, ", "))
	}
}

func roleModels(roles map[string]RoleProvenance) string {
	if len(roles) == 0 {
		return "—"
	}
	var parts []string
	for _, role := range slices.Sorted(maps.Keys(roles)) {
		rp := roles[role]
		s := role + "=" + rp.Model
		if rp.Host != "" {
			s += "@" + rp.Host
		}
		if rp.Reasoning != "" {
			s += " (reasoning " + rp.Reasoning + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// Unisolated counts the results that ran without isolation.
func (r *Report) Unisolated() int {
	n := 0
	for _, t := range r.Tasks {
		if !t.Isolated {
			n++
		}
	}
	return n
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

// Stats are an eval's rates with 95 % intervals. Rates over runs (pass@1,
// agreement, false success, completion) use Wilson's interval over every
// run; pass@k and the per-task means use a percentile bootstrap over
// tasks with Seed, so the same results give the same intervals.
type Stats struct {
	Tasks     int    `json:"tasks"`
	Runs      int    `json:"runs"`
	Samples   int    `json:"samples"`
	Seed      uint64 `json:"seed"`
	Resamples int    `json:"resamples"`
	// Confidence is the level of every interval (0.95).
	Confidence float64 `json:"confidence"`
	// PassAt1 is the hidden-test pass rate over every run.
	PassAt1 Estimate `json:"pass_at_1"`
	// PassAtK is pass@k for k = 1..Samples: the mean over tasks of the
	// unbiased estimator 1 - C(n-c,k)/C(n,k), with a bootstrap interval.
	PassAtK []PassK `json:"pass_at_k"`
	// CompletionRate is how often the run said COMPLETED.
	CompletionRate Estimate `json:"completion_rate"`
	// Agreement is how often the Critic's verdict (COMPLETED or not)
	// agrees with the hidden tests.
	Agreement Estimate `json:"agreement"`
	// FalseSuccess is the share of COMPLETED runs whose hidden tests fail.
	FalseSuccess Estimate `json:"false_success"`
	// Cost and Tokens are per task (the mean over its samples).
	Cost   Distribution `json:"cost_usd"`
	Tokens Distribution `json:"tokens"`
	// UnpricedRoles made calls without a price in some run: the cost
	// leaves their tokens out.
	UnpricedRoles []string `json:"unpriced_roles,omitempty"`
}

// PassK is pass@k with its interval.
type PassK struct {
	K int `json:"k"`
	Estimate
}

// TaskStats summarises one task's samples.
type TaskStats struct {
	ID   string   `json:"id"`
	Tags []string `json:"tags,omitempty"`
	// Runs and Passed count its samples and their hidden passes; PassRate
	// is Passed/Runs with its Wilson interval.
	Runs     int      `json:"runs"`
	Passed   int      `json:"passed"`
	PassRate Estimate `json:"pass_rate"`
	// PassAtK[k-1] is the unbiased pass@k of this task.
	PassAtK []float64 `json:"pass_at_k"`
	// Completed counts the samples whose run said COMPLETED, Agreed those
	// where that verdict matched the hidden tests.
	Completed  int     `json:"completed"`
	Agreed     int     `json:"agreed"`
	MeanCost   float64 `json:"mean_cost_usd"`
	MeanTokens float64 `json:"mean_tokens"`
}

// Provenance is what produced an eval's results, recorded so that two
// results can be told apart later. It never holds an API key: endpoints
// are named by provider and host only.
type Provenance struct {
	// ConfigHash fingerprints what decides the results: the models and
	// endpoints, temperature and reasoning, the effective configuration,
	// the policy, the budgets, the sandbox kind and the suite. Prices,
	// samples, parallelism and times are left out.
	ConfigHash string `json:"config_hash"`
	// ModelSource is replay (each task's replay script) or endpoint.
	ModelSource string `json:"model_source"`
	// Roles are the model, provider, endpoint host and reasoning effort of
	// each role.
	Roles       map[string]RoleProvenance `json:"roles,omitempty"`
	Temperature *float64                  `json:"temperature,omitempty"`
	MaxTokens   int                       `json:"max_tokens,omitempty"`
	// Config and Policy are the effective configuration (after flags) and
	// policy, with their SHA-256.
	Config  Document      `json:"config"`
	Policy  Document      `json:"policy"`
	Budgets agent.Budgets `json:"budgets"`
	// Prices are the prices the costs were computed with: per role ("*" for
	// every role), and per model as "model NAME".
	Prices  map[string]Price  `json:"prices,omitempty"`
	Sandbox SandboxProvenance `json:"sandbox"`
	Trio    Build             `json:"trio"`
	// Suite and SuiteHash name the suite and fingerprint its task hashes.
	Suite     string `json:"suite"`
	SuiteHash string `json:"suite_hash"`
	// Tasks are the selected task ids.
	Tasks   []string  `json:"tasks"`
	Samples int       `json:"samples"`
	Seed    uint64    `json:"seed"`
	Started time.Time `json:"started"`
	// Finished is zero until the eval ends.
	Finished time.Time `json:"finished,omitzero"`
}

// RoleProvenance is one role's model and where it was served.
type RoleProvenance struct {
	Model string `json:"model,omitempty"`
	// Provider is openai (any OpenAI-compatible server), anthropic or
	// replay; Host is the endpoint's host (never a key or a path).
	Provider  string `json:"provider,omitempty"`
	Host      string `json:"host,omitempty"`
	Reasoning string `json:"reasoning,omitempty"`
}

// Document is a text with its SHA-256 and where it came from.
type Document struct {
	Path   string `json:"path,omitempty"`
	SHA256 string `json:"sha256"`
	Text   string `json:"text"`
}

// SandboxProvenance is the eval's sandbox kind and what its judge's
// sandbox said it enforced.
type SandboxProvenance struct {
	Kind        string   `json:"kind"`
	Isolated    bool     `json:"isolated"`
	Enforced    []string `json:"enforced,omitempty"`
	NotEnforced []string `json:"not_enforced,omitempty"`
}

// Build is Trio's version from the build info.
type Build struct {
	Version   string `json:"version"`
	Revision  string `json:"vcs_revision,omitempty"`
	Time      string `json:"vcs_time,omitempty"`
	Modified  bool   `json:"vcs_modified,omitempty"`
	GoVersion string `json:"go_version,omitempty"`
}
