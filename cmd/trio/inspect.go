package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/tools"
)

// auditLine is one line of audit.jsonl (a tools.Record as JSON; policy's
// Verdict and Answer marshal as text but do not unmarshal, hence strings).
type auditLine struct {
	Time     time.Time      `json:"time"`
	Role     string         `json:"role"`
	Tool     string         `json:"tool"`
	Effects  []tools.Effect `json:"effects"`
	Decision struct {
		Verdict string `json:"verdict"`
		Rule    string `json:"rule"`
		Reason  string `json:"reason"`
	} `json:"decision"`
	Answer       string `json:"answer"`
	AutoApproved bool   `json:"auto_approved"`
	Outcome      string `json:"outcome"`
	Error        string `json:"error"`
	DurationMS   int64  `json:"duration_ms"`
}

func newInspectCmd(g *globals, io stdio) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "inspect RUN",
		Short: "Show a run: plan, steps, tool calls with decisions, findings, tokens per role, why it stopped",
		Long: `Inspect reads a run folder (RUN is a run id under the runs folder, or a path)
and shows the plan and its steps, every tool call with the policy's decision,
the Critic's verdicts and last findings, tokens per role and why the run
stopped. It works on finished runs (report.json) and on interrupted or
running ones (state.json).

Exit codes: 0 shown, 3 no such run (or not a run folder).`,
		Example: `  trio inspect runs/20261130-172510-6eab9f
  trio inspect 20261130-172510-6eab9f          # an id under ./runs (or --runs-dir)
  trio inspect --all trio-demo/runs/20261130-172510-6eab9f`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(g.config)
			if err != nil {
				return err
			}
			dir, err := resolveRun(args[0], runsDir(g, cfg))
			if err != nil {
				return err
			}
			return inspect(io.out, dir, all)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "list every tool call (default: the last 40)")
	return cmd
}

