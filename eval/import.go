package eval

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
)

// Formats Import reads.
const (
	// FormatHumanEval is one JSON object a line with task_id, prompt,
	// canonical_solution, test (defining check(candidate)) and
	// entry_point.
	FormatHumanEval = "humaneval"
	// FormatMBPP is one JSON object a line with task_id, text, code,
	// test_list (assert statements), test_setup_code and
	// challenge_test_list.
	FormatMBPP = "mbpp"
)

// ErrInvalidImport is wrapped by Import's errors about its input; the
// message names every bad line as file:line.
var ErrInvalidImport = errors.New("invalid task file")

// The hidden tests of imported tasks: one generic unittest file per
// format, which reads the task's case.json beside it.
var (
	//go:embed importdata/humaneval_test.py
	humanEvalTest string
	//go:embed importdata/mbpp_test.py
	mbppTest string
)

// Names in an imported task: the module the goal asks for and where the
// hidden tests lie.
const (
	importModule    = "solution"
	importHiddenDir = "hidden_tests"
	importCaseFile  = "case.json"
	importCommand   = "python3 -m unittest discover -s " + importHiddenDir + " -v"
)

// ImportOptions tune Import.
type ImportOptions struct {
	// Name is the suite's name; default the input file's base name
	// without its extension.
	Name string
	// Tags are given to every task, after the format's name.
	Tags []string
	// ReferenceReplay writes each task a replay.yaml in which the Worker
	// writes the file's reference solution, so that `trio eval SUITE`
	// checks, offline, that every task's reference passes its hidden tests.
	ReferenceReplay bool
}

// importedTask is one line of the input, made ready to write.
type importedTask struct {
	id, goal, entry string
	hiddenTest      string
	caseJSON        []byte
	reference       string // the whole solution.py of the reference
}

// Import reads file, a JSONL file of format (FormatHumanEval or
// FormatMBPP), and writes a suite of its tasks to out, which must not
// exist or be empty. Every bad line is reported (file:line: what) in one
// error wrapping ErrInvalidImport, and then nothing is written: the suite
// is made in a temporary folder beside out and renamed into place whole.
// It returns the suite as Load reads it.
func Import(format, file, out string, opts ImportOptions) (*Suite, error) {
	var parse func(map[string]json.RawMessage) (importedTask, error)
	switch format {
	case FormatHumanEval:
		parse = parseHumanEval
	case FormatMBPP:
		parse = parseMBPP
	default:
		return nil, fmt.Errorf("%w: format %q: want %s or %s", ErrInvalidImport, format, FormatHumanEval, FormatMBPP)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidImport, err)
	}
	defer f.Close()
	var tasks []importedTask
	var bad []string
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(text, &obj); err != nil {
			bad = append(bad, fmt.Sprintf("%s:%d: not a JSON object: %v", file, line, err))
			continue
		}
		t, err := parse(obj)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s:%d: %v", file, line, err))
			continue
		}
		if first, ok := seen[t.id]; ok {
			bad = append(bad, fmt.Sprintf("%s:%d: task id %s is also line %d's", file, line, t.id, first))
			continue
		}
		seen[t.id] = line
		tasks = append(tasks, t)
	}
	if err := sc.Err(); err != nil {
		bad = append(bad, fmt.Sprintf("%s:%d: %v", file, line+1, err))
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%w: %d bad lines, nothing written:\n%s", ErrInvalidImport, len(bad), strings.Join(bad, "\n"))
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("%w: %s: no tasks", ErrInvalidImport, file)
	}
	if fi, err := os.Stat(out); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s is a file: import into a new folder", ErrInvalidImport, out)
	}
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%w: %s is not empty: import into a new folder", ErrInvalidImport, out)
	}
	name := opts.Name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	parent := filepath.Dir(filepath.Clean(out))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(out)+".import-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp) // gone once renamed; what is left when not
	if err := writeImported(tmp, format, file, name, tasks, opts); err != nil {
		return nil, err
	}
	os.Remove(out) // an empty folder only
	if err := os.Rename(tmp, out); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	return Load(out)
}

