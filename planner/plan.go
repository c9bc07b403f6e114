package planner

import (
	"fmt"
	"path"
	"strings"
)

// DefaultTestsDir is the folder of the Critic's acceptance tests when a plan
// does not name one.
const DefaultTestsDir = "acceptance"

// Plan is the Planner's output: what to build, in which order, and how the
// result is checked.
type Plan struct {
	Goal  string   `json:"goal"`
	Steps []Step   `json:"steps"`
	Risks []string `json:"risks"`
	// TestCommand runs every test of the project, the acceptance tests in
	// TestsDir included (for example "go test ./...").
	TestCommand string `json:"test_command"`
	// CLI is the argv of a command-line program the project declares, if
	// any; the Critic requires `CLI... --help` to exit 0 with some output.
	CLI []string `json:"cli,omitempty"`
	// TestsDir is the workspace-relative folder for the Critic's acceptance
	// tests; the Worker may read it but not write it. Empty means
	// DefaultTestsDir (see TestsFolder).
	TestsDir string `json:"tests_dir,omitempty"`
}

// Step is one unit of work for the Worker.
type Step struct {
	ID          int    `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description"`
	// Files are workspace-relative paths (slash-separated) the step creates
	// or changes.
	Files []string `json:"files"`
	// Expected is what exists or works once the step is done.
	Expected string `json:"expected"`
	// Acceptance is how to tell that the step is done.
	Acceptance string `json:"acceptance"`
}

// TestsFolder is TestsDir cleaned, or DefaultTestsDir when it is empty.
func (p Plan) TestsFolder() string {
	if strings.TrimSpace(p.TestsDir) == "" {
		return DefaultTestsDir
	}
	return path.Clean(strings.TrimSpace(p.TestsDir))
}

// Files lists every planned file once, cleaned, in plan order.
func (p Plan) Files() []string {
	seen := make(map[string]bool)
	var out []string
	for _, s := range p.Steps {
		for _, f := range s.Files {
			c := path.Clean(strings.TrimSpace(f))
			if c == "" || seen[c] {
				continue
			}
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// Problem is one thing wrong with a plan, named by its field path.
type Problem struct {
	// Field is the JSON path of the field, e.g. "steps[2].files[0]".
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (p Problem) String() string { return p.Field + ": " + p.Message }

// ValidationError lists every problem Validate found. It wraps
// ErrInvalidPlan.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid plan (%d problem", len(e.Problems))
	if len(e.Problems) != 1 {
		b.WriteString("s")
	}
	b.WriteString("): ")
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrInvalidPlan) hold.
func (e *ValidationError) Unwrap() error { return ErrInvalidPlan }

// Validate checks the plan and returns a *ValidationError listing every
// problem, or nil. Rules: a goal; at least one step; step ids positive and
// unique; every step has a description, an expected result and an acceptance
// criterion; every file is a non-empty relative slash path without ".."
// (a file may appear in several steps, but only once per step) and lies
// outside the tests folder, which the Worker cannot write; a one-line test
// command; CLI words non-empty; the tests folder relative, without "..",
// without glob characters, and not the workspace itself (".", "./", "a/..").
func (p Plan) Validate() error {
	var probs []Problem
	add := func(field, format string, args ...any) {
		probs = append(probs, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if strings.TrimSpace(p.Goal) == "" {
		add("goal", "is empty")
	}

	testsDir := p.TestsFolder()
	testsOK := true
	if msg := checkRelPath(p.TestsDir, true); msg != "" {
		add("tests_dir", "%s", msg)
		testsOK = false
	} else if testsDir == "." {
		add("tests_dir", "%q names the workspace itself: it must be a subfolder, or the whole workspace becomes read-only for the worker", p.TestsDir)
		testsOK = false
	} else if strings.ContainsAny(testsDir, globMeta) {
		// The folder becomes a read-only policy glob (TestsFolder()+"/**"):
		// "*" would make every folder read-only.
		add("tests_dir", "%q contains a glob character (one of %s): name one folder", p.TestsDir, globMeta)
		testsOK = false
	}

	if len(p.Steps) == 0 {
		add("steps", "no steps: a plan needs at least one")
	}
	ids := make(map[int]int)
	for i, s := range p.Steps {
		f := fmt.Sprintf("steps[%d]", i)
		if s.ID <= 0 {
			add(f+".id", "must be a positive number, got %d", s.ID)
		} else if j, dup := ids[s.ID]; dup {
			add(f+".id", "%d is also the id of steps[%d]", s.ID, j)
		} else {
			ids[s.ID] = i
		}
		if strings.TrimSpace(s.Description) == "" {
			add(f+".description", "is empty")
		}
		if strings.TrimSpace(s.Expected) == "" {
			add(f+".expected", "is empty")
		}
		if strings.TrimSpace(s.Acceptance) == "" {
			add(f+".acceptance", "is empty")
		}
		seen := make(map[string]int)
		for k, file := range s.Files {
			ff := fmt.Sprintf("%s.files[%d]", f, k)
			if msg := checkRelPath(file, false); msg != "" {
				add(ff, "%s", msg)
				continue
			}
			c := path.Clean(strings.TrimSpace(file))
			if c == "." {
				add(ff, "%q names the workspace, not a file", file)
				continue
			}
			if j, dup := seen[c]; dup {
				add(ff, "%q is listed twice in this step (also files[%d])", file, j)
				continue
			}
			seen[c] = k
			if testsOK && (c == testsDir || strings.HasPrefix(c, testsDir+"/")) {
				add(ff, "%q is inside the acceptance tests folder %q, which the worker cannot write", file, testsDir)
			}
		}
	}

	switch tc := strings.TrimSpace(p.TestCommand); {
	case tc == "":
		add("test_command", "is empty: name the command that runs the tests, e.g. \"go test ./...\"")
	case strings.ContainsAny(tc, "\n\r"):
		add("test_command", "must be one line")
	}
	for i, w := range p.CLI {
		if strings.TrimSpace(w) == "" {
			add(fmt.Sprintf("cli[%d]", i), "is empty")
		}
	}
	if len(probs) == 0 {
		return nil
	}
	return &ValidationError{Problems: probs}
}

// globMeta are the characters a policy path glob gives a meaning to.
const globMeta = "*?[]{}"

// checkRelPath says what is wrong with a workspace-relative path, or "".
// An empty path is fine only when allowEmpty is set.
func checkRelPath(p string, allowEmpty bool) string {
	t := strings.TrimSpace(p)
	switch {
	case t == "":
		if allowEmpty {
			return ""
		}
		return "is empty"
	case strings.ContainsRune(t, 0):
		return fmt.Sprintf("%q contains a NUL byte", p)
	case strings.HasPrefix(t, "/") || strings.HasPrefix(t, `\`) || hasDriveLetter(t):
		return fmt.Sprintf("%q is absolute: paths are relative to the workspace", p)
	case strings.Contains(t, `\`):
		return fmt.Sprintf("%q uses backslashes: separate folders with /", p)
	}
	for _, seg := range strings.Split(t, "/") {
		if seg == ".." {
			return fmt.Sprintf("%q contains \"..\": paths must stay inside the workspace", p)
		}
	}
	return ""
}

func hasDriveLetter(p string) bool {
	return len(p) >= 2 && p[1] == ':' && (p[0]|0x20 >= 'a' && p[0]|0x20 <= 'z')
}
