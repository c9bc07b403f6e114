package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/tools/testreport"
)

// RunLinterName is the name of the run_linter tool.
const RunLinterName = "run_linter"

// FrameworkLint is the Framework of the report run_linter returns.
const FrameworkLint = "lint"

// KindLint is the Kind of a linter's finding in that report.
const KindLint = "lint"

// maxLintFiles bounds the files one linter is given.
const maxLintFiles = 200

//go:embed linters.yaml
var lintersYAML []byte

// Linter is one linter of the embedded table (linters.yaml): the command,
// the files it takes and how its output reads.
type Linter struct {
	Name       string   `yaml:"name"`
	Language   string   `yaml:"-"`
	Argv       []string `yaml:"argv"`
	Files      string   `yaml:"files"`
	Each       bool     `yaml:"each"`
	Patterns   []string `yaml:"patterns"`
	Message    string   `yaml:"message"`
	Blocking   bool     `yaml:"blocking"`
	Optional   bool     `yaml:"optional"`
	Missing    []string `yaml:"missing"`
	Byproducts []string `yaml:"byproducts"`

	res []*regexp.Regexp
}

type lintLanguage struct {
	Name    string   `yaml:"name"`
	Detect  []string `yaml:"detect"`
	Linters []Linter `yaml:"linters"`
}

var (
	lintOnce  sync.Once
	lintTable []lintLanguage
	lintErr   error
)

// loadLinters parses linters.yaml once; a broken table is a bug every
// test catches.
func loadLinters() ([]lintLanguage, error) {
	lintOnce.Do(func() {
		var doc struct {
			Languages []lintLanguage `yaml:"languages"`
		}
		if err := yaml.UnmarshalWithOptions(lintersYAML, &doc, yaml.Strict()); err != nil {
			lintErr = fmt.Errorf("tools: linters.yaml: %w", err)
			return
		}
		seen := map[string]bool{}
		for i := range doc.Languages {
			lang := &doc.Languages[i]
			for j := range lang.Linters {
				l := &lang.Linters[j]
				l.Language = lang.Name
				if len(l.Argv) == 0 || len(l.Patterns) == 0 || seen[l.Name] || (l.Files != "" && validGlob(l.Files) != nil) {
					lintErr = fmt.Errorf("tools: linters.yaml: linter %q: empty argv or patterns, duplicate name or bad files glob", l.Name)
					return
				}
				for k, pat := range l.Patterns {
					re, err := regexp.Compile(pat)
					if err != nil {
						lintErr = fmt.Errorf("tools: linters.yaml: linter %q: patterns[%d]: %w", l.Name, k, err)
						return
					}
					if re.SubexpIndex("file") < 0 || (re.SubexpIndex("message") < 0 && l.Message == "") {
						lintErr = fmt.Errorf("tools: linters.yaml: linter %q: patterns[%d] needs a file group, and a message group or message", l.Name, k)
						return
					}
					l.res = append(l.res, re)
				}
				seen[l.Name] = true
			}
		}
		lintTable = doc.Languages
	})
	return lintTable, lintErr
}

// LinterNames returns every linter of the table, in its order.
func LinterNames() []string {
	table, _ := loadLinters()
	var names []string
	for _, lang := range table {
		for _, l := range lang.Linters {
			names = append(names, l.Name)
		}
	}
	return names
}

// DetectLinters returns the linters of the languages fsys uses (a
// language's detect globs match a file), in the table's order.
func DetectLinters(fsys fs.FS) ([]Linter, error) {
	table, err := loadLinters()
	if err != nil {
		return nil, err
	}
	files := lintFiles(fsys)
	var out []Linter
	for _, lang := range table {
		if slices.ContainsFunc(files, func(f string) bool {
			return slices.ContainsFunc(lang.Detect, func(g string) bool { return globMatch(g, f) })
		}) {
			out = append(out, lang.Linters...)
		}
	}
	return out, nil
}

// lintFiles lists the workspace's regular files, leaving out folders no
// linter should read.
func lintFiles(fsys fs.FS) []string {
	var files []string
	_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil
		case d.IsDir() && p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "vendor" || d.Name() == "__pycache__"):
			return fs.SkipDir
		case d.Type().IsRegular():
			files = append(files, p)
		}
		return nil
	})
	return files
}

