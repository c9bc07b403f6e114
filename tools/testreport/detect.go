package testreport

import (
	"encoding/json"
	"io"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
)

// The commands Detect proposes.
var (
	goTestArgv       = []string{"go", "test", "./..."}
	pytestArgv       = []string{"python3", "-m", "pytest", "-q"}
	unittestArgv     = []string{"python3", "-m", "unittest", "discover", "-v"}
	npmTestArgv      = []string{"npm", "test"}
	nodeTestArgv     = []string{"node", "--test"}
	detectSkipDirs   = map[string]bool{".git": true, "node_modules": true, "vendor": true, ".venv": true, "venv": true, "env": true, "__pycache__": true, ".tox": true, "dist": true, "build": true, "site-packages": true, ".mypy_cache": true, ".pytest_cache": true}
	detectMaxDepth   = 4
	detectMaxEntries = 5000
	detectMaxReads   = 20
	detectReadBytes  = 64 << 10
	pyTestFile       = regexp.MustCompile(`^(test_.*|.*_test)\.py$`)
	jsTestFile       = regexp.MustCompile(`\.(test|spec)\.[cm]?[jt]s$`)
	importsPytest    = regexp.MustCompile(`(?m)^\s*(import pytest|from pytest\b|@pytest\.)`)
	importsUnittest  = regexp.MustCompile(`(?m)^\s*(import unittest|from unittest\b)|unittest\.TestCase`)
	npmDefaultTest   = "no test specified"
)

// Detect guesses the command that runs the tests of the project in root and
// the framework whose output it prints, by looking only at files:
//
//   - go.mod: ["go" "test" "./..."], "go" (add -json with WithGoJSON for
//     exact counts);
//   - pytest configuration (pytest.ini, conftest.py, [tool.pytest…] in
//     pyproject.toml, [tool:pytest] in setup.cfg, [pytest] in tox.ini) or
//     test files (test_*.py, *_test.py) that use pytest or plain asserts:
//     ["python3" "-m" "pytest" "-q"], "pytest";
//   - package.json with a real "test" script: ["npm" "test"], "node"; without
//     one but with *.test.js files: ["node" "--test"], "node";
//   - other Python projects, or tests that import only unittest:
//     ["python3" "-m" "unittest" "discover" "-v"], "unittest".
//
// Whether pytest is importable cannot be known from files: a caller that
// runs the pytest command and sees "No module named pytest" should fall back
// to the unittest command, which runs unittest-style tests and reports
// plain-assert ones as not found. ok is false when nothing shows how to test.
func Detect(root fs.FS) (argv []string, framework string, ok bool) {
	if exists(root, "go.mod") {
		return slices.Clone(goTestArgv), FrameworkGo, true
	}
	pytestConfig := exists(root, "pytest.ini") || exists(root, "conftest.py") ||
		fileContains(root, "pyproject.toml", "[tool.pytest") ||
		fileContains(root, "setup.cfg", "[tool:pytest]") ||
		fileContains(root, "tox.ini", "[pytest]")
	if pytestConfig {
		return slices.Clone(pytestArgv), FrameworkPytest, true
	}
	scan := scanProject(root)
	if len(scan.pyTests) > 0 {
		usesPytest, usesUnittest := false, false
		for i, p := range scan.pyTests {
			if i >= detectMaxReads {
				break
			}
			src := readHead(root, p)
			usesPytest = usesPytest || importsPytest.MatchString(src)
			usesUnittest = usesUnittest || importsUnittest.MatchString(src)
		}
		if usesPytest || !usesUnittest {
			return slices.Clone(pytestArgv), FrameworkPytest, true
		}
		return slices.Clone(unittestArgv), FrameworkUnittest, true
	}
	if script, ok := npmTestScript(root); ok && !strings.Contains(script, npmDefaultTest) {
		return slices.Clone(npmTestArgv), FrameworkNode, true
	}
	if scan.jsTests && exists(root, "package.json") {
		return slices.Clone(nodeTestArgv), FrameworkNode, true
	}
	if exists(root, "pyproject.toml") || exists(root, "setup.py") || exists(root, "setup.cfg") ||
		exists(root, "requirements.txt") || scan.pyFiles {
		return slices.Clone(unittestArgv), FrameworkUnittest, true
	}
	return nil, "", false
}

