package testreport

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestDetect(t *testing.T) {
	t.Parallel()
	const pkgTest = `{"name":"x","scripts":{"test":"node --test"}}`
	const pkgDefault = `{"name":"x","scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}`
	tests := []struct {
		name      string
		files     map[string]string
		argv      []string
		framework string
	}{
		{"go module", map[string]string{"go.mod": "module m\n", "a_test.go": "package m\n"}, goTestArgv, FrameworkGo},
		{"go wins over node", map[string]string{"go.mod": "module m\n", "package.json": pkgTest}, goTestArgv, FrameworkGo},
		{"pytest.ini", map[string]string{"pytest.ini": "[pytest]\n", "app.py": ""}, pytestArgv, FrameworkPytest},
		{"conftest.py", map[string]string{"conftest.py": "", "tests/test_a.py": "import unittest\n"}, pytestArgv, FrameworkPytest},
		{"pyproject with pytest table", map[string]string{"pyproject.toml": "[project]\nname='x'\n\n[tool.pytest.ini_options]\naddopts='-q'\n"}, pytestArgv, FrameworkPytest},
		{"setup.cfg with pytest section", map[string]string{"setup.cfg": "[metadata]\nname=x\n[tool:pytest]\n"}, pytestArgv, FrameworkPytest},
		{"plain-assert tests", map[string]string{"calc.py": "", "tests/test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(1, 1) == 2\n"}, pytestArgv, FrameworkPytest},
		{"tests importing pytest", map[string]string{"src/pkg/calc_test.py": "import pytest\n", "src/pkg/other_test.py": "import unittest\n"}, pytestArgv, FrameworkPytest},
		{"unittest-only tests", map[string]string{"calc.py": "", "test_calc.py": "import unittest\n\nclass T(unittest.TestCase):\n    pass\n"}, unittestArgv, FrameworkUnittest},
		{"python project without tests", map[string]string{"pyproject.toml": "[project]\nname='x'\n", "x/__init__.py": ""}, unittestArgv, FrameworkUnittest},
		{"requirements only", map[string]string{"requirements.txt": "requests\n"}, unittestArgv, FrameworkUnittest},
		{"npm test script", map[string]string{"package.json": pkgTest, "tools/gen.py": ""}, npmTestArgv, FrameworkNode},
		{"npm default script, node tests", map[string]string{"package.json": pkgDefault, "test/a.test.js": ""}, nodeTestArgv, FrameworkNode},
		{"python tests inside node_modules ignored", map[string]string{"package.json": pkgTest, "node_modules/lib/test_x.py": "def test(): pass\n"}, npmTestArgv, FrameworkNode},
		{"npm default script, no tests", map[string]string{"package.json": pkgDefault, "index.js": ""}, nil, ""},
		{"broken package.json", map[string]string{"package.json": "{", "index.js": ""}, nil, ""},
		{"empty", map[string]string{"README.md": "hi\n"}, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for name, data := range tc.files {
				p := filepath.Join(dir, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			argv, fw, ok := Detect(os.DirFS(dir))
			if !slices.Equal(argv, tc.argv) || fw != tc.framework || ok != (tc.argv != nil) {
				t.Errorf("Detect = %q, %q, %v; want %q, %q, %v", argv, fw, ok, tc.argv, tc.framework, tc.argv != nil)
			}
			if ok && FrameworkOf(argv) != fw {
				t.Errorf("FrameworkOf(%q) = %q, want %q", argv, FrameworkOf(argv), fw)
			}
		})
	}
}

func TestDetectReturnsCopies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	argv, _, _ := Detect(os.DirFS(dir))
	argv[0] = "rm"
	again, _, _ := Detect(os.DirFS(dir))
	if again[0] != "go" {
		t.Fatalf("Detect shares its argv: %q", again)
	}
}

func TestFrameworkOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv      []string
		framework string
		goJSON    bool
	}{
		{[]string{"go", "test", "./..."}, FrameworkGo, false},
		{[]string{"go", "test", "-json", "-race", "./..."}, FrameworkGo, true},
		{[]string{"/usr/local/go/bin/go", "test", "-json=true", "."}, FrameworkGo, true},
		{[]string{"go", "test", ".", "-args", "-json"}, FrameworkGo, false},
		{[]string{"go", "build", "./..."}, "", false},
		{[]string{"gotestsum", "--", "./..."}, FrameworkGo, false},
		{[]string{"pytest", "-q"}, FrameworkPytest, false},
		{[]string{"python3", "-m", "pytest", "-q"}, FrameworkPytest, false},
		{[]string{"/usr/bin/python3.11", "-m", "unittest", "discover", "-v"}, FrameworkUnittest, false},
		{[]string{"python", "manage.py", "test"}, FrameworkUnittest, false},
		{[]string{"uv", "run", "pytest"}, FrameworkPytest, false},
		{[]string{"python3", "app.py"}, "", false},
		{[]string{"node", "--test"}, FrameworkNode, false},
		{[]string{"npm", "test"}, FrameworkNode, false},
		{[]string{"npx", "jest"}, FrameworkNode, false},
		{[]string{"env", "CGO_ENABLED=0", "go", "test", "-json", "./..."}, FrameworkGo, true},
		{[]string{"timeout", "60", "python3", "-m", "pytest"}, FrameworkPytest, false},
		{[]string{"nice", "-n", "10", "go", "test", "./..."}, FrameworkGo, false},
		{[]string{"sh", "-c", "cd app && python3 -m unittest"}, "", false},
		{[]string{"bash", "-c", "python3 -m unittest -v"}, FrameworkUnittest, false},
		{[]string{"PYTHONPATH=.", "pytest"}, FrameworkPytest, false},
		{[]string{"make", "test"}, "", false},
		{nil, "", false},
	}
	for _, tc := range tests {
		if got := FrameworkOf(tc.argv); got != tc.framework {
			t.Errorf("FrameworkOf(%q) = %q, want %q", tc.argv, got, tc.framework)
		}
		if got := GoJSON(tc.argv); got != tc.goJSON {
			t.Errorf("GoJSON(%q) = %v, want %v", tc.argv, got, tc.goJSON)
		}
	}
}

func TestWithGoJSON(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want []string }{
		{[]string{"go", "test", "./..."}, []string{"go", "test", "-json", "./..."}},
		{[]string{"go", "test", "-json", "./..."}, []string{"go", "test", "-json", "./..."}},
		{[]string{"env", "A=1", "go", "test"}, []string{"env", "A=1", "go", "test", "-json"}},
		{[]string{"npm", "test"}, []string{"npm", "test"}},
	}
	for _, tc := range tests {
		in := slices.Clone(tc.in)
		if got := WithGoJSON(in); !slices.Equal(got, tc.want) {
			t.Errorf("WithGoJSON(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("WithGoJSON changed its argument to %q", in)
		}
	}
}