// RunLinterParams are the arguments of run_linter.
type RunLinterParams struct {
	Linters []string `json:"linters,omitempty" jsonschema_description:"Names of the linters to run (go_vet, gofmt, py_compile, pyflakes, ruff, node_check). Default: every linter of the languages the workspace uses."`
	Exclude []string `json:"exclude,omitempty" jsonschema_description:"Folders whose files are not given to the linters that take files (e.g. a read-only tests folder)."`

	runs  []lintRun
	links *workspaceLinks
}

// lintRun is one linter with the commands it runs.
type lintRun struct {
	linter Linter
	cmds   []policy.Command
}

// Effects says run_linter runs each of its linters' commands.
func (p *RunLinterParams) Effects() []Effect {
	var effects []Effect
	for _, r := range p.runs {
		for _, c := range r.cmds {
			effects = append(effects, Effect{Kind: EffectExec, Command: c, Links: p.links.policy()})
		}
	}
	return effects
}

// RunLinter returns the run_linter tool working in ws.
func RunLinter(ws *Workspace) Tool {
	return newTyped(RunLinterName, description(RunLinterName), func(p *RunLinterParams) error {
		p.links = ws.links()
		detected, err := DetectLinters(ws.Root.FS())
		if err != nil {
			return err
		}
		all := LinterNames()
		for i, n := range p.Linters {
			if !slices.Contains(all, n) {
				return argErr(fmt.Sprintf("linters[%d]", i), "%q is not a known linter (known: %s)", n, strings.Join(all, ", "))
			}
			if !slices.ContainsFunc(detected, func(l Linter) bool { return l.Name == n }) {
				return argErr(fmt.Sprintf("linters[%d]", i), "%q is for a language this workspace does not use", n)
			}
		}
		if len(detected) == 0 {
			return argErr("linters", "no language with linters was detected in the workspace (go.mod or *.go, *.py, package.json or *.js)")
		}
		for i, ex := range p.Exclude {
			if p.Exclude[i], err = ws.Rel(fmt.Sprintf("exclude[%d]", i), ex); err != nil {
				return err
			}
		}
		files := lintFiles(ws.Root.FS())
		for _, l := range detected {
			if len(p.Linters) > 0 && !slices.Contains(p.Linters, l.Name) {
				continue
			}
			if run, ok := p.plan(l, files); ok {
				p.runs = append(p.runs, run)
			}
		}
		return nil
	}, ws.runLinter)
}

// plan builds a linter's commands; false when it takes files and the
// workspace has none for it.
func (p *RunLinterParams) plan(l Linter, files []string) (lintRun, bool) {
	run := lintRun{linter: l}
	if l.Files == "" {
		run.cmds = []policy.Command{{Line: policy.QuoteArgv(l.Argv), Argv: l.Argv}}
		return run, true
	}
	var take []string
	for _, f := range files {
		if globMatch(l.Files, f) && !slices.ContainsFunc(p.Exclude, func(ex string) bool { return ex == "." || f == ex || strings.HasPrefix(f, ex+"/") }) {
			take = append(take, f)
		}
	}
	if len(take) == 0 {
		return run, false
	}
	take = take[:min(len(take), maxLintFiles)]
	add := func(fs ...string) {
		argv := append(slices.Clone(l.Argv), fs...)
		run.cmds = append(run.cmds, policy.Command{Line: policy.QuoteArgv(argv), Argv: argv})
	}
	if l.Each {
		for _, f := range take {
			add(f)
		}
	} else {
		add(take...)
	}
	return run, true
}

