package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
)

// RunCommandName is the name of the run_command tool.
const RunCommandName = "run_command"

// RunCommandParams are the arguments of run_command.
type RunCommandParams struct {
	Command        string `json:"command" jsonschema:"description=The command line to run (e.g. go build ./...). Pipes and redirections work only if the policy enables shell mode."`
	Dir            string `json:"dir,omitempty" jsonschema:"description=Working folder (relative to the workspace root). Default: the root."`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"description=Seconds before the command is killed. Default and maximum: the policy's command timeout."`

	cmd   policy.Command
	dir   string
	links *workspaceLinks
}

// Effects says run_command runs one command, and reads its working folder
// when that is not the root: the policy judges path arguments relative to
// the workspace root, so a folder the policy denies (".git") must not become
// a way in. The command's path arguments are judged through the
// workspace's symlinks too.
func (p *RunCommandParams) Effects() []Effect {
	effects := []Effect{{Kind: EffectExec, Command: p.cmd, Links: p.links.policy()}}
	if p.dir != "." {
		effects[0].Dir = p.dir
		effects = append(effects, Effect{Kind: EffectRead, Path: p.dir})
	}
	return effects
}

// RunCommand returns the run_command tool working in ws.
func RunCommand(ws *Workspace) Tool {
	return newTyped(RunCommandName, description(RunCommandName), func(p *RunCommandParams) error {
		if strings.TrimSpace(p.Command) == "" {
			return argErr("command", "must not be empty")
		}
		cmd, err := policy.ParseCommand(p.Command)
		if err != nil {
			return argErr("command", "%v", err)
		}
		p.cmd, p.links = cmd, ws.links()
		if p.TimeoutSeconds < 0 {
			return argErr("timeout_seconds", "must be positive, got %d", p.TimeoutSeconds)
		}
		p.dir, err = ws.Rel("dir", p.Dir)
		return err
	}, func(ctx context.Context, p RunCommandParams) (Result, error) {
		if rel, changed := p.links.changed(); changed {
			return fsResult(rel, errChanged), nil
		}
		return ws.exec(ctx, p.cmd, p.dir, time.Duration(p.TimeoutSeconds)*time.Second)
	})
}

// argv is what the sandbox runs for cmd: its argv, or sh -c for a line
// that needs a shell (the gate only lets those through in shell mode).
func argv(cmd policy.Command) []string {
	if cmd.Shell || len(cmd.Argv) == 0 {
		return []string{"sh", "-c", cmd.Line}
	}
	return cmd.Argv
}

// exec runs cmd in the sandbox and describes what happened. A command that
// fails is a result; a sandbox that fails is an error.
func (ws *Workspace) exec(ctx context.Context, cmd policy.Command, dir string, timeout time.Duration) (Result, error) {
	if dir != "." {
		// The sandbox joins dir to the workspace as a plain path: it must be
		// a folder the workspace's Root reaches, as judged.
		if err := ws.checked("run in", dir); err != nil {
			return fsResult(dir, err), nil
		}
		if st, err := ws.Root.Stat(dir); err != nil {
			return fsResult(dir, err), nil
		} else if !st.IsDir() {
			return errorResult("%s: not a folder; dir must name a folder in the workspace", dir), nil
		}
	}
	sr, err := ws.run(ctx, argv(cmd), dir, timeout)
	if r, ok := commandProblem(err, dir); ok {
		return r, nil
	}
	if err != nil {
		return Result{}, err
	}
	res := Result{
		OK:        sr.ExitCode == 0 && !sr.TimedOut && !sr.OOMKilled,
		Stdout:    sr.Stdout,
		Stderr:    sr.Stderr,
		ExitCode:  sr.ExitCode,
		Duration:  sr.Duration,
		Truncated: sr.Truncated(),
	}
	res.Output = describeExit(sr, ws.timeout(timeout))
	return res, nil
}

// run executes argv through the sandbox with the workspace's limits.
func (ws *Workspace) run(ctx context.Context, argv []string, dir string, timeout time.Duration) (sandbox.Result, error) {
	if ws.Sandbox == nil {
		return sandbox.Result{}, errors.New("no sandbox: this workspace cannot run commands")
	}
	if dir == "." {
		dir = ""
	}
	sr, err := ws.Sandbox.Exec(ctx, sandbox.Command{Argv: argv, Dir: dir, Timeout: ws.timeout(timeout), Check: IsCheck(ctx)})
	if err != nil {
		return sandbox.Result{}, fmt.Errorf("sandbox: %w", err)
	}
	return sr, nil
}

// commandProblem turns a sandbox's refusal of the command itself (a
// working folder that leads out of the workspace, an empty program name)
// into a result the model can act on: the sandbox works, the call was wrong.
func commandProblem(err error, dir string) (Result, bool) {
	switch {
	case err == nil:
		return Result{}, false
	case errors.Is(err, sandbox.ErrOutsideWorkspace):
		return errorResult("dir: %q leads outside the workspace (through a symlink or ..); name a folder inside the workspace", dir), true
	case errors.Is(err, sandbox.ErrEmptyCommand):
		return errorResult("command: the program name is empty; start the command with the program to run"), true
	}
	return Result{}, false
}

// timeout is the command timeout: what was asked, never more than the limit.
func (ws *Workspace) timeout(asked time.Duration) time.Duration {
	lim := ws.Limits.Timeout
	switch {
	case asked <= 0:
		return lim
	case lim > 0 && asked > lim:
		return lim
	}
	return asked
}

func describeExit(sr sandbox.Result, timeout time.Duration) string {
	var parts []string
	switch {
	case sr.TimedOut:
		parts = append(parts, fmt.Sprintf("timed out after %s and was killed", timeout))
	case sr.OOMKilled:
		parts = append(parts, "killed: out of memory")
	case sr.DiskExceeded:
		parts = append(parts, "killed: disk limit (limits.disk) reached")
	case sr.ExitCode == 0:
		parts = append(parts, "exit code 0")
	default:
		parts = append(parts, fmt.Sprintf("exit code %d", sr.ExitCode))
	}
	if sr.StdoutTruncated {
		parts = append(parts, "stdout truncated")
	}
	if sr.StderrTruncated {
		parts = append(parts, "stderr truncated")
	}
	return strings.Join(parts, "; ")
}