type projectScan struct {
	pyTests []string
	pyFiles bool
	jsTests bool
}

// scanProject walks the project a few levels deep, skipping dependency and
// tool folders, and notes test files.
func scanProject(root fs.FS) projectScan {
	var s projectScan
	n := 0
	_ = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() && p != "." {
				return fs.SkipDir
			}
			return nil
		}
		if n++; n > detectMaxEntries {
			return fs.SkipAll
		}
		name := d.Name()
		if d.IsDir() {
			if p != "." && (detectSkipDirs[name] || strings.HasPrefix(name, ".") || strings.Count(p, "/") >= detectMaxDepth) {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case pyTestFile.MatchString(name):
			s.pyTests = append(s.pyTests, p)
			s.pyFiles = true
		case strings.HasSuffix(name, ".py"):
			s.pyFiles = true
		case jsTestFile.MatchString(name) || (strings.HasSuffix(name, ".js") && path.Base(path.Dir(p)) == "test"):
			s.jsTests = true
		}
		return nil
	})
	return s
}

// npmTestScript returns package.json's scripts.test.
func npmTestScript(root fs.FS) (string, bool) {
	data := readHead(root, "package.json")
	if data == "" {
		return "", false
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal([]byte(data), &pkg) != nil {
		return "", false
	}
	s, ok := pkg.Scripts["test"]
	return s, ok && strings.TrimSpace(s) != ""
}

func exists(root fs.FS, name string) bool {
	fi, err := fs.Stat(root, name)
	return err == nil && !fi.IsDir()
}

func fileContains(root fs.FS, name, sub string) bool {
	return strings.Contains(readHead(root, name), sub)
}

// readHead reads the start of a file, "" when it cannot.
func readHead(root fs.FS, name string) string {
	f, err := root.Open(name)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, int64(detectReadBytes)))
	return string(b)
}

// FrameworkOf infers which parser reads the output of a test command:
// "go" for go test (and gotestsum), "pytest" for pytest or python -m pytest,
// "unittest" for python -m unittest (and Django's manage.py test), "node" for
// node --test and npm / npx / yarn / pnpm. It looks through env, timeout,
// nice, nohup and sh -c wrappers. It returns "" when it cannot tell, which
// Parse takes as "guess from the output".
func FrameworkOf(argv []string) string {
	argv = unwrap(argv)
	if len(argv) == 0 {
		return ""
	}
	base := path.Base(argv[0])
	switch {
	case base == "go":
		if len(argv) > 1 && argv[1] == "test" {
			return FrameworkGo
		}
	case base == "gotestsum":
		return FrameworkGo
	case base == "pytest" || base == "py.test" || strings.HasPrefix(base, "pytest-"):
		return FrameworkPytest
	case strings.HasPrefix(base, "python") || base == "uv" || base == "poetry" || base == "pipenv":
		for i, a := range argv {
			if a == "-m" && i+1 < len(argv) {
				switch argv[i+1] {
				case "pytest", "py.test":
					return FrameworkPytest
				case "unittest":
					return FrameworkUnittest
				}
			}
			if (a == "pytest" || a == "py.test") && i > 0 {
				return FrameworkPytest
			}
			if strings.HasSuffix(a, "manage.py") && i+1 < len(argv) && argv[i+1] == "test" {
				return FrameworkUnittest
			}
		}
	case base == "node" || base == "npm" || base == "npx" || base == "yarn" || base == "pnpm" || base == "bun":
		return FrameworkNode
	}
	return ""
}

// GoJSON reports whether argv is a go test command that prints the -json
// event stream.
func GoJSON(argv []string) bool {
	argv = unwrap(argv)
	if len(argv) < 2 || path.Base(argv[0]) != "go" || argv[1] != "test" {
		return false
	}
	for _, a := range argv[2:] {
		if a == "-args" || a == "--args" {
			break
		}
		if a == "-json" || a == "--json" || a == "-json=true" || a == "--json=true" {
			return true
		}
	}
	return false
}

