package viewer

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/tools"
)

// Data is what the page shows, as the script receives it.
type Data struct {
	RunID       string    `json:"run_id"`
	Goal        string    `json:"goal"`
	Status      string    `json:"status"`
	Reason      string    `json:"reason"`
	Explanation string    `json:"explanation"`
	Sandbox     string    `json:"sandbox"`
	Started     time.Time `json:"started"`
	// EndMS is the timeline's end, in milliseconds since Started.
	EndMS    int64     `json:"end_ms"`
	Steps    []Step    `json:"steps"`
	Phases   []Phase   `json:"phases"`
	Models   []Model   `json:"models"`
	Tools    []Tool    `json:"tools"`
	Verdicts []Verdict `json:"verdicts"`
	Repairs  []Repair  `json:"repairs"`
	// Summaries are where the Worker's history was folded: the index of
	// the next model call, and the tokens before and after.
	Summaries []Summary `json:"summaries"`
	Files     []File    `json:"files"`
	Roles     []Role    `json:"roles"`
	Totals    Totals    `json:"totals"`
}

// Step is a plan step and its state: done, stopped (the run ended in it)
// or pending.
type Step struct {
	N     int      `json:"n"`
	Title string   `json:"title"`
	Files []string `json:"files"`
	State string   `json:"state"`
}

// Phase is a stretch of the run: plan, design_tests, build step N, check,
// repair N.
type Phase struct {
	Name    string `json:"name"`
	Role    string `json:"role"`
	StartMS int64  `json:"start_ms"`
	EndMS   int64  `json:"end_ms"`
}

// Model is one model call.
type Model struct {
	Role       string `json:"role"`
	StartMS    int64  `json:"start_ms"`
	DurMS      int64  `json:"dur_ms"`
	Prompt     int    `json:"prompt"`
	Completion int    `json:"completion"`
	Cached     int    `json:"cached,omitempty"`
	Estimated  bool   `json:"estimated,omitempty"`
	Error      string `json:"error,omitempty"`
	Finish     string `json:"finish,omitempty"`
}

// Tool is one tool call; Out indexes the outputs block (-1: none).
type Tool struct {
	Role     string `json:"role"`
	Step     int    `json:"step,omitempty"`
	Repair   int    `json:"repair,omitempty"`
	Name     string `json:"name"`
	CallID   string `json:"call_id"`
	Target   string `json:"target"`
	Args     string `json:"args,omitempty"`
	Decision string `json:"decision"`
	Rule     string `json:"rule,omitempty"`
	Reason   string `json:"reason,omitempty"`
	OK       bool   `json:"ok"`
	StartMS  int64  `json:"start_ms"`
	DurMS    int64  `json:"dur_ms"`
	Out      int    `json:"out"`
}

// Verdict is one Critic check's findings.
type Verdict struct {
	N        int           `json:"n"`
	AtMS     int64         `json:"at_ms"`
	Verdict  string        `json:"verdict"`
	Summary  string        `json:"summary"`
	Failures []FailureView `json:"failures"`
	Checks   []CheckView   `json:"checks"`
}

// FailureView is one failure the Critic found.
type FailureView struct {
	TestID   string `json:"test_id"`
	Location string `json:"location"`
	Expected string `json:"expected"`
	Actual   string `json:"actual"`
	Kind     string `json:"kind"`
}

// CheckView is one deterministic check.
type CheckView struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Repair is a repair round and the Worker's analysis.
type Repair struct {
	N        int    `json:"n"`
	AtMS     int64  `json:"at_ms"`
	Analysis string `json:"analysis"`
}

// Summary is one fold of the Worker's history.
type Summary struct {
	AtMS     int64  `json:"at_ms"`
	NextCall int    `json:"next_call"`
	Before   int    `json:"before"`
	After    int    `json:"after"`
	Kind     string `json:"kind"`
	Detail   string `json:"detail"`
}

