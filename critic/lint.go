package critic

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/trioagent/trio/planner"
	"github.com/trioagent/trio/tools"
)

// CheckLint runs the project's linters (WithLint).
const CheckLint = "lint"

// KindLint marks a blocking linter's finding.
const KindLint Kind = "lint"

// WithLint turns on the lint check: every linter of tools.DetectLinters
// runs through the gate's run_linter (which the view must hold), one call
// per linter, the acceptance tests folder left out of the linters that
// take files. A finding of a blocking linter fails the check; the others
// are listed as advisory. blocking names the blocking linters; nil keeps
// the table's defaults (linters.yaml: go_vet, py_compile, node_check), an
// empty slice makes every linter advisory. A linter the policy denies or
// that is not installed is skipped and says so.
func WithLint(blocking []string) Option {
	return func(c *Critic) {
		c.lint = true
		c.lintBlocking = slices.Clone(blocking)
	}
}

func (c *Critic) blocks(l tools.Linter) bool {
	if c.lintBlocking == nil {
		return l.Blocking
	}
	return slices.Contains(c.lintBlocking, l.Name)
}

// checkLint runs the linters; ok is false when the lint check does not
// apply (off, no run_linter, no language with linters).
func (c *Critic) checkLint(ctx context.Context, plan planner.Plan) (run checkRun, ok bool, err error) {
	run = checkRun{result: CheckResult{Name: CheckLint}}
	if _, has := c.view.Tool(runLinterTool); !c.lint || !has {
		return run, false, nil
	}
	linters, err := tools.DetectLinters(c.ws.Root.FS())
	if err != nil || len(linters) == 0 {
		return run, false, err
	}
	var status, lines, raw []string
	for _, l := range linters {
		args, _ := json.Marshal(map[string]any{"linters": []string{l.Name}, "exclude": []string{plan.TestsFolder()}})
		res, err := c.gate.Call(ctx, c.view, tools.Call{ID: c.nextCallID(runLinterTool), Name: runLinterTool, Arguments: args})
		if err != nil {
			return run, false, fmt.Errorf("critic: run_linter %s: %w", l.Name, err)
		}
		mode := "advisory"
		if c.blocks(l) {
			mode = "blocking"
		}
		switch {
		case res.Denied:
			status = append(status, fmt.Sprintf("%s skipped: %s", l.Name, firstLine(res.Output)))
			continue
		case res.Tests == nil:
			// Nothing for it to read (no file of its kind outside the tests).
			status = append(status, fmt.Sprintf("%s skipped: %s", l.Name, firstLine(res.Output)))
			continue
		case res.Tests.Skipped > 0:
			status = append(status, l.Name+" skipped: not installed")
			continue
		}
		raw = append(raw, res.Output)
		if len(res.Tests.Failures) == 0 {
			status = append(status, l.Name+" clean")
			continue
		}
		status = append(status, fmt.Sprintf("%s (%s): %d finding(s)", l.Name, mode, len(res.Tests.Failures)))
		for _, x := range res.Tests.Failures {
			loc := location(x.File, x.Line)
			lines = append(lines, fmt.Sprintf("%s %s: %s: %s", mode, loc, l.Name, clip(x.Message, maxMessage)))
			if mode == "blocking" {
				run.failures = append(run.failures, Failure{TestID: "lint:" + l.Name, Location: loc,
					Expected: "no " + l.Name + " finding", Actual: clip(x.Message, maxMessage), Kind: KindLint})
			}
		}
	}
	run.result.OK = len(run.failures) == 0
	run.result.Detail = listDetail(strings.Join(status, "; "), lines)
	run.raw = strings.Join(raw, "\n")
	return run, true, nil
}