// WithGoJSON returns a copy of argv with -json added after "go test" when it
// is a go test command without it; any other command comes back unchanged.
func WithGoJSON(argv []string) []string {
	out := slices.Clone(argv)
	if GoJSON(argv) {
		return out
	}
	for i := 0; i+1 < len(out); i++ {
		if path.Base(out[i]) == "go" && out[i+1] == "test" {
			return append(out[:i+2], append([]string{"-json"}, out[i+2:]...)...)
		}
	}
	return out
}

// unwrap skips the wrappers that run another command: env (and its
// VAR=value words), timeout, nice, nohup, and sh/bash -c "command".
func unwrap(argv []string) []string {
	for len(argv) > 0 {
		base := path.Base(argv[0])
		switch base {
		case "env":
			argv = argv[1:]
			for len(argv) > 0 && (strings.Contains(argv[0], "=") || strings.HasPrefix(argv[0], "-")) {
				argv = argv[1:]
			}
		case "timeout", "nice", "nohup", "time":
			argv = argv[1:]
			for len(argv) > 0 && (strings.HasPrefix(argv[0], "-") || (argv[0] != "" && argv[0][0] >= '0' && argv[0][0] <= '9')) {
				argv = argv[1:]
			}
		case "sh", "bash", "dash", "zsh":
			if len(argv) >= 3 && argv[1] == "-c" {
				argv = strings.Fields(argv[2])
				continue
			}
			return argv
		default:
			if len(argv) > 0 && strings.Contains(argv[0], "=") && !strings.Contains(argv[0], "/") {
				argv = argv[1:] // VAR=value before a command, as sh reads it
				continue
			}
			return argv
		}
	}
	return argv
}

// WithTestNames returns a copy of argv changed so that the runner names
// every test that passed, which a Report needs for PassedTests: -json for
// go test (WithGoJSON), -rA appended for pytest (its short summary then
// lists "PASSED node"; the last -r wins, so it is appended, unless the last
// one already reports passes), -v appended for python -m unittest (unless
// the last of -v and -q is -v). Any other command comes back unchanged;
// so does a shell line, which callers do not pass here.
func WithTestNames(argv []string) []string {
	out := WithGoJSON(argv)
	for i, a := range out {
		base := path.Base(a)
		switch {
		case base == "pytest" || base == "py.test" ||
			(a == "-m" && i+1 < len(out) && (out[i+1] == "pytest" || out[i+1] == "py.test")):
			if !pytestNamesPassed(out[i+1:]) {
				out = appendBeforeDashes(out, i+1, "-rA")
			}
			return out
		case a == "-m" && i+1 < len(out) && out[i+1] == "unittest" && i > 0 && isPython(path.Base(out[i-1])):
			if !unittestVerboseLast(out[i+2:]) {
				out = appendBeforeDashes(out, i+2, "-v")
			}
			return out
		}
	}
	return out
}

// pytestNamesPassed reports whether the last -r option of args already
// reports passing tests (p, P or A among its characters).
func pytestNamesPassed(args []string) bool {
	chars := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			i = len(args)
		case a == "-r" && i+1 < len(args):
			chars = args[i+1]
			i++
		case strings.HasPrefix(a, "-r") && !strings.HasPrefix(a, "--"):
			chars = a[2:]
		}
	}
	return strings.ContainsAny(chars, "pPA")
}

// unittestVerboseLast reports whether the last verbosity option of args
// is -v (or --verbose).
func unittestVerboseLast(args []string) bool {
	v := false
	for _, a := range args {
		switch a {
		case "-v", "--verbose":
			v = true
		case "-q", "--quiet":
			v = false
		case "--":
			return v
		}
	}
	return v
}

// appendBeforeDashes adds opt at the end of the runner's arguments, which
// start at from: before a "--" that ends them, else at the end.
func appendBeforeDashes(argv []string, from int, opt string) []string {
	for j := from; j < len(argv); j++ {
		if argv[j] == "--" {
			return append(argv[:j], append([]string{opt}, argv[j:]...)...)
		}
	}
	return append(argv, opt)
}

func isPython(base string) bool {
	return strings.HasPrefix(base, "python") || strings.HasPrefix(base, "pypy")
}
