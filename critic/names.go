package critic

import (
	"bytes"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/tools/testreport"
)

// collectRules tells the test designer which tests the names come from,
// when a reply has none.
const collectRules = "Go tests are func TestXxx(t *testing.T) in _test.go files; " +
	"Python tests are test* methods of unittest.TestCase subclasses (and, under pytest, " +
	"test* functions and methods of Test* classes) in test*.py or *_test.py files"

// DesignedTests derives the acceptance tests that files define, as the
// test runner of framework (a testreport Framework constant, "" when the
// test command shows none) will collect them:
//
//   - Go, in _test.go files this machine's go command builds (build
//     constraints and _GOOS/_GOARCH suffixes honoured): top-level
//     TestXxx(*testing.T) and FuzzXxx(*testing.F) functions, as
//     "<file>::TestXxx";
//   - Python, in test*.py and *_test.py files: under unittest, the test*
//     methods of unittest.TestCase subclasses, inherited ones included
//     (the runner reports them under the subclass), as
//     "<file>::<Class>::<method>"; under pytest also module-level test*
//     functions ("<file>::<function>") and the methods of Test* classes.
//     Under any other command Python files give no names.
//
// The names are derived rather than declared by the test designer because
// the files are what the runner runs: a declared list can miss a test or
// name one that is not there, and a name that merely occurs in a file
// (a comment, a string) proves nothing. langs lists the languages whose
// test files were found, so that a suite of such files without a single
// test can be sent back. Files in other languages give no names: their
// tests are checked by count only.
func DesignedTests(files []SuiteFile, framework string) (tests, langs []string) {
	var goFiles, pyFiles, pyOther []SuiteFile
	for _, f := range files {
		base := path.Base(f.Path)
		switch {
		case strings.HasSuffix(base, "_test.go"):
			goFiles = append(goFiles, f)
		case strings.HasSuffix(base, ".py") && (strings.HasPrefix(base, "test") || strings.HasSuffix(base, "_test.py")):
			pyFiles = append(pyFiles, f)
		case strings.HasSuffix(base, ".py"):
			pyOther = append(pyOther, f) // helpers: their classes may be the tests' bases
		}
	}
	if len(goFiles) > 0 {
		langs = append(langs, "Go")
		for _, f := range goFiles {
			tests = append(tests, goTests(f)...)
		}
	}
	if len(pyFiles) > 0 && (framework == testreport.FrameworkUnittest || framework == testreport.FrameworkPytest) {
		langs = append(langs, "Python")
		tests = append(tests, pythonTests(pyFiles, pyOther, framework == testreport.FrameworkPytest)...)
	}
	slices.Sort(tests)
	return slices.Compact(tests), langs
}

// goTests lists the test and fuzz functions of one _test.go file, none when
// the go command would not build it here.
func goTests(f SuiteFile) []string {
	ctx := build.Default
	ctx.OpenFile = func(string) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(f.Content)), nil }
	if ok, err := ctx.MatchFile(path.Dir(f.Path), path.Base(f.Path)); err == nil && !ok {
		return nil
	}
	file, err := parser.ParseFile(token.NewFileSet(), f.Path, f.Content, parser.SkipObjectResolution)
	if err != nil {
		// It will not compile, so nothing passes anyway; the names still
		// say which tests the failure stands for.
		return goTestsByText(f)
	}
	var out []string
	for _, d := range file.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || fn.Type.TypeParams != nil || fn.Type.Params == nil || len(fn.Type.Params.List) != 1 {
			continue
		}
		p := fn.Type.Params.List[0]
		if len(p.Names) > 1 {
			continue
		}
		star, ok := p.Type.(*ast.StarExpr)
		if !ok {
			continue
		}
		sel, ok := star.X.(*ast.SelectorExpr)
		if !ok {
			continue
		}
		name := fn.Name.Name
		if (sel.Sel.Name == "T" && goTestName(name, "Test")) || (sel.Sel.Name == "F" && goTestName(name, "Fuzz")) {
			out = append(out, f.Path+"::"+name)
		}
	}
	return out
}

