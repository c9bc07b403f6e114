package eval

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/critic/sentinel"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/tools/testreport"
)

// judge copies the run's workspace ws to dir, lays the task's hidden tests
// over it and runs the hidden command there in a fresh sandbox of the
// eval's kind (sc.Kind is decided: containerd, userns, landlock or local). The run's
// workspace is left as the run left it; the hidden tests exist only in
// dir, which no run's sandbox sees.
func judge(ctx context.Context, t Task, ws, dir, runID string, sc agent.SandboxConfig, pol *policy.Policy) (Hidden, error) {
	if t.Repo != nil {
		return judgeRepo(ctx, t, ws, dir, runID, sc, pol)
	}
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
	fw := testreport.FrameworkOf(t.HiddenCommand)
	set, err := laySentinels(t.HiddenPath(), dir, fw)
	if err != nil {
		return Hidden{}, err
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
	// The judged copy keeps the hidden tests as the suite has them.
	if err := liftSentinels(set, t.HiddenPath(), dir); err != nil {
		return Hidden{}, err
	}
	full := testreport.ParseExit(fw, res.Stdout, res.Stderr, res.ExitCode)
	// Every hidden test file is meant to run, so every sentinel is
	// expected; the hidden tests are counted without them.
	forged := set.Verify(full, res.ExitCode, nil)
	rep := set.Clean(full)
	h := Hidden{
		ExitCode: res.ExitCode, TimedOut: res.TimedOut, Passed: rep.Passed, Failed: rep.Failed, Errors: rep.Errors,
		Forged: len(forged) > 0, Sandbox: sb.Info().Kind, Isolated: sb.Info().Isolated, Duration: res.Duration,
		Enforced: sb.Info().Enforced, NotEnforced: sb.Info().NotEnforced,
	}
	// A pass needs the runner to say so: exit 0 alone is what a project
	// that exits early from an init function also gives. An honest runner
	// whose must-fail sentinel failed exits non-zero.
	exitOK := !res.TimedOut && (res.ExitCode == 0) != set.Failed(full)
	h.Pass = exitOK && rep.Failed == 0 && rep.Errors == 0 && rep.Passed > 0 && !h.Forged
	var names []string
	for _, f := range rep.Failures {
		names = append(names, f.Name)
	}
	var whys []string
	for _, p := range forged {
		if !slices.Contains(whys, p.Why) {
			whys = append(whys, p.Why)
		}
	}
	switch {
	case h.Forged:
		h.Detail = "forged: " + strings.Join(whys, "; ")
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

// laySentinels writes over the hidden tests in dir the sentinel tests of
// a new random Set (see package critic/sentinel): tests that must fail and
// tests that must pass, named like the hidden tests, with nonces made now.
// The run never saw them, so its code can only imitate an honest runner
// by understanding the check.
func laySentinels(hidden, dir, framework string) (*sentinel.Set, error) {
	var files []sentinel.File
	err := filepath.WalkDir(hidden, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(hidden, p)
		files = append(files, sentinel.File{Path: filepath.ToSlash(rel), Content: string(b)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the hidden tests: %w", err)
	}
	set := sentinel.New(nil, framework, files)
	for _, f := range set.Files() {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		os.Remove(p) // never write through a link the run left there
		if err := os.WriteFile(p, []byte(f.Content), 0o644); err != nil {
			return nil, fmt.Errorf("lay the sentinel tests: %w", err)
		}
	}
	return set, nil
}

// liftSentinels puts back in dir the hidden files the sentinels changed
// and removes the files they added.
func liftSentinels(set *sentinel.Set, hidden, dir string) error {
	for _, f := range set.Files() {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		b, err := os.ReadFile(filepath.Join(hidden, filepath.FromSlash(f.Path)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			err = os.Remove(p)
		case err == nil:
			os.Remove(p)
			err = os.WriteFile(p, b, 0o644)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove the sentinel tests: %w", err)
		}
	}
	return nil
}

// openJudge opens the judge's own sandbox on dir, of the eval's decided
// kind, through the same opening as every run (agent.OpenSandbox), so
// the judge isolates as its runs did: nothing of the run's sandbox (its
// caches, its processes) carries over.
func openJudge(ctx context.Context, sc agent.SandboxConfig, dir, runID string, limits sandbox.Limits) (sandbox.Sandbox, error) {
	return agent.OpenSandbox(ctx, sc, sandbox.RunSpec{Workspace: dir, RunID: runID, Limits: limits})
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