func inspect(w io.Writer, dir string, all bool) error {
	// The run as of its last checkpoint: the final report of a finished
	// run, the state so far of an unfinished one.
	st, err := inspectRun(dir)
	if err != nil {
		return err
	}

	fmt.Fprintf(w, "Run %s  (%s)\n", st.RunID, abs(dir))
	fmt.Fprintf(w, "Goal: %s\n", clip(firstLine(st.Goal), 160))
	fmt.Fprintf(w, "Workspace: %s\n", st.Workspace)
	if len(st.Instructions) > 0 {
		fmt.Fprintf(w, "Instructions: %s\n", strings.Join(st.Instructions, ", "))
	}
	if st.Sandbox != "" {
		fmt.Fprintf(w, "Sandbox: %s\n", st.Sandbox)
	}
	if len(st.Metadata) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(st.Metadata)) {
			if v := st.Metadata[k]; v != "" {
				kv = append(kv, strings.TrimPrefix(k, "trio.")+"="+v)
			}
		}
		fmt.Fprintf(w, "Started with: %s\n", strings.Join(kv, ", "))
	}

	fmt.Fprintln(w, "\nPlan")
	if st.Plan == nil {
		fmt.Fprintln(w, "  (no plan yet)")
	} else {
		for i, s := range st.Plan.Steps {
			mark := " "
			if i < st.Metrics.StepsDone {
				mark = "x"
			}
			fmt.Fprintf(w, "  [%s] %d. %s — %s\n", mark, i+1, s.Title, strings.Join(s.Files, ", "))
		}
		fmt.Fprintf(w, "  test command: %s; acceptance tests in %s\n", st.Plan.TestCommand, st.Plan.TestsFolder())
		for _, r := range st.Plan.Risks {
			fmt.Fprintf(w, "  risk: %s\n", clip(r, 160))
		}
	}

	if len(st.PlanRejections) > 0 {
		fmt.Fprintf(w, "\nPlan rejections (%d)\n", len(st.PlanRejections))
		for i, p := range st.PlanRejections {
			fmt.Fprintf(w, "  %d. %s\n", i+1, clip(p, 400))
		}
	}

	calls, err := readAudit(filepath.Join(dir, agent.AuditFile))
	if err != nil {
		return failure(err)
	}
	fmt.Fprintf(w, "\nTool calls (%d; decisions from audit.jsonl)\n", len(calls))
	from := 0
	if !all && len(calls) > 40 {
		from = len(calls) - 40
		if from == 1 {
			fmt.Fprintf(w, "  … 1 earlier call (--all shows it)\n")
		} else {
			fmt.Fprintf(w, "  … %d earlier calls (--all shows them)\n", from)
		}
	}
	for _, c := range calls[from:] {
		decision := c.Decision.Verdict
		if c.Answer != "" {
			decision += " → " + c.Answer
		} else if c.AutoApproved {
			decision += " → always (earlier answer)"
		}
		role := c.Role
		if role == "" {
			role = "-" // written before records carried the role
		}
		fmt.Fprintf(w, "  %s  %-7s %-12s %-40s %-18s %-7s %5dms  %s\n", c.Time.Format("15:04:05"), role, c.Tool,
			clip(effectText(c.Effects), 40), decision, c.Outcome, c.DurationMS, clip(c.Decision.Rule, 60))
	}

	trace, err := agent.ReadTrace(dir)
	if err != nil {
		return failure(err)
	}
	var verdicts []agent.TraceEntry
	for _, e := range trace {
		if e.Kind == "critic_verdict" && e.Findings != nil {
			verdicts = append(verdicts, e)
		}
	}
	fmt.Fprintln(w, "\nCritic verdicts")
	if len(verdicts) == 0 {
		fmt.Fprintln(w, "  (none yet)")
	}
	// Every verdict with its findings: an earlier failure the Worker
	// repaired says as much about the run as the last one.
	for i, v := range verdicts {
		fmt.Fprintf(w, "  %d. %s (suite v%d): %s\n", i+1, v.Findings.Verdict, v.SuiteVersion, clip(v.Findings.Summary, 200))
		for _, x := range v.Findings.Failures {
			fmt.Fprintf(w, "     - %s [%s] at %s: expected %s, got %s\n", x.TestID, x.Kind, x.Location, clip(x.Expected, 80), clip(x.Actual, 80))
		}
		for _, x := range v.Findings.SuspectTests {
			fmt.Fprintf(w, "     - suspect test %s: %s\n", x.TestID, clip(x.Reason, 160))
		}
	}
	if len(verdicts) == 0 {
		if f := st.Findings; f != nil && !f.Passed() {
			fmt.Fprintln(w, "\nLast findings")
			for _, x := range f.Failures {
				fmt.Fprintf(w, "  - %s [%s] at %s: expected %s, got %s\n", x.TestID, x.Kind, x.Location, clip(x.Expected, 80), clip(x.Actual, 80))
			}
		}
	}
	if len(st.Analyses) > 0 {
		fmt.Fprintln(w, "\nWorker's repair analyses (what failed, why, and whether its last change caused it)")
		for i, a := range st.Analyses {
			fmt.Fprintf(w, "  round %d: %s\n", i+1, clip(a, 600))
		}
	}
	inspectChanges(w, st)

	usage := st.Metrics.Roles
	fmt.Fprintln(w, "\nModel, tokens and cost per role (prompt / completion, prompt tokens read from / written to the cache, calls, cost)")
	total := agent.RoleUsage{}
	for _, role := range slices.Sorted(maps.Keys(usage)) {
		u := usage[role]
		total.PromptTokens += u.PromptTokens
		total.CompletionTokens += u.CompletionTokens
		total.CachedPromptTokens += u.CachedPromptTokens
		total.CacheWriteTokens += u.CacheWriteTokens
		total.Calls += u.Calls
		model := u.Model
		if model == "" {
			model = "(model not reported)"
		}
		fmt.Fprintf(w, "  %-14s %8d / %-8d cache %8d / %-8d %4d %-5s %10s  %-8s %s\n", role, u.PromptTokens, u.CompletionTokens,
			u.CachedPromptTokens, u.CacheWriteTokens, u.Calls, callNoun(u.Calls), u.CostText(), u.Duration.Round(time.Millisecond), model)
	}
	fmt.Fprintf(w, "  %-14s %8d / %-8d cache %8d / %-8d %4d %-5s %10s\n", "total", total.PromptTokens, total.CompletionTokens,
		total.CachedPromptTokens, total.CacheWriteTokens, total.Calls, callNoun(total.Calls), totalCost(&st.Metrics))
	fmt.Fprintf(w, "Cost: %s\n", st.Metrics.CostText())
	cn := st.Metrics.Counters
	fmt.Fprintf(w, "Tool calls %d, failures %d, denials %d, confirmations asked %d (approved %d, refused %d), replayed on resume %d\n",
		cn.ToolCalls, cn.ToolFailures, cn.Denials, cn.Confirmations, cn.Approved, cn.Refused, cn.Replayed)

	fmt.Fprintln(w, "\nWhy it stopped")
	if st.Reason == "" {
		fmt.Fprintf(w, "  not finished: %s, last checkpoint %s\n", whereText(st), st.Updated.Local().Format(time.DateTime))
		fmt.Fprintf(w, "  if no trio process is running it, continue with: trio resume %s\n", abs(dir))
		return nil
	}
	fmt.Fprintf(w, "  %s\n", stopLine(st.Status, st.Status, st.Reason, st.Explanation))
	if st.Detail != "" {
		fmt.Fprintf(w, "  detail: %s\n", clip(st.Detail, 400))
	}
	if st.Reason.Resumable() {
		fmt.Fprintf(w, "  continue with: trio resume %s\n", abs(dir))
	}
	return nil
}