// File is a workspace file at the end and how often a tool wrote it.
type File struct {
	Path   string `json:"path"`
	Writes int    `json:"writes"`
	// Status is added, modified or deleted against the run's start (empty
	// when the run folder has no snapshot, or the file did not change),
	// with the lines added and removed; Diff indexes its unified diff in
	// the outputs (-1: none).
	Status  string `json:"status,omitempty"`
	Added   int    `json:"added,omitempty"`
	Removed int    `json:"removed,omitempty"`
	Note    string `json:"note,omitempty"`
	Diff    int    `json:"diff"`
}

// Role is one role's totals.
type Role struct {
	Name       string  `json:"name"`
	Calls      int     `json:"calls"`
	Prompt     int     `json:"prompt"`
	Completion int     `json:"completion"`
	Cached     int     `json:"cached,omitempty"`
	Cost       float64 `json:"cost,omitempty"`
	Priced     bool    `json:"priced,omitempty"`
}

// Totals are the run's figures.
type Totals struct {
	ModelCalls   int     `json:"model_calls"`
	ToolCalls    int     `json:"tool_calls"`
	Prompt       int     `json:"prompt"`
	Completion   int     `json:"completion"`
	Cost         float64 `json:"cost,omitempty"`
	Priced       bool    `json:"priced,omitempty"`
	RepairRounds int     `json:"repair_rounds"`
	WallMS       int64   `json:"wall_ms"`
}

// roleOrder is the timeline's lanes, top to bottom.
var roleOrder = []string{agent.RolePlanner, agent.RoleTestDesigner, agent.RoleWorker, agent.RoleCritic, agent.RoleSummarizer}

