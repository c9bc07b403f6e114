package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/trioagent/trio/sandbox/internal/gocacheprog"
)

// CheckEnv returns env as a check command (Command.Check) gets it. No
// result the Worker's code could have produced feeds a check:
//
//   - the go command runs every test again (-count=1 added to GOFLAGS):
//     a cached test result is one the Worker's run produced, and a test
//     can read inputs go test does not record (a marker file opened with
//     a raw syscall), so "ok (cached)" proves nothing about the code as
//     it is now;
//   - Python looks for compiled bytecode in a new folder of the temporary
//     folder, named at random for this command, so .pyc files planted in
//     the workspace's __pycache__ folders or by an earlier command are
//     never loaded (py_compile, a linter, can still write there);
//   - with a helper (the kind's own executable, which commands may run),
//     the go command's build cache is the helper's cache program reading
//     only the trusted bases and what this go command stored itself,
//     checked against its content's hash (see package gocacheprog), and
//     GOCACHE, which go still keeps for fuzzing, is a new folder of /tmp
//     with a name no earlier command could guess. Without one the go
//     command's cache is the kind's usual one: compiled packages from it
//     are keyed by their sources' hashes, and test results are not used.
func CheckEnv(env []string, helper string, bases ...string) []string {
	tmp := EnvValue(env, "TMPDIR")
	if tmp == "" {
		tmp = "/tmp"
	}
	b := make([]byte, 16)
	rand.Read(b)
	name := hex.EncodeToString(b)
	extra := []string{"PYTHONPYCACHEPREFIX=" + path.Join(tmp, ".trio-pycache-"+name),
		"GOFLAGS=" + strings.TrimSpace(EnvValue(env, "GOFLAGS")+" -count=1")}
	if helper != "" {
		extra = append(extra, "GOCACHE=/tmp/.trio-check-"+name,
			"GOCACHEPROG="+gocacheprog.Prog(helper, "", bases...))
	}
	return MergeEnv(env, extra)
}

// Folder is a host folder a sandbox uses beside the workspace, by the name
// an error gives it.
type Folder struct{ Name, Path string }

// OutsideWorkspace returns an error naming the first folder that is the
// workspace or inside it ("" and "none" paths are skipped): a command could
// change it through the workspace, whatever the sandbox binds read-only or
// keeps apart (the warm build cache other runs read, the module cache, the
// sandbox's own state). Paths are compared with symlinks resolved.
func OutsideWorkspace(workspace string, folders ...Folder) error {
	ws := resolved(workspace)
	for _, f := range folders {
		if f.Path == "" || f.Path == "none" {
			continue
		}
		rel, err := filepath.Rel(ws, resolved(f.Path))
		if err == nil && (rel == "." || filepath.IsLocal(rel)) {
			return fmt.Errorf("the workspace %s holds the %s %s, which commands could then change: "+
				"choose a project folder for the workspace, or move the %s", workspace, f.Name, f.Path, f.Name)
		}
	}
	return nil
}

// resolved is p absolute with symlinks resolved as far as it exists.
func resolved(p string) string {
	p, _ = filepath.Abs(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	if dir, base := filepath.Split(p); dir != p && base != "" {
		return filepath.Join(resolved(filepath.Clean(dir)), base)
	}
	return p
}