func effectText(es []tools.Effect) string {
	var parts []string
	for _, e := range es {
		switch {
		case len(e.Command.Argv) > 0:
			parts = append(parts, quoteArgv(e.Command.Argv))
		case e.Command.Line != "":
			parts = append(parts, e.Command.Line)
		case e.Path != "":
			parts = append(parts, e.Path)
		}
	}
	return strings.Join(parts, " ")
}

func readAudit(path string) ([]auditLine, error) {
	var out []auditLine
	err := eachLine(path, func(b []byte) {
		var l auditLine
		if json.Unmarshal(b, &l) == nil {
			out = append(out, l)
		}
	})
	return out, err
}

// eachLine calls fn for every line of a JSON-lines file; a missing file has
// no lines, and a torn last line is skipped by the caller's decoder.
func eachLine(path string, fn func([]byte)) error {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		fn(sc.Bytes())
	}
	return sc.Err()
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// callNoun is the noun that agrees with n.
func callNoun(n int) string {
	if n == 1 {
		return "call"
	}
	return "calls"
}

// whereText is where an unfinished run is: its step while building, its
// repair round while repairing, else its phase.
func whereText(st *agent.Report) string {
	switch {
	case st.Phase == "repair":
		return fmt.Sprintf("phase repair, round %d", st.Metrics.RepairRounds)
	case st.Phase == "build" && st.Plan != nil && st.Metrics.StepsDone < len(st.Plan.Steps):
		return fmt.Sprintf("phase build, step %d of %d", st.Metrics.StepsDone+1, len(st.Plan.Steps))
	}
	return "phase " + st.Phase
}

// totalCost is the run's cost for the totals row: the amount, or "—" when
// no role had a price.
func totalCost(m *agent.Metrics) string {
	if !m.Priced() {
		return "—"
	}
	return fmt.Sprintf("%.4f", m.Cost)
}

// inspectChanges is the per-file summary of the run's changes against the
// workspace as it started (trio diff RUN shows the lines).
func inspectChanges(w io.Writer, st *agent.Report) {
	fmt.Fprintln(w, "\nChanges against the starting workspace (as the workspace is now; trio diff RUN shows the lines)")
	if st.ChangesNote != "" {
		fmt.Fprintf(w, "  %s\n", st.ChangesNote)
	}
	if len(st.Changes) == 0 {
		if st.ChangesNote == "" {
			fmt.Fprintln(w, "  (no file changed)")
		}
		return
	}
	diffStat(w, &agent.Changeset{Files: st.Changes})
}
