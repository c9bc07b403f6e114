package sandboxtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/sandbox"
)

// CheckModule is a workspace for CheckCaches: a Go module with one package
// and a Python module.
var CheckModule = map[string]string{
	"go.mod": "module m\n\ngo 1.21\n",
	"p/p.go": "package p\n\nfunc P() int { return 1 }\n",
	"mod.py": "print(\"source\")\n",
	// Same size as mod.py, so that its bytecode passes for mod.py's.
	"fake.py": "print(\"FORGED\")\n",
}

// CheckCaches asserts, through sb (whose workspace holds CheckModule),
// what a check command (sandbox.Command.Check) builds from. With goCache:
// what earlier commands stored in the build cache is not read (the
// package they built is stale to the check), nor is what the check itself
// builds stored where another process could change it, and the standard
// library comes from the warm base. Always: Python bytecode planted in
// __pycache__ for a workspace module is loaded by an ordinary command but
// not by a check.
func CheckCaches(t *testing.T, sb sandbox.Sandbox, goCache bool) {
	t.Helper()
	exec := func(check bool, script string) string {
		t.Helper()
		res, err := sb.Exec(context.Background(), sandbox.Command{Argv: []string{"sh", "-c", script}, Check: check})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 0 {
			t.Fatalf("%q (check %v): exit %d\n%s%s", script, check, res.ExitCode, res.Stdout, res.Stderr)
		}
		return strings.TrimSpace(res.Stdout)
	}
	const build = "go build ./... && go list -f '{{.Stale}}' ./p"
	if goCache {
		if out := exec(false, build); out != "false" {
			t.Fatalf("an ordinary command's build is not cached (stale %q): the test's premise", out)
		}
		if out := exec(true, build); out != "true" {
			t.Errorf("a check read a build an earlier command stored, or stored its own (stale %q, want true)", out)
		}
		if out := exec(true, "go list -f '{{.Stale}}' fmt"); out != "false" {
			t.Errorf("a check does not get the standard library from the warm base (fmt stale %q)", out)
		}
	}
	plant := "python3 -c '" + `import importlib.util, os, py_compile
st = os.stat("fake.py")
os.utime("mod.py", ns=(st.st_atime_ns, st.st_mtime_ns))
py_compile.compile("fake.py", cfile=importlib.util.cache_from_source("mod.py"))' && python3 -c 'import mod'`
	if out := exec(false, plant); out != "FORGED" {
		t.Fatalf("planted bytecode was not loaded by an ordinary command (%q): the test's premise", out)
	}
	if out := exec(true, "python3 -c 'import mod'"); out != "source" {
		t.Errorf("a check loaded bytecode planted in __pycache__: %q, want source", out)
	}
}

// WriteFiles writes files (slash-separated paths relative to dir) into dir.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
