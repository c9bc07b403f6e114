package eval

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/trioagent/trio/agent"
)

// File names of a suite and of its task folders.
const (
	SuiteFile  = "suite.yaml"
	TaskFile   = "task.yaml"
	GoalFile   = "goal.md"
	HiddenDir  = "hidden"
	SeedDir    = "seed"
	ReplayFile = "replay.yaml" // the default replay script
)

// DefaultHiddenTimeout bounds the hidden test command of a task that sets
// no hidden_timeout.
const DefaultHiddenTimeout = 2 * time.Minute

// Suite is a loaded suite: its tasks in the order suite.yaml lists them.
type Suite struct {
	// Dir is the suite folder, absolute.
	Dir   string
	Name  string
	Tasks []Task
}

// Task is one goal with its hidden tests.
type Task struct {
	ID   string
	Tags []string
	// Dir is the task folder, absolute.
	Dir  string
	Goal string
	// HiddenCommand is the argv that runs the hidden tests in the judged
	// workspace (split on spaces; no shell).
	HiddenCommand []string
	HiddenTimeout time.Duration
	// Budgets override the eval's budgets field by field (zero keeps it).
	Budgets agent.Budgets
	// Replay is the scripted model's file ("" when the task has none).
	Replay string
	// Hash fingerprints every file of the task folder, so that a finished
	// result is reused only for the task as it is now.
	Hash string
	// Repo is set for a repository task (task.yaml's repository:), which
	// the judge runs with its fail_to_pass and pass_to_pass lists; its
	// HiddenCommand is then the fail_to_pass command.
	Repo *RepoTask
}

// HiddenPath is the task's hidden tests folder.
func (t Task) HiddenPath() string { return filepath.Join(t.Dir, HiddenDir) }

// SeedPath is the task's starting workspace, "" when it has none.
func (t Task) SeedPath() string {
	if t.Repo != nil {
		return t.Repo.seedDir
	}
	p := filepath.Join(t.Dir, SeedDir)
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return p
	}
	return ""
}

type suiteYAML struct {
	Version int        `yaml:"version"`
	Name    string     `yaml:"name"`
	Tasks   []taskLine `yaml:"tasks"`
}

type taskLine struct {
	ID   string   `yaml:"id"`
	Path string   `yaml:"path"`
	Tags []string `yaml:"tags"`
}

type taskYAML struct {
	HiddenCommand string      `yaml:"hidden_command"`
	HiddenTimeout string      `yaml:"hidden_timeout"`
	Replay        string      `yaml:"replay"`
	Budgets       budgetsYAML `yaml:"budgets"`
	Repository    *repoYAML   `yaml:"repository"`
}

type budgetsYAML struct {
	MaxSteps        int    `yaml:"max_steps"`
	MaxTotalTurns   int    `yaml:"max_total_turns"`
	MaxRepairRounds int    `yaml:"max_repair_rounds"`
	MaxTokens       int    `yaml:"max_tokens"`
	MaxWallTime     string `yaml:"max_wall_time"`
}

// idPattern keeps a task id usable as a folder and run id.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Load reads the suite in dir (dir/suite.yaml, or dir itself when it names
// the suite file) and every task it lists. Any problem is an error wrapping
// ErrInvalidSuite that names the file.
func Load(dir string) (*Suite, error) {
	file := filepath.Join(dir, SuiteFile)
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		file, dir = dir, filepath.Dir(dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidSuite, dir, err)
	}
	var sy suiteYAML
	if err := readYAML(file, &sy); err != nil {
		return nil, err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidSuite, file, fmt.Sprintf(format, args...))
	}
	if sy.Version != 1 {
		return nil, bad("version %d: want version: 1", sy.Version)
	}
	if len(sy.Tasks) == 0 {
		return nil, bad("no tasks")
	}
	s := &Suite{Dir: abs, Name: sy.Name}
	if s.Name == "" {
		s.Name = filepath.Base(abs)
	}
	seen := map[string]bool{}
	for i, tl := range sy.Tasks {
		if !idPattern.MatchString(tl.ID) {
			return nil, bad("tasks[%d].id %q: want letters, digits, '.', '_' or '-'", i, tl.ID)
		}
		if seen[tl.ID] {
			return nil, bad("tasks[%d].id %q is listed twice", i, tl.ID)
		}
		seen[tl.ID] = true
		p := tl.Path
		if p == "" {
			p = tl.ID
		}
		if !filepath.IsLocal(p) {
			return nil, bad("tasks[%d].path %q: want a folder inside the suite", i, tl.Path)
		}
		t, err := loadTask(filepath.Join(abs, p))
		if err != nil {
			return nil, err
		}
		t.ID, t.Tags = tl.ID, slices.Clone(tl.Tags)
		s.Tasks = append(s.Tasks, t)
	}
	return s, nil
}