func writeImported(dir, format, file, name string, tasks []importedTask, opts ImportOptions) error {
	sy := suiteYAML{Version: 1, Name: name}
	tags := append([]string{format}, opts.Tags...)
	for _, t := range tasks {
		sy.Tasks = append(sy.Tasks, taskLine{ID: t.id, Tags: tags})
		td := filepath.Join(dir, t.id)
		hidden := filepath.Join(td, HiddenDir, importHiddenDir)
		if err := os.MkdirAll(hidden, 0o755); err != nil {
			return err
		}
		ty := fmt.Sprintf("# Imported by trio eval import %s from %s.\n# The hidden tests run with this command in a copy of the run's workspace\n# with hidden/ laid over it; the agent never sees them.\nhidden_command: %s\nhidden_timeout: 60s\n",
			format, filepath.Base(file), importCommand)
		files := map[string][]byte{
			filepath.Join(td, GoalFile):                 []byte(t.goal),
			filepath.Join(td, TaskFile):                 []byte(ty),
			filepath.Join(hidden, "test_"+format+".py"): []byte(t.hiddenTest),
			filepath.Join(hidden, importCaseFile):       t.caseJSON,
		}
		if opts.ReferenceReplay {
			b, err := referenceReplay(t)
			if err != nil {
				return fmt.Errorf("import: task %s: %w", t.id, err)
			}
			files[filepath.Join(td, ReplayFile)] = b
		}
		for p, b := range files {
			if err := os.WriteFile(p, b, 0o644); err != nil {
				return fmt.Errorf("import: %w", err)
			}
		}
	}
	b, err := yaml.Marshal(sy)
	if err != nil {
		return err
	}
	head := fmt.Sprintf("# Imported by trio eval import %s from %s: %d tasks.\n", format, filepath.Base(file), len(tasks))
	return os.WriteFile(filepath.Join(dir, SuiteFile), append([]byte(head), b...), 0o644)
}

// fields reads the named string fields of obj; a missing or non-string
// one is an error naming it.
func fields(obj map[string]json.RawMessage, names ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, n := range names {
		raw, ok := obj[n]
		if !ok {
			return nil, fmt.Errorf("%s is missing", n)
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%s: want a string", n)
		}
		out[n] = s
	}
	return out, nil
}

// taskID reads task_id (a string or a number) and makes it a task id:
// HumanEval/7 becomes prefix-7.
func taskID(obj map[string]json.RawMessage, prefix string) (string, error) {
	raw, ok := obj["task_id"]
	if !ok {
		return "", errors.New("task_id is missing")
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		var n json.Number
		if json.Unmarshal(raw, &n) != nil {
			return "", errors.New("task_id: want a string or a number")
		}
		s = n.String()
	}
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	id := prefix + "-" + strings.Trim(unsafeID.ReplaceAllString(s, "-"), "-")
	if s == "" || !idPattern.MatchString(id) {
		return "", fmt.Errorf("task_id %s: want letters, digits, '.', '_' or '-'", raw)
	}
	return id, nil
}

var unsafeID = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// pyDef finds the top-level functions a Python source defines.
var pyDef = regexp.MustCompile(`(?m)^(?:async\s+)?def\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(`)

