package eval

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/critic/sentinel"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/tools/testreport"
)

// ErrBrokenTask is wrapped when a repository task cannot judge anything:
// a fail_to_pass test already passes on the seed, a pass_to_pass test
// does not, or the setup command fails there.
var ErrBrokenTask = errors.New("broken repository task")

// RepoTask is a repository task (SWE-bench style): a seed repository, a
// setup command and two lists of tests. A run passes when every
// fail_to_pass test passes and every pass_to_pass test still does; on
// the seed (with the hidden tests laid over it) every fail_to_pass test
// must fail and every pass_to_pass test pass, or the task is broken.
type RepoTask struct {
	// Seed is the seed as task.yaml names it: a folder, a .tar, .tar.gz
	// or .tgz archive, or a git repository (with Commit).
	Seed   string
	Commit string
	// Setup runs in the judged copy, in the judge's sandbox, before the
	// test lists (no shell; empty for none).
	Setup      []string
	FailToPass TestList
	PassToPass TestList
	// seedDir is the seed as a folder: Seed itself, or where the archive
	// or the commit was unpacked.
	seedDir string
}

// TestList is a command and the tests its report must show passed.
type TestList struct {
	// Command runs in the judged copy (no shell). It must run whole test
	// files: the judge's control tests lie in the hidden test files.
	Command []string
	// Tests are names as the runner reports them, or a dotted suffix of
	// such a name (test_calc.DivTest.test_by_zero, TestDivide).
	Tests []string
}

type repoYAML struct {
	Seed       string       `yaml:"seed"`
	Commit     string       `yaml:"commit"`
	Setup      string       `yaml:"setup"`
	FailToPass testListYAML `yaml:"fail_to_pass"`
	PassToPass testListYAML `yaml:"pass_to_pass"`
}

type testListYAML struct {
	Command string   `yaml:"command"`
	Tests   []string `yaml:"tests"`
}

// loadRepo checks a task's repository: section and makes its seed a
// folder.
func loadRepo(dir, file string, ry *repoYAML) (*RepoTask, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: repository: %s", ErrInvalidSuite, file, fmt.Sprintf(format, args...))
	}
	r := &RepoTask{Seed: ry.Seed, Commit: ry.Commit, Setup: strings.Fields(ry.Setup)}
	if ry.Seed == "" || !filepath.IsLocal(ry.Seed) {
		return nil, bad("seed %q: want a folder, archive or git repository inside the task folder", ry.Seed)
	}
	for _, l := range []struct {
		name string
		in   testListYAML
		out  *TestList
	}{{"fail_to_pass", ry.FailToPass, &r.FailToPass}, {"pass_to_pass", ry.PassToPass, &r.PassToPass}} {
		l.out.Command = strings.Fields(l.in.Command)
		l.out.Tests = slices.Clone(l.in.Tests)
		switch {
		case len(l.out.Tests) > 0 && len(l.out.Command) == 0:
			return nil, bad("%s.command is missing", l.name)
		case slices.Contains(l.out.Tests, ""):
			return nil, bad("%s.tests: an empty name", l.name)
		}
	}
	if len(r.FailToPass.Tests) == 0 {
		return nil, bad("fail_to_pass.tests is empty: a task needs tests that its change makes pass")
	}
	for _, n := range r.FailToPass.Tests {
		if slices.Contains(r.PassToPass.Tests, n) {
			return nil, bad("test %s is in both fail_to_pass and pass_to_pass", n)
		}
	}
	seed := filepath.Join(dir, ry.Seed)
	fi, err := os.Stat(seed)
	if err != nil {
		return nil, bad("seed: %v", err)
	}
	git := fi.IsDir() && isGitRepo(seed)
	switch {
	case r.Commit != "" && !git:
		return nil, bad("commit %s: the seed %s is not a git repository", r.Commit, ry.Seed)
	case git && r.Commit == "":
		return nil, bad("seed %s is a git repository: name the commit to start from (commit:)", ry.Seed)
	case fi.IsDir() && !git:
		r.seedDir = seed
	default:
		r.seedDir, err = unpackSeed(seed, r.Commit, git)
		if err != nil {
			return nil, bad("seed %s: %v", ry.Seed, err)
		}
	}
	return r, nil
}