func loadTask(dir string) (Task, error) {
	t := Task{Dir: dir}
	file := filepath.Join(dir, TaskFile)
	bad := func(f, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidSuite, f, fmt.Sprintf(format, args...))
	}
	var ty taskYAML
	if err := readYAML(file, &ty); err != nil {
		return t, err
	}
	goal, err := os.ReadFile(filepath.Join(dir, GoalFile))
	if err != nil {
		return t, fmt.Errorf("%w: %v", ErrInvalidSuite, err)
	}
	if strings.TrimSpace(string(goal)) == "" {
		return t, bad(filepath.Join(dir, GoalFile), "empty goal")
	}
	t.Goal = string(goal)
	t.HiddenCommand = strings.Fields(ty.HiddenCommand)
	switch {
	case ty.Repository != nil && len(t.HiddenCommand) > 0:
		return t, bad(file, "hidden_command: a repository task has a command per test list (repository.fail_to_pass.command)")
	case ty.Repository == nil && len(t.HiddenCommand) == 0:
		return t, bad(file, "hidden_command is missing")
	}
	if fi, err := os.Stat(t.HiddenPath()); err != nil || !fi.IsDir() {
		return t, bad(t.HiddenPath(), "the hidden tests folder is missing")
	}
	if ty.Repository != nil {
		if t.Repo, err = loadRepo(dir, file, ty.Repository); err != nil {
			return t, err
		}
		t.HiddenCommand = t.Repo.FailToPass.Command
	}
	t.HiddenTimeout = DefaultHiddenTimeout
	if ty.HiddenTimeout != "" {
		if t.HiddenTimeout, err = time.ParseDuration(ty.HiddenTimeout); err != nil || t.HiddenTimeout <= 0 {
			return t, bad(file, "hidden_timeout %q: want a positive duration such as 60s", ty.HiddenTimeout)
		}
	}
	b := ty.Budgets
	t.Budgets = agent.Budgets{MaxSteps: b.MaxSteps, MaxTotalTurns: b.MaxTotalTurns, MaxRepairRounds: b.MaxRepairRounds, MaxTokens: b.MaxTokens}
	if b.MaxWallTime != "" {
		if t.Budgets.MaxWallTime, err = time.ParseDuration(b.MaxWallTime); err != nil || t.Budgets.MaxWallTime <= 0 {
			return t, bad(file, "budgets.max_wall_time %q: want a positive duration such as 5m", b.MaxWallTime)
		}
	}
	if b.MaxSteps < 0 || b.MaxTotalTurns < 0 || b.MaxTokens < 0 {
		return t, bad(file, "budgets: negative budget")
	}
	switch {
	case ty.Replay != "":
		if !filepath.IsLocal(ty.Replay) {
			return t, bad(file, "replay %q: want a file inside the task folder", ty.Replay)
		}
		t.Replay = filepath.Join(dir, ty.Replay)
		if _, err := os.Stat(t.Replay); err != nil {
			return t, bad(file, "replay: %v", err)
		}
	default:
		if _, err := os.Stat(filepath.Join(dir, ReplayFile)); err == nil {
			t.Replay = filepath.Join(dir, ReplayFile)
		}
	}
	if t.Hash, err = treeHash(dir); err != nil {
		return t, fmt.Errorf("%w: %s: %v", ErrInvalidSuite, dir, err)
	}
	return t, nil
}

// readYAML decodes file strictly: an unknown key is an error naming the
// file and line.
func readYAML(file string, v any) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidSuite, err)
	}
	if err := yaml.UnmarshalWithOptions(data, v, yaml.Strict()); err != nil {
		return fmt.Errorf("%w: %s: %s", ErrInvalidSuite, file, strings.ReplaceAll(yaml.FormatError(err, false, false), "\n", " "))
	}
	return nil
}

// Select returns the tasks named in ids (all when empty) that carry at
// least one of tags (any when empty), in suite order. An id the suite
// lacks is an error.
func (s *Suite) Select(ids, tags []string) ([]Task, error) {
	for _, id := range ids {
		if !slices.ContainsFunc(s.Tasks, func(t Task) bool { return t.ID == id }) {
			return nil, fmt.Errorf("%w: %s: no task %q", ErrInvalidSuite, filepath.Join(s.Dir, SuiteFile), id)
		}
	}
	var out []Task
	for _, t := range s.Tasks {
		if len(ids) > 0 && !slices.Contains(ids, t.ID) {
			continue
		}
		if len(tags) > 0 && !slices.ContainsFunc(tags, func(tag string) bool { return slices.Contains(t.Tags, tag) }) {
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

// treeHash is a SHA-256 over the relative paths and contents of every
// regular file under dir, in walk (lexical) order.
func treeHash(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "__pycache__" || d.Name() == ".pytest_cache") {
			return fs.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
