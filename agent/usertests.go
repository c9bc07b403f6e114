package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/trioagent/trio/critic"
)

// UserTestsDir is the folder of a run folder that keeps the acceptance
// tests the person supplied (WithTests), as read when the run started, so
// that a resumed run has them whatever became of the original folder.
const UserTestsDir = "suite/user"

// maxUserTestBytes bounds a supplied suite, as the Critic bounds a
// designed one.
const maxUserTestBytes = 2 << 20

// userTests are the person's acceptance tests of WithTests.
type userTests struct {
	files    []critic.SuiteFile // relative to the tests folder
	designed bool
	dir      string
}

// WithTests makes the regular files under dir the run's acceptance tests,
// read once, here. They go into the plan's tests folder at the same
// relative paths and become the Critic's canonical suite: restored and
// hash-checked before every check, read-only for the Worker, any change by
// the project's code reported as tampering, and never rewritten. With
// designed false they are the whole suite and the test designer is not
// asked; with designed true the Critic's designed tests are added to them.
// A test the Critic suspects is wrong stops the run with the suspect test
// and the reason in the report (checks_failed) instead of being repaired.
//
// dir must hold at least one file; symbolic links and caches (__pycache__,
// *.pyc) are skipped.
func WithTests(dir string, designed bool) Option {
	return func(c *config) error {
		files, err := readUserTests(dir)
		if err != nil {
			return fmt.Errorf("agent: WithTests: %w", err)
		}
		c.userTests = &userTests{files: files, designed: designed, dir: dir}
		return nil
	}
}

func readUserTests(dir string) ([]critic.SuiteFile, error) {
	var files []critic.SuiteFile
	size := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "__pycache__" || d.Name() == ".pytest_cache" || (p != dir && strings.HasPrefix(d.Name(), "."))) {
			return fs.SkipDir
		}
		if !d.Type().IsRegular() || strings.HasSuffix(p, ".pyc") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if size += len(b); size > maxUserTestBytes {
			return fmt.Errorf("more than %d bytes of tests", maxUserTestBytes)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files = append(files, critic.SuiteFile{Path: filepath.ToSlash(rel), Content: string(b)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tests folder %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("tests folder %s holds no file", dir)
	}
	return files, nil
}

// keepUserTests writes the supplied tests into the run folder the first
// time, and reads them back from there when the run resumes without
// WithTests.
func (r *run) keepUserTests() error {
	dst := filepath.Join(r.dir, filepath.FromSlash(UserTestsDir))
	if r.cfg.userTests == nil {
		files, err := readSuiteCopy(dst)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("agent: read the supplied acceptance tests: %w", err)
		}
		r.cfg.userTests = &userTests{files: files, designed: r.st.Metadata[metaUserDesigned] == "true", dir: dst}
		return nil
	}
	if _, err := os.Lstat(dst); err == nil {
		return nil // kept by an earlier session
	}
	for _, f := range r.cfg.userTests.files {
		p := filepath.Join(dst, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("agent: keep the supplied acceptance tests: %w", err)
		}
		if err := writeFileAtomic(p, []byte(f.Content)); err != nil {
			return fmt.Errorf("agent: keep the supplied acceptance tests: %w", err)
		}
	}
	if r.st.Metadata == nil {
		r.st.Metadata = map[string]string{}
	}
	r.st.Metadata[metaUserDesigned] = fmt.Sprint(r.cfg.userTests.designed)
	return nil
}

// metaUserDesigned records WithTests' designed flag in the checkpoint.
const metaUserDesigned = "agent.tests_with_designed"

// userTestOptions are the Critic's options for the supplied tests.
func (r *run) userTestOptions() []critic.Option {
	if r.cfg.userTests == nil {
		return nil
	}
	return []critic.Option{critic.WithUserTests(r.cfg.userTests.designed, r.cfg.userTests.files...)}
}

// plannerGoal is the goal as the Planner reads it: with supplied tests,
// it is told they exist so that the plan's test command runs them.
func (r *run) plannerGoal() string {
	u := r.cfg.userTests
	if u == nil {
		return r.goalWithInstructions()
	}
	var names []string
	for _, f := range u.files {
		names = append(names, f.Path)
	}
	return r.goalWithInstructions() + "\n\n## Acceptance tests supplied\n\nThe person supplied acceptance tests that will be put, as they are, " +
		"into the plan's tests folder (tests_dir) at these paths relative to it: " + strings.Join(names, ", ") +
		". Choose tests_dir and a test_command that run them from the workspace root; the code must make them pass."
}

// suspectUserTest turns the Critic's refusal to rewrite a supplied test
// into the run's stop, told to the person.
func (r *run) suspectUserTest(err error) error {
	msg := fmt.Sprintf("the Critic suspects an acceptance test you supplied; it is not rewritten, please check it: %v", err)
	r.emit(Event{Kind: EventWarning, Role: RoleCritic, Message: msg})
	return stopf(StopChecksFailed, "%s", msg)
}