func (ws *Workspace) runLinter(ctx context.Context, p RunLinterParams) (Result, error) {
	if rel, changed := p.links.changed(); changed {
		return fsResult(rel, errChanged), nil
	}
	rep := testreport.Report{Framework: FrameworkLint}
	var lines []string
	res := Result{OK: true}
	for _, run := range p.runs {
		before := ws.byproducts(run.linter)
		var findings []testreport.Failure
		skipped := ""
		for _, cmd := range run.cmds {
			sr, err := ws.run(ctx, cmd.Argv, "", 0)
			if r, ok := commandProblem(err, "."); ok {
				return r, nil
			}
			if err != nil {
				return Result{}, err
			}
			res.Duration += sr.Duration
			out := sr.Stdout + "\n" + sr.Stderr
			if run.linter.Optional && slices.ContainsFunc(run.linter.Missing, func(m string) bool { return strings.Contains(out, m) }) {
				skipped = "not installed"
				break
			}
			findings = append(findings, run.linter.parse(sr, ws, cmd.Argv[len(run.linter.Argv):])...)
		}
		ws.removeByproducts(run.linter, before)
		switch {
		case skipped != "":
			rep.Skipped++
			lines = append(lines, fmt.Sprintf("%s: skipped (%s)", run.linter.Name, skipped))
		case len(findings) == 0:
			rep.Passed++
			lines = append(lines, run.linter.Name+": clean")
		default:
			rep.Failed += len(findings)
			rep.Failures = append(rep.Failures, findings...)
			res.OK = false
			lines = append(lines, fmt.Sprintf("%s: %s", run.linter.Name, countText(len(findings), "finding")))
		}
	}
	brief, err := json.Marshal(rep.Failures)
	if err != nil {
		return Result{}, fmt.Errorf("encode lint findings: %w", err)
	}
	res.Tests = &rep
	res.Output = strings.Join(lines, "\n")
	if len(rep.Failures) > 0 {
		res.Output += "\nfindings: " + string(brief)
	}
	return res, nil
}

func countText(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// parse reads one command's findings. A command that failed without a
// finding the pattern recognises is one finding quoting its output, so a
// linter that breaks is never taken for a clean one. files are the files
// the command was given: a finding that names one by its base name alone
// (Python's "Sorry: TabError ... (x.py, line 3)") gets its path.
func (l Linter) parse(sr sandbox.Result, ws *Workspace, files []string) []testreport.Failure {
	out := strings.ReplaceAll(sr.Stdout+"\n"+sr.Stderr, "\r\n", "\n")
	var found []testreport.Failure
	for _, re := range l.res {
		for _, m := range re.FindAllStringSubmatch(out, -1) {
			f := testreport.Failure{Name: l.Name, Kind: KindLint, Message: l.Message}
			if i := re.SubexpIndex("file"); i >= 0 {
				f.File = ws.relFile(m[i])
				if len(files) == 1 && !strings.Contains(f.File, "/") && path.Base(files[0]) == f.File {
					f.File = files[0]
				}
			}
			if i := re.SubexpIndex("line"); i >= 0 {
				f.Line, _ = strconv.Atoi(m[i])
			}
			if i := re.SubexpIndex("message"); i >= 0 && strings.TrimSpace(m[i]) != "" {
				f.Message = strings.TrimSpace(m[i])
			}
			if i := re.SubexpIndex("col"); i >= 0 && m[i] != "" {
				f.Message = "col " + m[i] + ": " + f.Message
			}
			found = append(found, f)
		}
	}
	if len(found) == 0 && (sr.ExitCode != 0 || sr.TimedOut) {
		msg := strings.TrimSpace(sr.Stderr)
		if msg == "" {
			msg = strings.TrimSpace(sr.Stdout)
		}
		if len(msg) > 600 {
			msg = msg[len(msg)-600:]
		}
		found = append(found, testreport.Failure{Name: l.Name, Kind: KindLint,
			Message: fmt.Sprintf("exited %d with output no pattern matched: %s", sr.ExitCode, msg)})
	}
	return found
}

// relFile makes a linter's path workspace-relative ("./a.go", the
// sandbox's or the host's workspace path in front).
func (ws *Workspace) relFile(p string) string {
	p = strings.TrimSpace(p)
	for _, root := range []string{ws.Dir, sandboxDir(ws)} {
		if root != "" && strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/") {
			p = p[len(strings.TrimSuffix(root, "/"))+1:]
		}
	}
	return strings.TrimPrefix(p, "./")
}

func sandboxDir(ws *Workspace) string {
	if ws.Sandbox == nil {
		return ""
	}
	return ws.Sandbox.Info().WorkspaceDir
}

// byproducts lists the folders named in the linter's byproducts that
// exist now.
func (ws *Workspace) byproducts(l Linter) map[string]bool {
	have := map[string]bool{}
	if len(l.Byproducts) == 0 {
		return have
	}
	_ = fs.WalkDir(ws.Root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && slices.Contains(l.Byproducts, d.Name()) {
			have[p] = true
			return fs.SkipDir
		}
		return nil
	})
	return have
}

// removeByproducts removes the by-product folders the linter created.
func (ws *Workspace) removeByproducts(l Linter, before map[string]bool) {
	for p := range ws.byproducts(l) {
		if !before[p] {
			_ = ws.Root.RemoveAll(p)
		}
	}
}
