package tools_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trioagent/trio/tools"
	"github.com/trioagent/trio/tools/testreport"
)

func TestRunLinterFindings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		files map[string]string
		args  obj
		want  []testreport.Failure // Name, File, Line and a Message part
		cmds  []string
	}{
		{
			name: "go vet flags an unused variable, gofmt an unformatted file",
			files: map[string]string{
				"go.mod": "module m\n\ngo 1.22\n",
				"a.go":   "package m\n\nfunc F() int {\n\tx := 1\n\treturn 2\n}\n",
				"b.go":   "package m\nfunc  G() {}\n",
			},
			want: []testreport.Failure{{Name: "go_vet", File: "a.go", Line: 4, Message: "declared and not used: x"},
				{Name: "gofmt", File: "b.go", Message: "not formatted"}},
			cmds: []string{"go vet ./...", "gofmt -l ."},
		},
		{
			name: "py_compile catches a syntax error in each file it stops at",
			files: map[string]string{
				"ok.py":        "x = 1\n",
				"bad.py":       "def f(:\n    pass\n",
				"pkg/worse.py": "def g():\n\treturn 1\n        return 2\n",
				"tests/t.py":   "def (\n",
			},
			args: obj{"linters": []string{"py_compile"}, "exclude": []string{"tests"}},
			want: []testreport.Failure{{Name: "py_compile", File: "bad.py", Line: 1, Message: "SyntaxError"},
				{Name: "py_compile", File: "pkg/worse.py", Line: 3, Message: "TabError"}},
			cmds: []string{"python3 -m py_compile bad.py", "python3 -m py_compile ok.py", "python3 -m py_compile pkg/worse.py"},
		},
		{
			name:  "node --check names the file and line",
			files: map[string]string{"package.json": "{}", "index.js": "function (\n"},
			args:  obj{"linters": []string{"node_check"}},
			want:  []testreport.Failure{{Name: "node_check", File: "index.js", Line: 1, Message: "SyntaxError"}},
			cmds:  []string{"node --check index.js"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if c.cmds[0][:strings.IndexByte(c.cmds[0], ' ')] == "node" {
				if _, err := exec.LookPath("node"); err != nil {
					t.Skip("node is not installed")
				}
			}
			ws := newWorkspace(t, c.files)
			args := c.args
			if args == nil {
				args = obj{}
			}
			res, eff := run(t, ws, tools.RunLinterName, args)
			var cmds []string
			for _, e := range eff {
				cmds = append(cmds, e.Command.Line)
			}
			if !slices.Equal(cmds, c.cmds) {
				t.Errorf("commands %q, want %q", cmds, c.cmds)
			}
			if res.OK || res.Tests == nil || res.Tests.Framework != tools.FrameworkLint {
				t.Fatalf("result %+v, want a failing lint report", res)
			}
			got := res.Tests.Failures
			if len(got) != len(c.want) {
				t.Fatalf("findings %+v, want %d", got, len(c.want))
			}
			for i, w := range c.want {
				g := got[i]
				if g.Name != w.Name || g.File != w.File || g.Line != w.Line || !strings.Contains(g.Message, w.Message) || g.Kind != tools.KindLint {
					t.Errorf("finding %d = %+v, want %+v", i, g, w)
				}
			}
			if !strings.Contains(res.Output, c.want[0].Name+": ") {
				t.Errorf("output %q does not name the linter", res.Output)
			}
			// py_compile writes bytecode; the tool leaves no __pycache__.
			if _, err := os.Stat(filepath.Join(ws.Dir, "__pycache__")); err == nil {
				t.Errorf("__pycache__ left in the workspace")
			}
		})
	}
}

func TestRunLinterClean(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"go.mod": "module m\n\ngo 1.22\n", "a.go": "package m\n\n// F is two.\nfunc F() int { return 2 }\n"})
	res, _ := run(t, ws, tools.RunLinterName, obj{})
	if !res.OK || res.Tests.Passed != 2 || len(res.Tests.Failures) != 0 || !strings.Contains(res.Output, "go_vet: clean") {
		t.Fatalf("result %+v, want both Go linters clean", res)
	}
}

func TestRunLinterOptionalMissingSkipped(t *testing.T) {
	t.Parallel()
	if out, err := exec.Command("python3", "-m", "pyflakes", "--version").CombinedOutput(); err == nil {
		t.Skipf("pyflakes is installed here (%s)", out)
	}
	ws := newWorkspace(t, map[string]string{"a.py": "import os\n"})
	res, _ := run(t, ws, tools.RunLinterName, obj{"linters": []string{"pyflakes"}})
	if !res.OK || res.Tests.Skipped != 1 || !strings.Contains(res.Output, "pyflakes: skipped (not installed)") {
		t.Fatalf("result %+v, want pyflakes skipped", res)
	}
}

func TestRunLinterBadArguments(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"a.py": "x = 1\n"})
	for _, c := range []struct {
		args obj
		want string
	}{
		{obj{"linters": []string{"eslint"}}, `"linters[0]": "eslint" is not a known linter`},
		{obj{"linters": []string{"go_vet"}}, `"linters[0]": "go_vet" is for a language this workspace does not use`},
		{obj{"exclude": []string{"../x"}}, "exclude[0]"},
	} {
		res, _ := run(t, ws, tools.RunLinterName, c.args)
		if res.OK || !strings.Contains(res.Output, c.want) {
			t.Errorf("%v: output %q, want %q", c.args, res.Output, c.want)
		}
	}
	empty := newWorkspace(t, map[string]string{"notes.txt": "hi"})
	if res, _ := run(t, empty, tools.RunLinterName, obj{}); res.OK || !strings.Contains(res.Output, "no language with linters") {
		t.Errorf("no language: %q", res.Output)
	}
}
