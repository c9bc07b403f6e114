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
	"github.com/trioagent/trio/critic"
	"github.com/trioagent/trio/planner"
	"github.com/trioagent/trio/tools"
)

// checkpoint is the part of state.json that inspect shows. The agent owns
// the file; these fields are its documented JSON names.
type checkpoint struct {
	RunID     string                     `json:"run_id"`
	Goal      string                     `json:"goal"`
	Workspace string                     `json:"workspace"`
	Phase     string                     `json:"phase"`
	Step      int                        `json:"step"`
	Plan      *planner.Plan              `json:"plan"`
	Findings  *critic.Findings           `json:"findings"`
	Usage     map[string]agent.RoleUsage `json:"usage"`
	Counters  agent.Counters             `json:"counters"`
	Reason    agent.StopReason           `json:"reason"`
	Detail    string                     `json:"detail"`
	Updated   time.Time                  `json:"updated"`
}

// auditLine is one line of audit.jsonl (a tools.Record as JSON; policy's
// Verdict and Answer marshal as text but do not unmarshal, hence strings).
type auditLine struct {
	Time     time.Time      `json:"time"`
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
running ones (state.json).`,
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
	var st checkpoint
	b, err := os.ReadFile(filepath.Join(dir, agent.StateFile))
	if err != nil {
		return configError(fmt.Errorf("%s is not a run folder: %w", dir, err))
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return failure(fmt.Errorf("%s: %w", filepath.Join(dir, agent.StateFile), err))
	}
	rep, _ := agent.LoadReport(dir) // nil while the run is unfinished

	fmt.Fprintf(w, "Run %s  (%s)\n", st.RunID, abs(dir))
	fmt.Fprintf(w, "Goal: %s\n", clip(firstLine(st.Goal), 160))
	fmt.Fprintf(w, "Workspace: %s\n", st.Workspace)
	if rep != nil {
		fmt.Fprintf(w, "Sandbox: %s\n", rep.Sandbox)
	}

	fmt.Fprintln(w, "\nPlan")
	if st.Plan == nil {
		fmt.Fprintln(w, "  (no plan yet)")
	} else {
		done := st.Step
		if rep != nil {
			done = rep.Metrics.StepsDone
		}
		for i, s := range st.Plan.Steps {
			mark := " "
			if i < done {
				mark = "x"
			}
			fmt.Fprintf(w, "  [%s] %d. %s — %s\n", mark, i+1, s.Title, strings.Join(s.Files, ", "))
		}
		fmt.Fprintf(w, "  test command: %s; acceptance tests in %s\n", st.Plan.TestCommand, st.Plan.TestsFolder())
		for _, r := range st.Plan.Risks {
			fmt.Fprintf(w, "  risk: %s\n", clip(r, 160))
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
		fmt.Fprintf(w, "  … %d earlier calls (--all shows them)\n", from)
	}
	for _, c := range calls[from:] {
		decision := c.Decision.Verdict
		if c.Answer != "" {
			decision += " → " + c.Answer
		} else if c.AutoApproved {
			decision += " → always (earlier answer)"
		}
		fmt.Fprintf(w, "  %s  %-12s %-40s %-18s %-7s %5dms  %s\n", c.Time.Format("15:04:05"), c.Tool,
			clip(effectText(c.Effects), 40), decision, c.Outcome, c.DurationMS, clip(c.Decision.Rule, 60))
	}

	verdicts, err := readVerdicts(filepath.Join(dir, agent.TraceFile))
	if err != nil {
		return failure(err)
	}
	fmt.Fprintln(w, "\nCritic verdicts")
	if len(verdicts) == 0 {
		fmt.Fprintln(w, "  (none yet)")
	}
	for i, v := range verdicts {
		fmt.Fprintf(w, "  %d. %s (suite v%d): %s\n", i+1, v.Findings.Verdict, v.SuiteVersion, clip(v.Findings.Summary, 200))
	}
	if f := st.Findings; f != nil && !f.Passed() {
		fmt.Fprintln(w, "\nLast findings")
		for _, x := range f.Failures {
			fmt.Fprintf(w, "  - %s [%s] at %s: expected %s, got %s\n", x.TestID, x.Kind, x.Location, clip(x.Expected, 80), clip(x.Actual, 80))
		}
		for _, x := range f.SuspectTests {
			fmt.Fprintf(w, "  - suspect test %s: %s\n", x.TestID, clip(x.Reason, 160))
		}
	}

	usage := st.Usage
	if rep != nil && rep.Metrics.Roles != nil {
		usage = rep.Metrics.Roles
	}
	fmt.Fprintln(w, "\nTokens per role (prompt / completion, calls)")
	total := agent.RoleUsage{}
	for _, role := range slices.Sorted(maps.Keys(usage)) {
		u := usage[role]
		total.PromptTokens += u.PromptTokens
		total.CompletionTokens += u.CompletionTokens
		total.Calls += u.Calls
		fmt.Fprintf(w, "  %-14s %8d / %-8d %4d calls  %s\n", role, u.PromptTokens, u.CompletionTokens, u.Calls, u.Duration.Round(time.Millisecond))
	}
	fmt.Fprintf(w, "  %-14s %8d / %-8d %4d calls\n", "total", total.PromptTokens, total.CompletionTokens, total.Calls)
	cn := st.Counters
	fmt.Fprintf(w, "Tool calls %d, failures %d, denials %d, confirmations %d, replayed on resume %d\n",
		cn.ToolCalls, cn.ToolFailures, cn.Denials, cn.Confirmations, cn.Replayed)

	fmt.Fprintln(w, "\nWhy it stopped")
	switch {
	case rep != nil:
		fmt.Fprintf(w, "  %s: %s — %s\n", rep.Status, rep.Reason, rep.Explanation)
		if rep.Detail != "" {
			fmt.Fprintf(w, "  detail: %s\n", clip(rep.Detail, 400))
		}
		if rep.Reason.Resumable() {
			fmt.Fprintf(w, "  continue with: trio resume %s\n", abs(dir))
		}
	case st.Reason != "":
		fmt.Fprintf(w, "  %s — %s\n", st.Reason, st.Reason.Explain())
	default:
		fmt.Fprintf(w, "  not finished: phase %s, step %d, last checkpoint %s\n", st.Phase, st.Step+1, st.Updated.Local().Format(time.DateTime))
		fmt.Fprintf(w, "  if no trio process is running it, continue with: trio resume %s\n", abs(dir))
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

type verdictLine struct {
	Kind         string          `json:"kind"`
	Findings     critic.Findings `json:"findings"`
	SuiteVersion int             `json:"suite_version"`
}

func readVerdicts(path string) ([]verdictLine, error) {
	var out []verdictLine
	err := eachLine(path, func(b []byte) {
		if !strings.Contains(string(b), `"kind":"critic_verdict"`) {
			return
		}
		var v verdictLine
		if json.Unmarshal(b, &v) == nil && v.Kind == "critic_verdict" {
			out = append(out, v)
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
