package critic

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/planner"
	"github.com/trioagent/trio/tools/testreport"
)

// maxSuiteBytes bounds one suite: large inputs belong in code that builds
// them, not in the files.
const maxSuiteBytes = 2 << 20

// ErrInvalidSuite is wrapped when the test designer's reply was unusable
// twice.
var ErrInvalidSuite = errors.New("invalid acceptance test suite")

// TestSuite is the acceptance test suite on disk.
type TestSuite struct {
	// Version starts at 1 and increases whenever the content changes.
	Version int `json:"version"`
	// Dir is the workspace-relative tests folder.
	Dir string `json:"dir"`
	// Files are workspace-relative paths, sorted.
	Files []string `json:"files"`
	// Hash is a SHA-256 over the sorted paths and contents.
	Hash string `json:"hash"`
	// Notes are the test designer's remarks (what each file covers).
	Notes string `json:"notes,omitempty"`
	// Tests are the acceptance tests the files define, derived from them
	// (see DesignedTests): "<file>::<name>" or "<file>::<Class>::<name>".
	// A check passes only when each is reported passed by name.
	Tests []string `json:"tests,omitempty"`
	// User are the files among Files that the person supplied
	// (WithUserTests): never rewritten, and a suspect one stops the run.
	User []string `json:"user,omitempty"`
}

type suiteReply struct {
	Files []suiteFile `json:"files" jsonschema_description:"The test files, each with a workspace-relative path inside the tests folder."`
	Notes string      `json:"notes" jsonschema_description:"What the tests cover: basic, edge and large-input cases."`
}

// suiteFile is a file of the test designer's reply (the schema's own
// type, so that the reply's schema stays as it is).
type suiteFile = SuiteFile

// DesignTests has the test designer write acceptance tests from the goal and
// the plan only — it never sees the implementation — and writes them into
// the plan's tests folder, replacing what was there. A reply that does not
// decode, is empty, or names a path outside the folder goes back to the
// model once; a second failure is an error wrapping ErrInvalidSuite.
//
// With tests the person supplied (WithUserTests), those are the suite, or
// part of it; see WithUserTests.
func (c *Critic) DesignTests(ctx context.Context, goal string, plan planner.Plan) (TestSuite, error) {
	if c.hasUserTests() {
		return c.designWithUser(ctx, goal, plan, nil)
	}
	return c.design(ctx, goal, plan, "")
}

// RepairTests has the test designer rewrite the suite after a suspect_test
// verdict: it sees the goal, the plan, its current tests and the findings'
// suspect tests (with the failures they caused), never the implementation.
//
// A supplied test (WithUserTests) is never rewritten: when a suspect test
// is one, or every test is, the error wraps ErrSuspectUserTest and names
// them, for the person to check.
func (c *Critic) RepairTests(ctx context.Context, goal string, plan planner.Plan, f Findings) (TestSuite, error) {
	if c.hasUserTests() {
		return c.designWithUser(ctx, goal, plan, &f)
	}
	return c.repairTests(ctx, goal, plan, f, "")
}

func (c *Critic) repairTests(ctx context.Context, goal string, plan planner.Plan, f Findings, extra string) (TestSuite, error) {
	dir := plan.TestsFolder()
	current, err := c.currentSuite(dir)
	if err != nil {
		return TestSuite{}, err
	}
	var b strings.Builder
	b.WriteString("# Your current tests\n\n")
	for _, file := range current {
		fmt.Fprintf(&b, "## %s\n```\n%s\n```\n", file.Path, strings.TrimRight(file.Content, "\n"))
	}
	b.WriteString("\n# Tests judged suspect\n\n")
	for _, s := range f.SuspectTests {
		fmt.Fprintf(&b, "- %s: %s\n", s.TestID, s.Reason)
	}
	if len(f.Failures) > 0 {
		b.WriteString("\n# Failures reported in the same round\n\n")
		for _, x := range f.Failures {
			fmt.Fprintf(&b, "- %s (%s) at %s: expected %s; actual %s\n", x.TestID, x.Kind, x.Location, x.Expected, clip(x.Actual, 2*maxMessage))
		}
	}
	b.WriteString("\nFix the suspect tests so they check what the goal asks for, keep every correct test, " +
		"and reply with the whole suite (every file, changed or not).")
	if extra != "" {
		b.WriteString("\n\n" + extra)
	}
	return c.design(ctx, goal, plan, b.String())
}