func parseHumanEval(obj map[string]json.RawMessage) (importedTask, error) {
	id, err := taskID(obj, FormatHumanEval)
	if err != nil {
		return importedTask{}, err
	}
	f, err := fields(obj, "prompt", "canonical_solution", "test", "entry_point")
	if err != nil {
		return importedTask{}, err
	}
	entry := f["entry_point"]
	switch {
	case strings.TrimSpace(f["prompt"]) == "":
		return importedTask{}, errors.New("prompt is empty")
	case !regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`).MatchString(entry):
		return importedTask{}, fmt.Errorf("entry_point %q: want a Python function name", entry)
	case !defines(f["prompt"], entry):
		return importedTask{}, fmt.Errorf("entry_point %s: the prompt defines no function %s", entry, entry)
	case !defines(f["test"], "check"):
		return importedTask{}, errors.New("test defines no function check(candidate)")
	case strings.TrimSpace(f["canonical_solution"]) == "":
		return importedTask{}, errors.New("canonical_solution is empty")
	}
	goal := fmt.Sprintf("# %s\n\nWrite `%s.py` that defines `%s` as the stub below describes: keep its\nsignature, and the imports it needs. Test it with unittest in tests/.\n\n```python\n%s\n```\n",
		id, importModule, entry, strings.TrimRight(f["prompt"], "\n"))
	cs, err := json.MarshalIndent(map[string]string{"entry_point": entry, "test": f["test"]}, "", "  ")
	if err != nil {
		return importedTask{}, err
	}
	return importedTask{id: id, goal: goal, entry: entry, hiddenTest: humanEvalTest, caseJSON: append(cs, '\n'),
		reference: f["prompt"] + f["canonical_solution"]}, nil
}

func parseMBPP(obj map[string]json.RawMessage) (importedTask, error) {
	id, err := taskID(obj, FormatMBPP)
	if err != nil {
		return importedTask{}, err
	}
	f, err := fields(obj, "text", "code")
	if err != nil {
		return importedTask{}, err
	}
	lists := map[string][]string{}
	for _, n := range []string{"test_list", "challenge_test_list"} {
		raw, ok := obj[n]
		if !ok {
			if n == "test_list" {
				return importedTask{}, errors.New("test_list is missing")
			}
			continue
		}
		var l []string
		if err := json.Unmarshal(raw, &l); err != nil {
			return importedTask{}, fmt.Errorf("%s: want a list of strings", n)
		}
		lists[n] = l
	}
	setup := ""
	if raw, ok := obj["test_setup_code"]; ok && json.Unmarshal(raw, &setup) != nil {
		return importedTask{}, errors.New("test_setup_code: want a string")
	}
	tests := lists["test_list"]
	if len(tests) == 0 {
		return importedTask{}, errors.New("test_list is empty")
	}
	if strings.TrimSpace(f["text"]) == "" {
		return importedTask{}, errors.New("text is empty")
	}
	for i, a := range append(append([]string(nil), tests...), lists["challenge_test_list"]...) {
		if !strings.HasPrefix(strings.TrimSpace(a), "assert") {
			return importedTask{}, fmt.Errorf("test %d %q: want an assert statement", i+1, a)
		}
	}
	// The entry point is the function of the reference that the first
	// test calls.
	entry := ""
	for _, m := range pyDef.FindAllStringSubmatch(f["code"], -1) {
		if regexp.MustCompile(`\b` + m[1] + `\s*\(`).MatchString(tests[0]) {
			entry = m[1]
			break
		}
	}
	if entry == "" {
		return importedTask{}, fmt.Errorf("entry point: no function that code defines is called by test_list[0] %q", tests[0])
	}
	goal := fmt.Sprintf("# %s\n\n%s\n\nWrite `%s.py` with the function `%s`. For example, this must hold:\n\n```python\n%s\n```\n\nTest it with unittest in tests/.\n",
		id, strings.TrimSpace(f["text"]), importModule, entry, strings.TrimSpace(tests[0]))
	challenge := lists["challenge_test_list"]
	if challenge == nil {
		challenge = []string{}
	}
	cs, err := json.MarshalIndent(map[string]any{"entry_point": entry, "setup": setup, "tests": tests, "challenge_tests": challenge}, "", "  ")
	if err != nil {
		return importedTask{}, err
	}
	return importedTask{id: id, goal: goal, entry: entry, hiddenTest: mbppTest, caseJSON: append(cs, '\n'), reference: f["code"]}, nil
}

// defines reports whether src defines the function name at its top level.
func defines(src, name string) bool {
	for _, m := range pyDef.FindAllStringSubmatch(src, -1) {
		if m[1] == name {
			return true
		}
	}
	return false
}
