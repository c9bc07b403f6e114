package agent

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trioagent/trio/critic"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/planner"
)

// Report is the outcome of a run, written to report.json and report.md.
type Report struct {
	RunID     string `json:"run_id"`
	RunDir    string `json:"run_dir"`
	Goal      string `json:"goal"`
	Workspace string `json:"workspace"`
	// Status is "completed", "interrupted" (resumable) or "stopped".
	Status string `json:"status"`
	// Reason says why the run ended; Explanation is its one-line meaning
	// and Detail the specifics (an error message, the repeated call...).
	Reason      StopReason `json:"reason"`
	Explanation string     `json:"explanation"`
	Detail      string     `json:"detail,omitempty"`

	Plan *planner.Plan `json:"plan,omitempty"`
	// PlanRejections say why each refused plan was refused, in order.
	PlanRejections []string         `json:"plan_rejections,omitempty"`
	SuiteVersion   int              `json:"suite_version"`
	Findings       *critic.Findings `json:"findings,omitempty"`
	// Analyses are the Worker's statements of what failed and why, one per
	// repair round.
	Analyses []string `json:"analyses,omitempty"`
	// Instructions are the workspace's AGENTS.md files the roles read, in
	// the order they were joined.
	Instructions []string `json:"instructions,omitempty"`
	// Files are the workspace's files when the run ended.
	Files []string `json:"files"`
	// Changes are the files the run added, modified and deleted against
	// the workspace as it started (see Diff), with their line counts;
	// report.md holds the unified diff too (Diff gives it). ChangesNote says why they are
	// missing or incomplete.
	Changes     []FileChange `json:"changes"`
	ChangesNote string       `json:"changes_note,omitempty"`
	// Sandbox is where the last session's commands ran and what it
	// enforced, as sandbox.Info.Summary says it ("containerd",
	// "local (not isolated)", "userns; enforced: timeout 5m0s, ...").
	Sandbox string  `json:"sandbox"`
	Metrics Metrics `json:"metrics"`
	// Phase is where the run was: done once it ended for good; plan,
	// design_tests, build, check, repair or test_repair for a run that can
	// be resumed.
	Phase string `json:"phase,omitempty"`
	// Metadata is what the embedder recorded with WithMetadata (how the
	// run was started).
	Metadata map[string]string `json:"metadata,omitempty"`

	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Updated is when the checkpoint was last written (set by Inspect).
	Updated time.Time `json:"updated,omitzero"`
}

// Metrics are the numbers every run reports (DESIGN "Metrics every run
// reports").
type Metrics struct {
	Completed bool `json:"completed"`
	// FirstPass is true when the checks passed before any repair.
	FirstPass    bool `json:"first_pass"`
	RepairRounds int  `json:"repair_rounds"`
	TestRepairs  int  `json:"test_repairs"`
	// ReviewRounds are the extra rounds a blocking reviewer asked for.
	ReviewRounds int `json:"review_rounds"`
	Checks       int `json:"checks"`
	Steps        int `json:"steps"`
	StepsDone    int `json:"steps_done"`
	WorkerTurns  int `json:"worker_turns"`

	ModelCalls       int                  `json:"model_calls"`
	PromptTokens     int                  `json:"prompt_tokens"`
	CompletionTokens int                  `json:"completion_tokens"`
	Roles            map[string]RoleUsage `json:"roles"`
	// CachedPromptTokens and CacheWriteTokens are the parts of
	// PromptTokens served from and written to the endpoints' prompt caches.
	CachedPromptTokens int `json:"cached_prompt_tokens"`
	CacheWriteTokens   int `json:"cache_write_tokens"`
	// Cost is the money of every priced role's calls, in the price table's
	// currency; UnpricedRoles lists the roles that made calls without a
	// price (their tokens are not in Cost).
	Cost          float64  `json:"cost"`
	UnpricedRoles []string `json:"unpriced_roles,omitempty"`

	Counters

	WallTime    time.Duration `json:"wall_time_ns"`
	ModelTime   time.Duration `json:"model_time_ns"`
	ToolTime    time.Duration `json:"tool_time_ns"`
	SandboxTime time.Duration `json:"sandbox_time_ns"`
	// StartTime is the sessions' starts, from Run or Resume to the first
	// model call (the start snapshot, the sandbox, MCP servers: the
	// EventSetup steps), and OtherTime what is left of WallTime besides
	// the start, the model and the tools: Trio's own work between calls
	// (checkpoints, the Critic's reading of the changes). SandboxTime is
	// part of ToolTime.
	StartTime time.Duration `json:"start_time_ns"`
	OtherTime time.Duration `json:"other_time_ns"`
	Sessions  int           `json:"sessions"`
}