func (c *Critic) design(ctx context.Context, goal string, plan planner.Plan, extra string) (TestSuite, error) {
	if strings.TrimSpace(goal) == "" {
		goal = plan.Goal
	}
	dir := plan.TestsFolder()
	if msg := checkPath(dir); msg != "" || dir == "." {
		return TestSuite{}, fmt.Errorf("critic: tests folder %q: %w", plan.TestsDir, ErrInvalidSuite)
	}
	var b strings.Builder
	b.WriteString("# Goal\n\n")
	b.WriteString(strings.TrimSpace(goal))
	b.WriteString("\n\n")
	writePlan(&b, plan)
	fmt.Fprintf(&b, "\nWrite every file inside %s/ (paths relative to the workspace, e.g. %s/...). "+
		"The test command %q must run them.\n", dir, dir, plan.TestCommand)
	if extra != "" {
		b.WriteString("\n")
		b.WriteString(extra)
		b.WriteString("\n")
	}
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: c.promptDesigner},
		{Role: llm.RoleUser, Content: b.String()},
	}
	var last string
	for attempt := 1; attempt <= 2; attempt++ {
		resp, err := c.complete(ctx, AgentTestDesigner, msgs, c.suiteSchema)
		if err != nil {
			return TestSuite{}, err
		}
		content, err := replyText(resp)
		if err == nil {
			var r suiteReply
			r, err = llm.DecodeOutput[suiteReply](content)
			if err == nil {
				files, probs := r.validate(dir)
				tests, langs := DesignedTests(files, testreport.FrameworkOf(commandArgv(plan.TestCommand)))
				if len(probs) == 0 && len(tests) == 0 && len(langs) > 0 {
					probs = append(probs, "files: no test the runner would collect in "+strings.Join(langs, ", ")+": "+collectRules)
				}
				if len(probs) == 0 && c.hasUserTests() {
					return c.withUserTests(plan, files, strings.TrimSpace(r.Notes))
				}
				if len(probs) == 0 {
					return c.writeSuite(dir, files, strings.TrimSpace(r.Notes), tests)
				}
				err = fmt.Errorf("%s", strings.Join(probs, "\n"))
			}
		}
		last = err.Error()
		msgs = reask(msgs, resp, "- "+strings.ReplaceAll(last, "\n", "\n- "))
	}
	return TestSuite{}, fmt.Errorf("critic: test designer reply invalid twice: %w: %s", ErrInvalidSuite, strings.ReplaceAll(last, "\n", "; "))
}

// validate cleans the reply's paths and lists every problem by field path.
func (r suiteReply) validate(dir string) ([]suiteFile, []string) {
	var probs []string
	add := func(field, format string, args ...any) {
		probs = append(probs, field+": "+fmt.Sprintf(format, args...))
	}
	if len(r.Files) == 0 {
		add("files", "no files: write at least one test file")
	}
	seen := make(map[string]int)
	var out []suiteFile
	size, nonEmpty := 0, false
	for i, f := range r.Files {
		field := fmt.Sprintf("files[%d].path", i)
		if msg := checkPath(f.Path); msg != "" {
			add(field, "%s", msg)
			continue
		}
		p := path.Clean(strings.TrimSpace(f.Path))
		if !strings.HasPrefix(p, dir+"/") {
			add(field, "%q is outside the tests folder %q: every path must start with %s/", f.Path, dir, dir)
			continue
		}
		if j, dup := seen[p]; dup {
			add(field, "%q is also files[%d]", f.Path, j)
			continue
		}
		seen[p] = i
		size += len(f.Content)
		nonEmpty = nonEmpty || strings.TrimSpace(f.Content) != ""
		out = append(out, suiteFile{Path: p, Content: f.Content})
	}
	if len(r.Files) > 0 && !nonEmpty && len(probs) == 0 {
		add("files", "every file is empty")
	}
	if size > maxSuiteBytes {
		add("files", "%d bytes in all, more than %d: generate large inputs in code", size, maxSuiteBytes)
	}
	slices.SortFunc(out, func(a, b suiteFile) int { return strings.Compare(a.Path, b.Path) })
	return out, probs
}