func isGitRepo(dir string) bool {
	for _, p := range []string{".git", "HEAD"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			_, errObj := os.Stat(filepath.Join(dir, "objects"))
			return p == ".git" || errObj == nil
		}
	}
	return false
}

// unpackSeed unpacks an archive, or a git repository's commit, once into
// a cache folder named by its content and returns that folder.
func unpackSeed(seed, commit string, git bool) (string, error) {
	var tarball io.Reader
	h := sha256.New()
	if git {
		// Nothing of the repository's own configuration runs a program
		// here: no fsmonitor, no hooks, no system or global config.
		cmd := exec.Command("git", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-C", seed, "archive", "--format=tar", commit)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("git archive %s: %v %s", commit, err, strings.TrimSpace(stderr.String()))
		}
		tarball = bytes.NewReader(out)
		h.Write(out)
	} else {
		b, err := os.ReadFile(seed)
		if err != nil {
			return "", err
		}
		h.Write(b)
		switch {
		case strings.HasSuffix(seed, ".tar.gz"), strings.HasSuffix(seed, ".tgz"):
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return "", err
			}
			tarball = zr
		case strings.HasSuffix(seed, ".tar"):
			tarball = bytes.NewReader(b)
		default:
			return "", errors.New("want a folder, a .tar, .tar.gz or .tgz archive, or a git repository")
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	root := filepath.Join(cache, "trio", "eval-seeds")
	dst := filepath.Join(root, hex.EncodeToString(h.Sum(nil))[:32])
	if fi, err := os.Stat(dst); err == nil && fi.IsDir() {
		return dst, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(root, ".unpack-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := untar(tarball, tmp); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dst); err != nil {
		if fi, serr := os.Stat(dst); serr == nil && fi.IsDir() {
			return dst, nil // another eval unpacked it first
		}
		return "", err
	}
	return dst, nil
}

// untar writes the folders and regular files of a tar stream under dst;
// a name outside dst is an error, links and special files are skipped (as
// sandbox.CopyTree skips them).
func untar(r io.Reader, dst string) error {
	tr := tar.NewReader(r)
	for {
		hd, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.FromSlash(strings.TrimPrefix(hd.Name, "./"))
		if name == "" || name == "." {
			continue
		}
		if !filepath.IsLocal(name) {
			return fmt.Errorf("archive entry %q is outside the archive", hd.Name)
		}
		p := filepath.Join(dst, name)
		switch hd.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(hd.Mode&0o755)|0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}

// listOutcome is what one list's command said of its tests.
type listOutcome struct {
	passed, notPassed []string
	report            testreport.Report
	exitCode          int
	timedOut          bool
}

// repoOutcome is what one check of a repository task found.
type repoOutcome struct {
	f2p, p2p listOutcome
	// forged are the ways the runner's report departs from an honest
	// one's (with sentinels only).
	forged []string
	// setupErr says the setup command failed ("" when it ran well).
	setupErr string
	// log is every command's output, for a person.
	log      string
	info     sandbox.Info
	duration time.Duration
}

// repoCheck lays the hidden tests (and sentinels, when sentinels is set)
// over dir, runs the setup and both lists there in one fresh sandbox, and
// returns what they said.
func repoCheck(ctx context.Context, t Task, dir, runID string, sc agent.SandboxConfig, pol *policy.Policy, sentinels bool) (o repoOutcome, err error) {
	r := t.Repo
	if err = sandbox.CopyTree(t.HiddenPath(), dir); err != nil {
		return o, fmt.Errorf("copy the hidden tests: %w", err)
	}
	l := pol.Limits()
	limits := sandbox.Limits{Timeout: t.HiddenTimeout, Memory: l.Memory, CPUs: l.CPUs, Pids: l.Pids, Output: l.Output, Disk: l.Disk}
	var lay *sentinelLayer
	if sentinels {
		set, err := laySentinels(t.HiddenPath(), dir, testreport.FrameworkOf(r.FailToPass.Command))
		if err != nil {
			return o, err
		}
		lay = &sentinelLayer{set: set}
		// The judged copy keeps the hidden tests as the suite has them.
		defer func() {
			if lerr := liftSentinels(set, t.HiddenPath(), dir); err == nil {
				err = lerr
			}
		}()
	}
	sb, err := openJudge(ctx, sc, dir, runID, limits)
	if err != nil {
		return o, err
	}
	defer sb.Close()
	o.info = sb.Info()
	var log strings.Builder
	defer func() { o.log = log.String() }()
	run := func(argv []string) (sandbox.Result, error) {
		res, err := sb.Exec(ctx, sandbox.Command{Argv: argv, Timeout: t.HiddenTimeout, Check: true})
		if err != nil {
			return res, err
		}
		o.duration += res.Duration
		fmt.Fprintf(&log, "$ %s\nexit code %d\n--- stdout\n%s\n--- stderr\n%s\n", strings.Join(argv, " "), res.ExitCode, res.Stdout, res.Stderr)
		return res, nil
	}
	if len(r.Setup) > 0 {
		res, err := run(r.Setup)
		if err != nil {
			return o, err
		}
		if res.ExitCode != 0 || res.TimedOut {
			o.setupErr = fmt.Sprintf("setup %q exited %d", strings.Join(r.Setup, " "), res.ExitCode)
			return o, nil
		}
	}
	judgeList := func(list TestList, rep testreport.Report, exitCode int, timedOut bool) listOutcome {
		lo := listOutcome{report: rep, exitCode: exitCode, timedOut: timedOut}
		for _, name := range list.Tests {
			if !timedOut && reportedPassed(rep, name) {
				lo.passed = append(lo.passed, name)
			} else {
				lo.notPassed = append(lo.notPassed, name)
			}
		}
		return lo
	}
	outcome := func(list TestList, verify bool) (listOutcome, error) {
		res, err := run(list.Command)
		if err != nil {
			return listOutcome{}, err
		}
		rep := testreport.ParseExit(testreport.FrameworkOf(list.Command), res.Stdout, res.Stderr, res.ExitCode)
		if lay != nil {
			if verify {
				o.forged = append(o.forged, lay.verify(rep, res.ExitCode)...)
			}
			rep = lay.set.Clean(rep)
		}
		return judgeList(list, rep, res.ExitCode, res.TimedOut), nil
	}
	if o.f2p, err = outcome(r.FailToPass, true); err != nil {
		return o, err
	}
	switch {
	case len(r.PassToPass.Tests) == 0:
	case slices.Equal(r.PassToPass.Command, r.FailToPass.Command):
		o.p2p = judgeList(r.PassToPass, o.f2p.report, o.f2p.exitCode, o.f2p.timedOut)
	default:
		if o.p2p, err = outcome(r.PassToPass, false); err != nil {
			return o, err
		}
	}
	return o, nil
}

// reportedPassed reports whether the report names test as passed: the
// runner's name itself, or a name ending in test after a '.', '/', ' ' or
// '(' ("test_by_zero (test_calc.DivTest.test_by_zero)" ends in
// "DivTest.test_by_zero)"...), and not among its failures.
func reportedPassed(rep testreport.Report, test string) bool {
	match := func(name string) bool {
		name = strings.TrimSuffix(strings.TrimSpace(name), ")")
		if name == test {
			return true
		}
		if !strings.HasSuffix(name, test) {
			return false
		}
		c := name[len(name)-len(test)-1]
		return c == '.' || c == '/' || c == ' ' || c == '(' || c == ':'
	}
	for _, f := range rep.Failures {
		if match(f.Name) {
			return false
		}
	}
	return slices.ContainsFunc(rep.PassedTests, match)
}

// judgeRepo judges a repository task: first the seed (every fail_to_pass
// test must fail there and every pass_to_pass test pass, else the task is
// broken and nothing is judged), then the run's workspace ws copied to
// dir.
func judgeRepo(ctx context.Context, t Task, ws, dir, runID string, sc agent.SandboxConfig, pol *policy.Policy) (Hidden, error) {
	seedDir := dir + "-seed"
	for _, d := range []string{dir, seedDir} {
		if err := os.RemoveAll(d); err != nil {
			return Hidden{}, err
		}
	}
	if err := sandbox.CopyTree(t.Repo.seedDir, seedDir); err != nil {
		return Hidden{}, fmt.Errorf("copy the seed: %w", err)
	}
	seed, err := repoCheck(ctx, t, seedDir, runID+"-seed", sc, pol, false)
	if err != nil {
		return Hidden{}, err
	}
	seedLog := filepath.Join(filepath.Dir(dir), "seed-output.txt")
	if err := os.WriteFile(seedLog, []byte(seed.log), 0o644); err != nil {
		return Hidden{}, err
	}
	var broken []string
	if seed.setupErr != "" {
		broken = append(broken, seed.setupErr+" on the seed")
	}
	if len(seed.f2p.passed) > 0 {
		broken = append(broken, "fail_to_pass tests pass on the seed (the change is already there, or they do not test it): "+strings.Join(seed.f2p.passed, ", "))
	}
	if len(seed.p2p.notPassed) > 0 {
		broken = append(broken, "pass_to_pass tests do not pass on the seed: "+strings.Join(seed.p2p.notPassed, ", "))
	}
	if len(broken) > 0 {
		return Hidden{}, fmt.Errorf("%w: task %s (%s): %s; see %s", ErrBrokenTask, t.ID, filepath.Join(t.Dir, TaskFile),
			strings.Join(broken, "; "), seedLog)
	}

	if err := sandbox.CopyTree(ws, dir); err != nil {
		return Hidden{}, fmt.Errorf("copy the workspace: %w", err)
	}
	if err := dropBytecode(dir); err != nil {
		return Hidden{}, err
	}
	o, err := repoCheck(ctx, t, dir, runID, sc, pol, true)
	if err != nil {
		return Hidden{}, err
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(dir), "hidden-output.txt"), []byte(o.log), 0o644); err != nil {
		return Hidden{}, err
	}
	f2p, p2p, forged, setupErr, info := o.f2p, o.p2p, o.forged, o.setupErr, o.info
	h := Hidden{
		ExitCode: f2p.exitCode, TimedOut: f2p.timedOut || p2p.timedOut,
		Passed: len(f2p.passed) + len(p2p.passed), Failed: len(f2p.notPassed) + len(p2p.notPassed),
		Forged: len(forged) > 0, Sandbox: info.Kind, Isolated: info.Isolated, Duration: o.duration,
		Enforced: info.Enforced, NotEnforced: info.NotEnforced,
	}
	if h.ExitCode == 0 {
		h.ExitCode = p2p.exitCode
	}
	h.Pass = setupErr == "" && h.Failed == 0 && !h.Forged && !h.TimedOut
	var whys []string
	switch {
	case setupErr != "":
		h.Detail = setupErr
	case h.Forged:
		for _, w := range forged {
			if !slices.Contains(whys, w) {
				whys = append(whys, w)
			}
		}
		h.Detail = "forged: " + strings.Join(whys, "; ")
	case h.TimedOut:
		h.Detail = fmt.Sprintf("timed out after %s", t.HiddenTimeout)
	case h.Failed > 0:
		if len(f2p.notPassed) > 0 {
			whys = append(whys, "fail_to_pass not passed: "+strings.Join(f2p.notPassed, ", "))
		}
		if len(p2p.notPassed) > 0 {
			whys = append(whys, "pass_to_pass broken: "+strings.Join(p2p.notPassed, ", "))
		}
		h.Detail = strings.Join(whys, "; ")
	}
	return h, nil
}

// sentinelLayer is the control tests laid over a judged copy.
type sentinelLayer struct{ set *sentinel.Set }

// verify is what departs, in rep and exitCode, from an honest runner's
// report of the control tests.
func (l *sentinelLayer) verify(rep testreport.Report, exitCode int) []string {
	var whys []string
	for _, p := range l.set.Verify(rep, exitCode, nil) {
		whys = append(whys, p.Why)
	}
	return whys
}
