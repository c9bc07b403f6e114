package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/tools/testreport"
)

// RunTestsName is the name of the run_tests tool.
const RunTestsName = "run_tests"

// RunTestsParams are the arguments of run_tests.
type RunTestsParams struct {
	Command string `json:"command,omitempty" jsonschema:"description=Test command to run (e.g. go test ./... or python3 -m pytest -q). Default: detected from the project files."`

	cmd       policy.Command
	links     *workspaceLinks
	framework string
	addedJSON bool
	detected  bool
}

// Effects says run_tests runs one command, whose path arguments are
// judged through the workspace's symlinks.
func (p *RunTestsParams) Effects() []Effect {
	return []Effect{{Kind: EffectExec, Command: p.cmd, Links: p.links.policy()}}
}

// RunTests returns the run_tests tool working in ws.
func RunTests(ws *Workspace) Tool {
	return newTyped(RunTestsName, description(RunTestsName), func(p *RunTestsParams) error {
		p.links = ws.links()
		if strings.TrimSpace(p.Command) == "" {
			detected, framework, ok := testreport.Detect(ws.Root.FS())
			if !ok {
				return argErr("command", "required here: no test setup was detected in the workspace (go.mod, pytest, package.json ...)")
			}
			p.framework, p.detected = framework, true
			p.cmd = policy.Command{Line: policy.QuoteArgv(detected), Argv: detected}
		} else {
			cmd, err := policy.ParseCommand(p.Command)
			if err != nil {
				return argErr("command", "%v", err)
			}
			p.cmd = cmd
			p.framework = testreport.FrameworkOf(argv(cmd))
		}
		if !p.cmd.Shell {
			// The runner must name the tests that passed: the Critic checks
			// each acceptance test by name, not by count.
			if with := testreport.WithTestNames(p.cmd.Argv); !slices.Equal(with, p.cmd.Argv) {
				p.addedJSON = testreport.GoJSON(with) && !testreport.GoJSON(p.cmd.Argv)
				p.cmd = policy.Command{Line: policy.QuoteArgv(with), Argv: with}
			}
		}
		return nil
	}, ws.runTests)
}

// maxCoveredStderr bounds the stderr a run_tests result keeps when the
// parsed report already covers the run: its tail, for what the parser
// could not place.
const maxCoveredStderr = 512

// stderrFor is the stderr a run_tests result carries: repeated lines
// folded, and only a short tail when the report parsed the run (it holds
// the failures, their messages and the counts), since the model would
// otherwise read the same failures twice.
func stderrFor(rep testreport.Report, stderr string) string {
	stderr = testreport.FoldRepeats(stderr)
	if rep.Total() == 0 || len(stderr) <= maxCoveredStderr {
		return stderr
	}
	cut := len(stderr) - maxCoveredStderr
	if i := strings.IndexByte(stderr[cut:], '\n'); i >= 0 && i < maxCoveredStderr/2 {
		cut += i + 1
	}
	for cut < len(stderr) && !utf8.RuneStart(stderr[cut]) {
		cut++
	}
	return fmt.Sprintf("(%d bytes of stderr left out: the report above covers them)\n%s", cut, stderr[cut:])
}

func (ws *Workspace) runTests(ctx context.Context, p RunTestsParams) (Result, error) {
	if rel, changed := p.links.changed(); changed {
		return fsResult(rel, errChanged), nil
	}
	sr, err := ws.run(ctx, argv(p.cmd), "", 0)
	if r, ok := commandProblem(err, "."); ok {
		return r, nil
	}
	if err != nil {
		return Result{}, err
	}
	rep := testreport.ParseExit(p.framework, sr.Stdout, sr.Stderr, sr.ExitCode)
	if ws.Sandbox != nil {
		rep = rep.Relative(ws.Sandbox.Info().WorkspaceDir)
	}
	rep = rep.Relative(ws.Dir)
	// The model reads the counts and failures; the passed names are for
	// programs (Result.Tests) and would only crowd its context.
	brief := rep
	brief.PassedTests, brief.Durations = nil, nil
	b, err := json.Marshal(brief)
	if err != nil {
		return Result{}, fmt.Errorf("encode test report: %w", err)
	}
	ok := rep.OK() && sr.ExitCode == 0
	if judge := testsJudge(ctx); judge != nil {
		ok = judge(rep, sr.ExitCode)
	}
	res := Result{
		OK:        ok && !sr.TimedOut && !sr.OOMKilled,
		ExitCode:  sr.ExitCode,
		Duration:  sr.Duration,
		Stderr:    stderrFor(rep, sr.Stderr),
		Truncated: sr.Truncated(),
		Tests:     &rep,
	}
	if !p.addedJSON && !strings.Contains(sr.Stdout, `"Action":"`) {
		res.Stdout = testreport.FoldRepeats(sr.Stdout) // plain output reads well; JSON events do not
	}
	res.Output = fmt.Sprintf("%s\n$ %s\n%s; %s", rep.Summary(), p.cmd.Line,
		describeExit(sr, ws.timeout(0)), b)
	if p.detected && p.framework == testreport.FrameworkPytest && strings.Contains(sr.Stdout+sr.Stderr, "No module named pytest") {
		res.Output += "\npytest is not installed here: call run_tests with command \"python3 -m unittest discover -v\" instead"
	}
	return res, nil
}
