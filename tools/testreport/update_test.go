package testreport

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The fixtures under testdata/out are real outputs of real test runners on
// the projects under testdata/src. Regenerate them with
//
//	go test ./tools/testreport -run TestUpdateFixtures -update -python=/usr/bin/python3
//
// This is the only place the package's tests run processes.
var (
	update = flag.Bool("update", false, "regenerate testdata/out from testdata/src by running the real test runners")
	python = flag.String("python", "python3", "python interpreter (with pytest importable) used by -update")
)

// fixtureRoot replaces the temporary directory a fixture ran in, so the
// committed outputs do not depend on where they were generated.
const fixtureRoot = "/workspace"

// fixtureRun is one recorded run: the project under testdata/src and the
// command run inside it.
type fixtureRun struct {
	name string
	src  string
	argv []string
}

func fixtureRuns(py string) []fixtureRun {
	return []fixtureRun{
		{"go_json", "gomod", []string{"go", "test", "-json", "./..."}},
		{"go_json_pass", "gomod", []string{"go", "test", "-json", "./calc/..."}},
		{"go_json_more", "gomore", []string{"go", "test", "-json", "-timeout", "3s", "./..."}},
		{"go_text", "gomod", []string{"go", "test", "./..."}},
		{"go_text_v", "gomod", []string{"go", "test", "-v", "./..."}},
		{"pytest_fail", "pyfail", []string{py, "-m", "pytest", "-p", "no:cacheprovider"}},
		{"pytest_fail_q", "pyfail", []string{py, "-m", "pytest", "-p", "no:cacheprovider", "-q"}},
		{"pytest_fail_ra", "pyfail", []string{py, "-m", "pytest", "-p", "no:cacheprovider", "-rA"}},
		{"pytest_fail_tbshort", "pyfail", []string{py, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--tb=short"}},
		{"pytest_fail_v", "pyfail", []string{py, "-m", "pytest", "-p", "no:cacheprovider", "-v"}},
		{"pytest_pass_q", "pypass", []string{py, "-m", "pytest", "-p", "no:cacheprovider", "-q"}},
		{"pytest_collect", "pycollect", []string{py, "-m", "pytest", "-p", "no:cacheprovider"}},
		{"pytest_collect_q", "pycollect", []string{py, "-m", "pytest", "-p", "no:cacheprovider", "-q"}},
		{"pytest_empty", "pyempty", []string{py, "-m", "pytest", "-p", "no:cacheprovider"}},
		{"pytest_empty_q", "pyempty", []string{py, "-m", "pytest", "-p", "no:cacheprovider", "-q"}},
		{"unittest_fail_v", "unit", []string{py, "-m", "unittest", "discover", "-v"}},
		{"unittest_fail", "unit", []string{py, "-m", "unittest"}},
		{"unittest_pass_v", "unitpass", []string{py, "-m", "unittest", "discover", "-v"}},
		{"unittest_empty", "pyempty", []string{py, "-m", "unittest", "discover", "-v"}},
		{"node_fail_tap", "nodefail", []string{"node", "--test"}},
		{"node_fail_spec", "nodefail", []string{"node", "--test", "--test-reporter=spec"}},
		{"node_pass_tap", "nodepass", []string{"node", "--test"}},
		{"npm_fail", "nodefail", []string{"npm", "test"}},
	}
}

func TestUpdateFixtures(t *testing.T) {
	if !*update {
		t.Skip("run with -update to regenerate testdata/out")
	}
	out := filepath.Join("testdata", "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, fr := range fixtureRuns(*python) {
		t.Run(fr.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ws")
			if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "src", fr.src))); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(fr.argv[0], fr.argv[1:]...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOFLAGS=-count=1", "NO_COLOR=1", "COLUMNS=80", "PYTHONDONTWRITEBYTECODE=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			code := 0
			if err := cmd.Run(); err != nil {
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					t.Fatalf("%v: %v", fr.argv, err)
				}
				code = ee.ExitCode()
			}
			clean := func(b []byte) []byte {
				real, _ := filepath.EvalSymlinks(dir)
				s := strings.ReplaceAll(string(b), real, fixtureRoot)
				return []byte(strings.ReplaceAll(s, dir, fixtureRoot))
			}
			base := filepath.Join(out, fr.name)
			for ext, data := range map[string][]byte{
				".stdout": clean(stdout.Bytes()),
				".stderr": clean(stderr.Bytes()),
				".exit":   []byte(strconv.Itoa(code) + "\n"),
			} {
				if err := os.WriteFile(base+ext, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// fixture reads one recorded run.
func fixture(tb testing.TB, name string) (stdout, stderr string, exitCode int) {
	tb.Helper()
	read := func(ext string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "out", name+ext))
		if err != nil {
			tb.Fatal(err)
		}
		return string(b)
	}
	code, err := strconv.Atoi(strings.TrimSpace(read(".exit")))
	if err != nil {
		tb.Fatalf("%s.exit: %v", name, err)
	}
	return read(".stdout"), read(".stderr"), code
}