// writeSuite replaces the tests folder's files with files, keeps them as
// the canonical suite and versions the result.
func (c *Critic) writeSuite(dir string, files []suiteFile, notes string, tests []string) (TestSuite, error) {
	old, err := c.readSuite(dir)
	if err != nil {
		return TestSuite{}, err
	}
	keep := make(map[string]bool, len(files))
	for _, f := range files {
		keep[f.Path] = true
	}
	for _, f := range old {
		if !keep[f.Path] {
			if err := c.ws.Root.Remove(f.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return TestSuite{}, fmt.Errorf("critic: remove old test %s: %w", f.Path, err)
			}
		}
	}
	for _, f := range files {
		if err := c.ws.Root.MkdirAll(path.Dir(f.Path), 0o755); err != nil {
			return TestSuite{}, fmt.Errorf("critic: write test %s: %w", f.Path, err)
		}
		if err := c.ws.Root.WriteFile(f.Path, []byte(f.Content), 0o644); err != nil {
			return TestSuite{}, fmt.Errorf("critic: write test %s: %w", f.Path, err)
		}
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.Path
	}
	sum := suiteHash(files)

	c.mu.Lock()
	defer c.mu.Unlock()
	s := TestSuite{Version: c.suite.Version, Dir: dir, Files: names, Hash: sum, Notes: notes, Tests: tests}
	if sum != c.suite.Hash || s.Version == 0 {
		s.Version++
	}
	c.suite = s
	c.files = slices.Clone(files)
	c.pending = nil // the Critic itself just rewrote the folder
	s.Files = slices.Clone(names)
	s.Tests = slices.Clone(tests)
	return s, nil
}

// currentSuite is the canonical suite when there is one (the workspace's
// copy may have been changed by the project's code), else what dir holds.
func (c *Critic) currentSuite(dir string) ([]suiteFile, error) {
	if files := c.SuiteFiles(); len(files) > 0 {
		return files, nil
	}
	return c.readSuite(dir)
}

// readSuite returns the regular files under dir, sorted; none if dir does
// not exist.
func (c *Critic) readSuite(dir string) ([]suiteFile, error) {
	fsys := c.ws.Root.FS()
	var out []suiteFile
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		out = append(out, suiteFile{Path: p, Content: string(data)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("critic: read tests folder %s: %w", dir, err)
	}
	return out, nil
}

// checkPath says what is wrong with a workspace-relative path, or "".
func checkPath(p string) string {
	t := strings.TrimSpace(p)
	switch {
	case t == "":
		return "is empty"
	case strings.HasPrefix(t, "/") || strings.HasPrefix(t, `\`) || (len(t) >= 2 && t[1] == ':'):
		return fmt.Sprintf("%q is absolute: paths are relative to the workspace", p)
	case strings.Contains(t, `\`):
		return fmt.Sprintf("%q uses backslashes: separate folders with /", p)
	case strings.ContainsRune(t, 0):
		return fmt.Sprintf("%q contains a NUL byte", p)
	}
	if slices.Contains(strings.Split(t, "/"), "..") {
		return fmt.Sprintf("%q contains \"..\"", p)
	}
	return ""
}
