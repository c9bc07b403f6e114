package eval

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/containerd"
	"github.com/trioagent/trio/sandbox/userns"
	"github.com/trioagent/trio/tools/testreport"
)

// judge copies the run's workspace ws to dir, lays the task's hidden tests
// over it and runs the hidden command there in a fresh sandbox of the
// eval's kind (sc.Kind is decided: containerd, userns or local). The run's
// workspace is left as the run left it; the hidden tests exist only in
// dir, which no run's sandbox sees.
func judge(ctx context.Context, t Task, ws, dir, runID string, sc agent.SandboxConfig, pol *policy.Policy) (Hidden, error) {
	if err := os.RemoveAll(dir); err != nil {
		return Hidden{}, err
	}
	if err := sandbox.CopyTree(ws, dir); err != nil {
		return Hidden{}, fmt.Errorf("copy the workspace: %w", err)
	}
	if err := dropBytecode(dir); err != nil {
		return Hidden{}, err
	}
	if err := sandbox.CopyTree(t.HiddenPath(), dir); err != nil {
		return Hidden{}, fmt.Errorf("copy the hidden tests: %w", err)
	}
	l := pol.Limits()
	limits := sandbox.Limits{Timeout: t.HiddenTimeout, Memory: l.Memory, CPUs: l.CPUs, Pids: l.Pids, Output: l.Output, Disk: l.Disk}
	sb, err := openJudge(ctx, sc, dir, runID, limits)
	if err != nil {
		return Hidden{}, err
	}
	defer sb.Close()
	res, err := sb.Exec(ctx, sandbox.Command{Argv: t.HiddenCommand, Timeout: t.HiddenTimeout, Check: true})
	if err != nil {
		return Hidden{}, err
	}
	rep := testreport.ParseExit(testreport.FrameworkOf(t.HiddenCommand), res.Stdout, res.Stderr, res.ExitCode)
	h := Hidden{
		ExitCode: res.ExitCode, TimedOut: res.TimedOut, Passed: rep.Passed, Failed: rep.Failed, Errors: rep.Errors,
		Sandbox: sb.Info().Kind, Isolated: sb.Info().Isolated, Duration: res.Duration,
	}
	// A pass needs the runner to say so: exit 0 alone is what a project
	// that exits early from an init function also gives.
	h.Pass = res.ExitCode == 0 && !res.TimedOut && rep.Failed == 0 && rep.Errors == 0 && rep.Passed > 0
	var names []string
	for _, f := range rep.Failures {
		names = append(names, f.Name)
	}
	switch {
	case len(names) > 0:
		h.Detail = "failed: " + strings.Join(names, ", ")
	case res.TimedOut:
		h.Detail = fmt.Sprintf("timed out after %s", t.HiddenTimeout)
	case !h.Pass:
		h.Detail = fmt.Sprintf("exit code %d, %d tests passed", res.ExitCode, rep.Passed)
	}
	// The full output stays next to the judged copy, for a person.
	out := fmt.Sprintf("$ %s\nexit code %d\n--- stdout\n%s\n--- stderr\n%s\n", strings.Join(t.HiddenCommand, " "), res.ExitCode, res.Stdout, res.Stderr)
	if err := os.WriteFile(filepath.Join(filepath.Dir(dir), "hidden-output.txt"), []byte(out), 0o644); err != nil {
		return h, err
	}
	return h, nil
}

// openJudge opens the judge's own sandbox on dir: nothing of the run's
// sandbox (its caches, its processes) carries over.
func openJudge(ctx context.Context, sc agent.SandboxConfig, dir, runID string, limits sandbox.Limits) (sandbox.Sandbox, error) {
	switch sc.Kind {
	case agent.SandboxContainerd:
		cfg := sc.Containerd
		cfg.Workspace, cfg.RunID, cfg.Limits = dir, runID, limits
		return containerd.New(ctx, cfg)
	case agent.SandboxUserns:
		cfg := sc.Userns
		cfg.Workspace, cfg.Limits = dir, limits
		return userns.New(ctx, cfg)
	case agent.SandboxLocal:
		return sandbox.NewLocal(dir, limits)
	}
	return nil, fmt.Errorf("sandbox kind %q: want %s, %s or %s", sc.Kind, agent.SandboxContainerd, agent.SandboxUserns, agent.SandboxLocal)
}

// dropBytecode removes from the judge's copy the Python bytecode the run's
// code may have written: a check never loads a compiled file the Worker's
// code could have forged (sandbox.CheckEnv moves __pycache__ away, but a
// sourceless module.pyc beside the sources would still be imported).
func dropBytecode(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == "__pycache__":
			if err := os.RemoveAll(p); err != nil {
				return err
			}
			return fs.SkipDir
		case !d.IsDir() && (strings.HasSuffix(d.Name(), ".pyc") || strings.HasSuffix(d.Name(), ".pyo")):
			return os.Remove(p)
		}
		return nil
	})
}

// writeFileAtomic writes data to a temporary file next to path, syncs it
// and renames it into place.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