var goTestFunc = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)\w*)\(\s*\w+ \*\w+\.[TF]\s*\)`)

func goTestsByText(f SuiteFile) []string {
	var out []string
	for _, m := range goTestFunc.FindAllStringSubmatch(f.Content, -1) {
		if goTestName(m[1], "Test") || goTestName(m[1], "Fuzz") {
			out = append(out, f.Path+"::"+m[1])
		}
	}
	return out
}

// goTestName is the go command's rule: the prefix, then nothing or a rune
// that is not a lower-case letter (TestMain aside).
func goTestName(name, prefix string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || name == "TestMain" {
		return false
	}
	if rest == "" {
		return true
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return !unicode.IsLower(r)
}

var (
	pyClass  = regexp.MustCompile(`^class\s+(\w+)\s*(?:\(([^)]*)\)?)?\s*:?`)
	pyDef    = regexp.MustCompile(`^(\s*)(?:async\s+)?def\s+(\w+)\s*\(`)
	pyIdents = regexp.MustCompile(`[A-Za-z_][\w.]*`)
)

type pyClassInfo struct {
	file, name string
	bases      []string // last dotted element of each base
	methods    []string // own test* methods
}

// pythonTests lists the tests of the Python test files as unittest (or,
// with pytest set, pytest) collects them. It reads the files line by line:
// top-level class statements, the defs at the first indentation of a
// class body, top-level defs. Base classes are resolved by name across the
// suite's files, helpers included; a class from elsewhere counts as a
// TestCase only when it is unittest's (or IsolatedAsyncioTestCase). Tests
// a module only imports are left out: they run under the class's own
// module name, and each test file's own classes are what it is about.
func pythonTests(files, helpers []SuiteFile, pytest bool) []string {
	var classes []*pyClassInfo
	var out []string
	isTestFile := map[string]bool{}
	for _, f := range files {
		isTestFile[f.Path] = true
	}
	for _, f := range append(slices.Clone(files), helpers...) {
		ls := strings.Split(strings.ReplaceAll(f.Content, "\r\n", "\n"), "\n")
		var cur *pyClassInfo
		body := -1 // indentation of cur's body, once known
		for i := 0; i < len(ls); i++ {
			l := ls[i]
			t := strings.TrimSpace(l)
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			ind := len(l) - len(strings.TrimLeft(l, " \t"))
			if ind == 0 {
				cur = nil
				if m := pyClass.FindStringSubmatch(l); m != nil {
					bases := m[2]
					if strings.Contains(l, "(") && !strings.Contains(l, ")") {
						// Bases over several lines.
						for j := i + 1; j < len(ls) && j < i+10; j++ {
							bases += " " + ls[j]
							if strings.Contains(ls[j], ")") {
								bases = bases[:strings.LastIndex(bases, ")")]
								i = j
								break
							}
						}
					}
					cur = &pyClassInfo{file: f.Path, name: m[1]}
					for _, b := range pyIdents.FindAllString(bases, -1) {
						if strings.Contains(b, "=") {
							continue
						}
						cur.bases = append(cur.bases, b[strings.LastIndexByte(b, '.')+1:])
					}
					classes = append(classes, cur)
					body = -1
					continue
				}
				if m := pyDef.FindStringSubmatch(l); m != nil && pytest && isTestFile[f.Path] && strings.HasPrefix(m[2], "test") {
					out = append(out, f.Path+"::"+m[2])
				}
				continue
			}
			if cur == nil {
				continue
			}
			if body < 0 {
				body = ind
			}
			if m := pyDef.FindStringSubmatch(l); m != nil && ind == body && strings.HasPrefix(m[2], "test") {
				cur.methods = append(cur.methods, m[2])
			}
		}
	}
	byName := map[string][]*pyClassInfo{}
	for _, c := range classes {
		byName[c.name] = append(byName[c.name], c)
	}
	// isCase: a unittest.TestCase subclass, through the suite's classes.
	memo := map[*pyClassInfo]int{} // 1 yes, 2 no, 3 in progress
	var isCase func(c *pyClassInfo) bool
	isCase = func(c *pyClassInfo) bool {
		switch memo[c] {
		case 1:
			return true
		case 2, 3:
			return false
		}
		memo[c] = 3
		yes := false
		for _, b := range c.bases {
			if b == "TestCase" || b == "IsolatedAsyncioTestCase" {
				yes = true
			}
			for _, bc := range byName[b] {
				if bc != c && isCase(bc) {
					yes = true
				}
			}
		}
		memo[c] = 2
		if yes {
			memo[c] = 1
		}
		return yes
	}
	// methods: own and inherited from the suite's classes.
	var methods func(c *pyClassInfo, seen map[*pyClassInfo]bool) []string
	methods = func(c *pyClassInfo, seen map[*pyClassInfo]bool) []string {
		if seen[c] {
			return nil
		}
		seen[c] = true
		out := slices.Clone(c.methods)
		for _, b := range c.bases {
			for _, bc := range byName[b] {
				out = append(out, methods(bc, seen)...)
			}
		}
		return out
	}
	for _, c := range classes {
		if !isTestFile[c.file] || (!isCase(c) && !(pytest && strings.HasPrefix(c.name, "Test"))) {
			continue
		}
		for _, m := range methods(c, map[*pyClassInfo]bool{}) {
			out = append(out, c.file+"::"+c.name+"::"+m)
		}
	}
	return out
}

// commandArgv is a test command's words, for FrameworkOf.
func commandArgv(line string) []string {
	if cmd, err := policy.ParseCommand(line); err == nil && len(cmd.Argv) > 0 {
		return cmd.Argv
	}
	return strings.Fields(line)
}

// nameMatcher tells whether a designed test was reported passed.
type nameMatcher struct {
	passed []string
	// exists reports whether a workspace-relative file exists: a reported
	// path that is only a suffix of the designed one must not also name a
	// file of the project's own, or the project's test could stand in for
	// the designed one.
	exists func(string) bool
	// goPackage is the import path of a workspace folder, "" when unknown.
	goPackage func(dir string) string
}

// passedByName reports whether the designed test id is among the passed
// names: Go "pkg/path.TestX" (or "pkg/path.TestX/sub"), pytest
// "path::[Class::]name[params]" with the path relative to pytest's rootdir,
// unittest "dotted.module.Class.name".
func (m *nameMatcher) passedByName(id string) bool {
	file, rest, _ := strings.Cut(id, "::")
	class, name, hasClass := strings.Cut(rest, "::")
	if !hasClass {
		class, name = "", rest
	}
	switch {
	case strings.HasSuffix(file, ".go"):
		dir := path.Dir(file)
		pkg := m.goPackage(dir)
		for _, p := range m.passed {
			for _, head := range goHeads(p, name) {
				if (pkg != "" && head == pkg) || (pkg == "" && (head == dir || strings.HasSuffix(head, "/"+dir))) {
					return true
				}
			}
		}
	case strings.HasSuffix(file, ".py"):
		for _, p := range m.passed {
			if strings.Contains(p, "::") {
				if m.pytestMatch(p, file, class, name) {
					return true
				}
			} else if m.unittestMatch(p, file, class, name) {
				return true
			}
		}
	}
	return false
}

// goHeads returns the package paths p could qualify name with: p is
// "pkg.Name" or "pkg.Name/subtest", and only the subtest may hold ".Name".
func goHeads(p, name string) []string {
	var heads []string
	for off := 0; ; {
		i := strings.Index(p[off:], "."+name)
		if i < 0 {
			return heads
		}
		i += off
		if end := i + 1 + len(name); end == len(p) || p[end] == '/' {
			heads = append(heads, p[:i])
		}
		off = i + 1
	}
}

func (m *nameMatcher) pytestMatch(p, file, class, name string) bool {
	parts := strings.Split(p, "::")
	last := parts[len(parts)-1]
	if i := strings.IndexByte(last, '['); i >= 0 {
		last = last[:i]
	}
	if last != name {
		return false
	}
	switch {
	case class == "" && len(parts) != 2, class != "" && (len(parts) != 3 || parts[1] != class):
		return false
	}
	return m.samePath(parts[0], file)
}

func (m *nameMatcher) unittestMatch(p, file, class, name string) bool {
	if class == "" {
		return false
	}
	mod, ok := strings.CutSuffix(p, "."+class+"."+name)
	if !ok || mod == "" {
		return false
	}
	return m.samePath(strings.ReplaceAll(mod, ".", "/")+".py", file)
}

// samePath reports whether a path as the runner printed it (relative to
// its root, which may lie below the workspace) is the designed file.
func (m *nameMatcher) samePath(reported, file string) bool {
	reported = strings.TrimPrefix(reported, "./")
	if reported == file {
		return true
	}
	return strings.HasSuffix(file, "/"+reported) && !m.exists(reported)
}

// goModulePath reads the module path from go.mod's content, "" if none.
func goModulePath(gomod []byte) string {
	for _, l := range bytes.Split(gomod, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if rest, ok := bytes.CutPrefix(l, []byte("module")); ok && (len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t') {
			s := strings.TrimSpace(string(rest))
			if i := strings.Index(s, "//"); i >= 0 {
				s = strings.TrimSpace(s[:i])
			}
			return strings.Trim(s, "\"`")
		}
	}
	return ""
}