// Load reads the run folder dir into the page's data and the tool
// outputs. A folder without a report is read from its checkpoint (a run
// that was interrupted or is still going).
func Load(dir string) (*Data, []string, error) {
	rep, err := agent.LoadReport(dir)
	if err != nil {
		if rep, err = agent.Inspect(dir); err != nil {
			return nil, nil, fmt.Errorf("viewer: %s: %w", dir, err)
		}
	}
	trace, err := agent.ReadTrace(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("viewer: %w", err)
	}
	audit, err := readAudit(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		return nil, nil, err
	}
	d := &Data{RunID: rep.RunID, Goal: rep.Goal, Status: rep.Status, Reason: string(rep.Reason), Explanation: rep.Explanation,
		Sandbox: rep.Sandbox, Started: rep.Started}
	start := rep.Started
	if start.IsZero() && len(trace) > 0 {
		start = trace[0].Time
	}
	d.Started = start
	ms := func(t time.Time) int64 { return t.Sub(start).Milliseconds() }
	var outputs []string
	writes := map[string]int{}

	// Phases: each phase entry starts one; the plan phase runs from the
	// start to the first. A build phase is cut at each finish_step.
	type mark struct {
		name, role string
		at         time.Time
	}
	var marks []mark
	// The start (snapshot, sandbox, MCP servers...) runs to the last setup
	// entry before the first model reply; the plan phase from there. A
	// run without setup entries plans from its start.
	planAt := time.Time{}
	for _, e := range trace {
		if e.Kind == "phase" || e.Kind == "model_reply" {
			break
		}
		if e.Kind == "setup" {
			planAt = e.Time
		}
	}
	if planAt.After(start) {
		marks = append(marks, mark{"start", "", start})
	} else {
		planAt = start
	}
	marks = append(marks, mark{"plan", agent.RolePlanner, planAt})
	buildStep := 0
	inBuild := false
	var end time.Time
	for _, e := range trace {
		if e.Time.After(end) {
			end = e.Time
		}
		switch e.Kind {
		case "phase":
			switch e.Phase {
			case "build":
				inBuild, buildStep = true, e.Step
				marks = append(marks, mark{fmt.Sprintf("build step %d", buildStep), agent.RoleWorker, e.Time})
			case "check":
				inBuild = false
				marks = append(marks, mark{"check", agent.RoleCritic, e.Time})
			case "repair":
				inBuild = false
				marks = append(marks, mark{fmt.Sprintf("repair %d", e.Repair), agent.RoleWorker, e.Time})
			case "design_tests", "test_repair":
				inBuild = false
				marks = append(marks, mark{strings.ReplaceAll(e.Phase, "_", " "), agent.RoleTestDesigner, e.Time})
			default:
				inBuild = false
				marks = append(marks, mark{e.Phase, "", e.Time})
			}
		case "model_reply":
			m := Model{Role: e.Role, StartMS: ms(e.Time.Add(-e.Duration)), DurMS: e.Duration.Milliseconds(), Estimated: e.UsageEstimated, Error: e.Error, Finish: e.FinishReason}
			if u := e.Usage; u != nil {
				m.Prompt, m.Completion, m.Cached = u.PromptTokens, u.CompletionTokens, u.CachedPromptTokens
			}
			d.Models = append(d.Models, m)
		case "tool_call":
			t := Tool{Role: e.Role, Step: e.Step, Repair: e.Repair, Name: e.Tool, CallID: e.CallID, Decision: e.Decision,
				StartMS: ms(e.Time.Add(-e.Duration)), DurMS: e.Duration.Milliseconds(), Out: -1, OK: true}
			if len(e.Args) > 0 {
				t.Args = string(e.Args)
			}
			out := ""
			if r := e.Result; r != nil {
				t.OK = r.OK
				out = resultText(r)
			} else if e.Detail != "" {
				out = e.Detail
			}
			if a, ok := audit[e.CallID]; ok {
				t.Rule, t.Reason, t.Target = a.Decision.Rule, a.Decision.Reason, effects(a.Effects)
				if e.Result == nil {
					t.OK = a.Outcome == tools.OutcomeOK
					if a.Error != "" {
						out = strings.TrimSpace(out + "\n" + a.Error)
					}
				}
				for _, ef := range a.Effects {
					if ef.Kind == tools.EffectWrite && a.Outcome == tools.OutcomeOK {
						writes[ef.Path]++
					}
				}
			}
			if out != "" {
				t.Out = len(outputs)
				outputs = append(outputs, out)
			}
			d.Tools = append(d.Tools, t)
			if inBuild && e.Tool == agent.FinishStepName && t.OK {
				buildStep++
				if buildStep <= len(planSteps(rep)) {
					marks = append(marks, mark{fmt.Sprintf("build step %d", buildStep), agent.RoleWorker, e.Time})
				}
			}
		case "critic_verdict":
			if f := e.Findings; f != nil {
				v := Verdict{N: len(d.Verdicts) + 1, AtMS: ms(e.Time), Verdict: string(f.Verdict), Summary: f.Summary}
				for _, x := range f.Failures {
					v.Failures = append(v.Failures, FailureView{TestID: x.TestID, Location: x.Location, Expected: x.Expected, Actual: x.Actual, Kind: string(x.Kind)})
				}
				for _, c := range f.Checks {
					v.Checks = append(v.Checks, CheckView{Name: c.Name, OK: c.OK, Detail: c.Detail})
				}
				d.Verdicts = append(d.Verdicts, v)
			}
		case "repair_analysis":
			d.Repairs = append(d.Repairs, Repair{N: e.Repair, AtMS: ms(e.Time), Analysis: e.Detail})
		case "summary", "masked":
			d.Summaries = append(d.Summaries, Summary{AtMS: ms(e.Time), NextCall: len(d.Models), Before: e.TokensBefore, After: e.TokensAfter, Kind: e.Kind, Detail: e.Detail})
		}
	}
	if !rep.Finished.IsZero() && rep.Finished.After(end) {
		end = rep.Finished
	}
	d.EndMS = ms(end)
	for i, m := range marks {
		p := Phase{Name: m.name, Role: m.role, StartMS: ms(m.at), EndMS: d.EndMS}
		if i+1 < len(marks) {
			p.EndMS = ms(marks[i+1].at)
		}
		d.Phases = append(d.Phases, p)
	}
	for i, s := range planSteps(rep) {
		st := Step{N: i + 1, Title: s.Title, Files: s.Files, State: "pending"}
		switch {
		case i < rep.Metrics.StepsDone:
			st.State = "done"
		case i == rep.Metrics.StepsDone && rep.Status != "completed":
			st.State = "stopped"
		}
		d.Steps = append(d.Steps, st)
	}
	// The files: what the run changed against its start, where the run
	// folder has the snapshot, and the files the report lists.
	listed := map[string]bool{}
	if c, err := agent.Diff(dir); err == nil {
		for _, f := range c.Files {
			listed[f.Path] = true
			file := File{Path: f.Path, Writes: writes[f.Path], Status: f.Status, Added: f.Added, Removed: f.Removed, Note: f.Note, Diff: -1}
			if u := c.FileDiff(f.Path); u != "" {
				file.Diff = len(outputs)
				outputs = append(outputs, u)
			}
			d.Files = append(d.Files, file)
		}
	}
	for _, f := range rep.Files {
		if !listed[f] {
			d.Files = append(d.Files, File{Path: f, Writes: writes[f], Diff: -1})
		}
	}
	m := rep.Metrics
	for _, name := range roleOrder {
		u, ok := m.Roles[name]
		if !ok {
			continue
		}
		d.Roles = append(d.Roles, Role{Name: name, Calls: u.Calls, Prompt: u.PromptTokens, Completion: u.CompletionTokens, Cached: u.CachedPromptTokens, Cost: u.Cost, Priced: u.Priced})
	}
	d.Totals = Totals{ModelCalls: m.ModelCalls, ToolCalls: m.ToolCalls, Prompt: m.PromptTokens, Completion: m.CompletionTokens,
		Cost: m.Cost, Priced: m.Priced(), RepairRounds: m.RepairRounds, WallMS: m.WallTime.Milliseconds()}
	return d, outputs, nil
}

