package critic

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/trioagent/trio/planner"
	"github.com/trioagent/trio/tools/testreport"
)

// ErrSuspectUserTest is wrapped by RepairTests when a test the Critic
// suspects is one the person supplied (WithUserTests): those are never
// rewritten, so the person has to look at it.
var ErrSuspectUserTest = errors.New("a supplied acceptance test is suspect")

// WithUserTests gives the Critic a person's own acceptance tests, each
// path relative to the plan's tests folder. DesignTests puts them there
// as they are and keeps them canonical like a designed suite; with
// designed false they are the whole suite and no test designer is asked,
// with designed true the designer's files are added (a designed file with
// a supplied file's path is dropped). RepairTests never rewrites them.
func WithUserTests(designed bool, files ...SuiteFile) Option {
	return func(c *Critic) {
		c.userFiles = slices.Clone(files)
		c.userDesigned = designed
	}
}

// userSuite returns the supplied tests as workspace paths in dir: those of
// WithUserTests, else (after a resume) the canonical files the suite marks
// as the person's.
func (c *Critic) userSuite(dir string) []SuiteFile {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.userFiles) > 0 {
		out := make([]SuiteFile, len(c.userFiles))
		for i, f := range c.userFiles {
			out[i] = SuiteFile{Path: path.Join(dir, f.Path), Content: f.Content}
		}
		return out
	}
	var out []SuiteFile
	for _, f := range c.files {
		if slices.Contains(c.suite.User, f.Path) {
			out = append(out, f)
		}
	}
	return out
}

// hasUserTests reports whether the suite holds supplied tests.
func (c *Critic) hasUserTests() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.userFiles) > 0 || len(c.suite.User) > 0
}

// userOnly reports whether the supplied tests are the whole suite.
func (c *Critic) userOnly() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.userFiles) > 0 {
		return !c.userDesigned
	}
	return len(c.suite.User) > 0 && len(c.suite.User) == len(c.suite.Files)
}

// designedNote tells the test designer which files the person supplied,
// so that it writes others.
func (c *Critic) designedNote(dir string) string {
	user := c.userSuite(dir)
	if len(user) == 0 {
		return ""
	}
	var names []string
	for _, f := range user {
		names = append(names, f.Path)
	}
	return "The person supplied these acceptance tests, which are added to yours as they are: " +
		strings.Join(names, ", ") + ". Do not write files with these paths; test what they leave out."
}

// withUserTests writes the suite of designed plus the supplied files (the
// supplied ones win a path) and marks the supplied ones in TestSuite.User.
func (c *Critic) withUserTests(plan planner.Plan, designed []SuiteFile, notes string) (TestSuite, error) {
	dir := plan.TestsFolder()
	user := c.userSuite(dir)
	files := make([]SuiteFile, 0, len(designed)+len(user))
	var userPaths []string
	for _, f := range user {
		if msg := checkPath(f.Path); msg != "" {
			return TestSuite{}, fmt.Errorf("critic: supplied test %s: %s: %w", f.Path, msg, ErrInvalidSuite)
		}
		files = append(files, f)
		userPaths = append(userPaths, f.Path)
	}
	for _, f := range designed {
		if !slices.Contains(userPaths, f.Path) {
			files = append(files, f)
		}
	}
	slices.SortFunc(files, func(a, b SuiteFile) int { return strings.Compare(a.Path, b.Path) })
	slices.Sort(userPaths)
	tests, langs := DesignedTests(files, testreport.FrameworkOf(commandArgv(plan.TestCommand)))
	if len(tests) == 0 && len(langs) > 0 {
		return TestSuite{}, fmt.Errorf("critic: the acceptance tests define no test %q would collect: %s: %w", plan.TestCommand, collectRules, ErrInvalidSuite)
	}
	s, err := c.writeSuite(dir, files, notes, tests)
	if err != nil {
		return TestSuite{}, err
	}
	c.mu.Lock()
	c.suite.User = userPaths
	c.mu.Unlock()
	s.User = slices.Clone(userPaths)
	return s, nil
}

// designWithUser is DesignTests and RepairTests when the person supplied
// tests: the designer is asked only when designed tests are wanted, and
// a repair whose suspect tests include a supplied one is refused.
func (c *Critic) designWithUser(ctx context.Context, goal string, plan planner.Plan, repair *Findings) (TestSuite, error) {
	if repair != nil {
		var theirs []string
		for _, s := range repair.SuspectTests {
			if c.Suite().IsUserTest(s.TestID) {
				theirs = append(theirs, s.TestID+": "+s.Reason)
			}
		}
		if len(theirs) > 0 || c.userOnly() {
			if len(theirs) == 0 {
				for _, s := range repair.SuspectTests {
					theirs = append(theirs, s.TestID+": "+s.Reason)
				}
			}
			return TestSuite{}, fmt.Errorf("critic: %w (it is not rewritten; check it): %s", ErrSuspectUserTest, strings.Join(theirs, "; "))
		}
	}
	if c.userOnly() {
		return c.withUserTests(plan, nil, "the acceptance tests the person supplied")
	}
	extra := c.designedNote(plan.TestsFolder())
	if repair != nil {
		return c.repairTests(ctx, goal, plan, *repair, extra)
	}
	return c.design(ctx, goal, plan, extra)
}

// IsUserTest reports whether id, a test id as the Critic's findings name
// it ("file::Class::test", "TestX", "pkg.TestX/sub", "mod.Class.test"), is
// one of the person's supplied tests: it names a supplied file, or one of
// its parts is the name of a test a supplied file defines (so a Go test
// named in two files counts as supplied when either file is).
func (s TestSuite) IsUserTest(id string) bool {
	parts := strings.FieldsFunc(id, func(r rune) bool { return r == '/' || r == '.' || r == ':' || r == ' ' })
	for _, t := range s.Tests {
		file, _, _ := strings.Cut(t, "::")
		name := t[strings.LastIndex(t, "::")+2:]
		if slices.Contains(s.User, file) && (t == id || slices.Contains(parts, name)) {
			return true
		}
	}
	for _, f := range s.User {
		if strings.Contains(id, f) {
			return true
		}
	}
	return false
}