// LoadReport reads report.json from a run folder.
func LoadReport(runDir string) (*Report, error) {
	b, err := os.ReadFile(filepath.Join(runDir, ReportJSON))
	if err != nil {
		return nil, fmt.Errorf("load report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("load report %s: %w", filepath.Join(runDir, ReportJSON), err)
	}
	return &r, nil
}

func statusOf(r StopReason) string {
	switch r {
	case StopCompleted:
		return "completed"
	case StopInterrupted:
		return "interrupted"
	}
	return "stopped"
}

// sumCost fills in the run's cache and cost totals from its roles.
func (m *Metrics) sumCost() {
	m.CachedPromptTokens, m.CacheWriteTokens, m.Cost, m.UnpricedRoles = 0, 0, 0, nil
	for _, role := range slices.Sorted(maps.Keys(m.Roles)) {
		u := m.Roles[role]
		m.CachedPromptTokens += u.CachedPromptTokens
		m.CacheWriteTokens += u.CacheWriteTokens
		m.Cost += u.Cost
		if !u.Priced && u.Calls > 0 {
			m.UnpricedRoles = append(m.UnpricedRoles, role)
		}
	}
}

// Priced reports whether any role's calls had a price, i.e. whether Cost
// means anything.
func (m *Metrics) Priced() bool {
	for _, u := range m.Roles {
		if u.Priced {
			return true
		}
	}
	return false
}

// CostText is the run's cost for people: the amount with four decimals,
// the roles left out, or "not priced" when no role had a price.
func (m *Metrics) CostText() string {
	if !m.Priced() {
		return "not priced (no price table for these models in trio.yaml)"
	}
	s := fmt.Sprintf("%.4f", m.Cost)
	if len(m.UnpricedRoles) > 0 {
		s += fmt.Sprintf(" (without %s: no price)", strings.Join(m.UnpricedRoles, ", "))
	}
	return s
}

// write writes report.json and report.md; diff is the unified diff for
// report.md.
func (r *Report) write(dir, diff string) error {
	r.Metrics.sumCost()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, ReportJSON), append(b, '\n')); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, ReportMD), []byte(r.markdown(diff)))
}

// Markdown renders the report for people (without the diff, which
// report.md holds: see Diff).
func (r *Report) Markdown() string { return r.markdown("") }

func (r *Report) markdown(diff string) string {
	var b strings.Builder
	m := r.Metrics
	fmt.Fprintf(&b, "# Trio run %s\n\n", r.RunID)
	fmt.Fprintf(&b, "**Status:** %s — `%s`: %s\n\n", r.Status, r.Reason, r.Explanation)
	if r.Detail != "" {
		fmt.Fprintf(&b, "Detail: %s\n\n", oneLine(r.Detail, 500))
	}
	fmt.Fprintf(&b, "- Workspace: `%s`\n- Sandbox: %s\n- Started: %s, wall time %s\n\n",
		r.Workspace, r.Sandbox, r.Started.Format(time.RFC3339), m.WallTime.Round(time.Millisecond))
	fmt.Fprintf(&b, "## Goal\n\n%s\n\n", strings.TrimSpace(r.Goal))
	if r.Plan != nil {
		b.WriteString("## Plan\n\n")
		for i, s := range r.Plan.Steps {
			mark := " "
			if i < m.StepsDone {
				mark = "x"
			}
			fmt.Fprintf(&b, "- [%s] %d. %s — %s\n", mark, i+1, s.Title, strings.Join(s.Files, ", "))
		}
		fmt.Fprintf(&b, "\nTest command: `%s`; acceptance tests in `%s` (suite version %d)\n\n", r.Plan.TestCommand, r.Plan.TestsFolder(), r.SuiteVersion)
	}
	b.WriteString("## Metrics\n\n| metric | value |\n| --- | --- |\n")
	row := func(k string, v any) { fmt.Fprintf(&b, "| %s | %v |\n", k, v) }
	row("completed", m.Completed)
	row("first pass (green before any repair)", m.FirstPass)
	row("repair rounds", m.RepairRounds)
	row("test repairs (suite versions after the first)", m.TestRepairs)
	row("review rounds", m.ReviewRounds)
	row("critic checks", m.Checks)
	row("steps done", fmt.Sprintf("%d / %d", m.StepsDone, m.Steps))
	row("worker turns", m.WorkerTurns)
	row("model calls", m.ModelCalls)
	row("tokens (prompt / completion)", fmt.Sprintf("%d / %d", m.PromptTokens, m.CompletionTokens))
	row("prompt tokens cached (read / written)", fmt.Sprintf("%d / %d", m.CachedPromptTokens, m.CacheWriteTokens))
	row("cost", m.CostText())
	row("tool calls", m.ToolCalls)
	row("tool failures", m.ToolFailures)
	row("denials", m.Denials)
	row("confirmations asked (approved / refused)", fmt.Sprintf("%d (%d / %d)", m.Confirmations, m.Approved, m.Refused))
	row("malformed replies", m.Malformed)
	row("summaries / maskings", fmt.Sprintf("%d / %d", m.Summaries, m.Masked))
	row("wall time", m.WallTime.Round(time.Millisecond))
	row("model time", m.ModelTime.Round(time.Millisecond))
	row("tool time", m.ToolTime.Round(time.Millisecond))
	row("start time (snapshot, sandbox, MCP servers)", m.StartTime.Round(time.Millisecond))
	row("other time (Trio's own work between calls)", m.OtherTime.Round(time.Millisecond))
	row("sandbox time (part of tool time)", m.SandboxTime.Round(time.Millisecond))
	b.WriteString("\n### Per role\n\n| role | calls | retries | prompt tokens | cached read / written | completion tokens | cost | time | model |\n" +
		"| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	estimated := 0
	roles := make([]string, 0, len(m.Roles))
	for k := range m.Roles {
		roles = append(roles, k)
	}
	slices.Sort(roles)
	for _, k := range roles {
		u := m.Roles[k]
		model := u.Model
		if model == "" {
			model = "—"
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d / %d | %d | %s | %s | %s |\n", k, u.Calls, u.Retries, u.PromptTokens,
			u.CachedPromptTokens, u.CacheWriteTokens, u.CompletionTokens, u.CostText(), u.Duration.Round(time.Millisecond), model)
		estimated += u.Estimated
	}
	if estimated > 0 {
		if estimated == 1 {
			b.WriteString("\n1 call reported no token usage; its tokens were estimated with the tokenizer.\n")
		} else {
			fmt.Fprintf(&b, "\n%d calls reported no token usage; their tokens were estimated with the tokenizer.\n", estimated)
		}
	}
	if len(r.PlanRejections) > 0 {
		b.WriteString("\n## Plan rejections\n\n")
		for i, p := range r.PlanRejections {
			fmt.Fprintf(&b, "%d. %s\n", i+1, oneLine(p, 800))
		}
	}
	if len(r.Analyses) > 0 {
		b.WriteString("\n## Repair analyses\n\n")
		for i, a := range r.Analyses {
			fmt.Fprintf(&b, "%d. %s\n", i+1, oneLine(a, 800))
		}
	}
	if r.Findings != nil {
		fmt.Fprintf(&b, "\n## Last verdict: %s\n\n", r.Findings.Verdict)
		b.WriteString(findingsText(*r.Findings))
		b.WriteString("\n")
	}
	r.changesMarkdown(&b, diff)
	if len(r.Files) > 0 {
		b.WriteString("\n## Files\n\n")
		for _, f := range r.Files {
			fmt.Fprintf(&b, "- `%s`\n", f)
		}
	}
	return b.String()
}

// oneLine folds s onto one line of at most max bytes (plus "…"), cut at a
// rune boundary.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max] + "…"
}