func planSteps(rep *agent.Report) []planStep {
	if rep.Plan == nil {
		return nil
	}
	out := make([]planStep, len(rep.Plan.Steps))
	for i, s := range rep.Plan.Steps {
		out[i] = planStep{Title: s.Title, Files: s.Files}
	}
	return out
}

type planStep struct {
	Title string
	Files []string
}

// resultText is a tool result as the page shows it: the output, then
// stdout and stderr when they say something else, and the exit code.
func resultText(r *tools.Result) string {
	var parts []string
	if r.Output != "" {
		parts = append(parts, r.Output)
	}
	if r.Stdout != "" && r.Stdout != r.Output {
		parts = append(parts, "stdout:\n"+r.Stdout)
	}
	if r.Stderr != "" {
		parts = append(parts, "stderr:\n"+r.Stderr)
	}
	if r.ExitCode != 0 {
		parts = append(parts, fmt.Sprintf("exit code %d", r.ExitCode))
	}
	if r.Truncated {
		parts = append(parts, "(output truncated)")
	}
	return strings.Join(parts, "\n")
}

func effects(es []tools.Effect) string {
	var parts []string
	for _, e := range es {
		switch {
		case e.Command.Line != "":
			parts = append(parts, "$ "+e.Command.Line)
		case len(e.Command.Argv) > 0:
			parts = append(parts, "$ "+strings.Join(e.Command.Argv, " "))
		case e.Path != "":
			parts = append(parts, string(e.Kind)+" "+e.Path)
		}
	}
	return strings.Join(parts, "; ")
}

// readAudit reads audit.jsonl keyed by call id; a missing file is empty
// (an old run), a torn last line is skipped.
func readAudit(path string) (map[string]tools.Record, error) {
	out := map[string]tools.Record{}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("viewer: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var lines [][]byte
	for sc.Scan() {
		lines = append(lines, slices.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("viewer: %s: %w", path, err)
	}
	for i, l := range lines {
		if len(strings.TrimSpace(string(l))) == 0 {
			continue
		}
		var r tools.Record
		if err := json.Unmarshal(l, &r); err != nil {
			if i == len(lines)-1 {
				break
			}
			return nil, fmt.Errorf("viewer: %s:%d: %w", path, i+1, err)
		}
		out[r.CallID] = r
	}
	return out, nil
}