// reportDiffMax caps the unified diff in report.md; trio diff shows it whole.
const reportDiffMax = 256 << 10

// changesMarkdown writes the changeset: a line per file, then the diff.
func (r *Report) changesMarkdown(b *strings.Builder, u string) {
	b.WriteString("\n## Changes\n\n")
	if r.ChangesNote != "" {
		fmt.Fprintf(b, "%s\n\n", r.ChangesNote)
	}
	if len(r.Changes) == 0 {
		if r.ChangesNote == "" {
			b.WriteString("No file changed.\n")
		}
		return
	}
	cs := Changeset{Files: r.Changes}
	add, del := cs.Totals()
	fmt.Fprintf(b, "%s, +%d −%d lines, against the workspace as the run started:\n\n", plural(len(r.Changes), "file", "files"), add, del)
	for _, f := range r.Changes {
		fmt.Fprintf(b, "- `%s` %s +%d −%d", f.Path, f.Status, f.Added, f.Removed)
		if f.Note != "" {
			fmt.Fprintf(b, " (%s)", f.Note)
		}
		b.WriteString("\n")
	}
	if u == "" {
		return
	}
	cut := false
	if len(u) > reportDiffMax {
		n := strings.LastIndexByte(u[:reportDiffMax], '\n')
		u, cut = u[:n+1], true
	}
	// A fence longer than any run of backticks in the diff.
	fence := "```"
	for strings.Contains(u, fence) {
		fence += "`"
	}
	fmt.Fprintf(b, "\n%sdiff\n%s%s\n", fence, u, fence)
	if cut {
		fmt.Fprintf(b, "\nThe diff is cut at %s; `trio diff %s` shows it whole.\n", byteSize(reportDiffMax), r.RunID)
	}
}

// notePlanRejection is the Planner's observer: a request after the first
// carries the Planner's feedback on the reply before it, which it refused
// (planner.Plan sends the problems back once). The last refusal, which no
// request follows, comes with the Planner's error (addPlanRejection).
func (r *run) notePlanRejection(req llm.Request, _ llm.Response, _ error) {
	if len(req.Messages) <= 2 {
		return
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role == llm.RoleUser {
		r.addPlanRejection(last.Content)
	}
}

// addPlanRejection records and shows why a plan was refused.
func (r *run) addPlanRejection(why string) {
	r.st.PlanRejections = append(r.st.PlanRejections, why)
	n := len(r.st.PlanRejections)
	r.trace(TraceEntry{Kind: "plan_rejected", Role: RolePlanner, Detail: why})
	r.emit(Event{Kind: EventWarning, Role: RolePlanner, Message: fmt.Sprintf("plan %d rejected: %s", n, oneLine(why, 400))})
}
