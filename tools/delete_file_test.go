package tools_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/tools"
)

func TestDeleteFile(t *testing.T) {
	t.Parallel()
	files := map[string]string{"a.txt": "a", "dir/x.txt": "x", "dir/sub/y.txt": "y", "keep.txt": "k", "vendor/v.go": "v"}
	tests := []struct {
		name    string
		args    obj
		ok      bool
		want    string   // substring of the output
		effect  string   // the write effect's path; "" = no decode
		gone    []string // must not exist afterwards
		present []string // must still exist afterwards
	}{
		{"file", obj{"path": "a.txt"}, true, "deleted file a.txt", "a.txt", []string{"a.txt"}, []string{"keep.txt"}},
		{"absolute path inside", obj{"path": "@/a.txt"}, true, "deleted file a.txt", "a.txt", []string{"a.txt"}, nil},
		{"empty folder", obj{"path": "empty"}, true, "deleted empty folder empty", "empty", []string{"empty"}, nil},
		{"folder without recursive", obj{"path": "dir"}, false, "not empty; set recursive", "dir", nil, []string{"dir/x.txt", "dir/sub/y.txt"}},
		{"folder with recursive", obj{"path": "dir/", "recursive": true}, true, "deleted folder dir (4 entries)", "dir", []string{"dir"}, []string{"keep.txt"}},
		{"missing", obj{"path": "nope.txt"}, false, "nope.txt: no such file", "nope.txt", nil, nil},
		{"under a file", obj{"path": "a.txt/x"}, false, "not a directory", "a.txt/x", nil, []string{"a.txt"}},
		{"workspace root", obj{"path": "."}, false, `argument "path": names the workspace root`, "", nil, []string{"a.txt"}},
		{"workspace root cleaned", obj{"path": "dir/.."}, false, `argument "path": names the workspace root`, "", nil, []string{"a.txt"}},
		{"workspace root absolute", obj{"path": "@"}, false, `argument "path": names the workspace root`, "", nil, []string{"a.txt"}},
		{"climbs out", obj{"path": "../x"}, false, "leads outside the workspace", "", nil, nil},
		{"symlink to a file is removed itself", obj{"path": "ln.txt"}, true, "deleted symlink ln.txt", "ln.txt", []string{"ln.txt"}, []string{"keep.txt"}},
		{"file under a symlinked folder is judged where it is", obj{"path": "dep/v.go"}, true, "deleted file vendor/v.go", "vendor/v.go", []string{"vendor/v.go"}, []string{"dep"}},
		{"symlinked folder is removed itself", obj{"path": "dep", "recursive": true}, true, "deleted symlink dep", "dep", []string{"dep"}, []string{"vendor/v.go"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := newWorkspace(t, files)
			if err := os.Mkdir(filepath.Join(ws.Dir, "empty"), 0o755); err != nil {
				t.Fatal(err)
			}
			for link, target := range map[string]string{"ln.txt": "keep.txt", "dep": "vendor"} {
				if err := os.Symlink(target, filepath.Join(ws.Dir, link)); err != nil {
					t.Fatal(err)
				}
			}
			args := obj{}
			for k, v := range tt.args {
				if s, ok := v.(string); ok && strings.HasPrefix(s, "@") {
					v = ws.Dir + s[1:]
				}
				args[k] = v
			}
			res, eff := run(t, ws, tools.DeleteFileName, args)
			if res.OK != tt.ok || !strings.Contains(res.Output, tt.want) {
				t.Errorf("delete_file(%v) = ok=%v %q, want ok=%v with %q", tt.args, res.OK, res.Output, tt.ok, tt.want)
			}
			if tt.effect != "" && (len(eff) != 1 || eff[0].Kind != tools.EffectWrite || eff[0].Path != tt.effect) {
				t.Errorf("effects = %+v, want one write of %s", eff, tt.effect)
			}
			for _, f := range tt.gone {
				if _, err := os.Lstat(filepath.Join(ws.Dir, f)); !os.IsNotExist(err) {
					t.Errorf("%s still exists (%v)", f, err)
				}
			}
			for _, f := range tt.present {
				if _, err := os.Lstat(filepath.Join(ws.Dir, f)); err != nil {
					t.Errorf("%s is gone: %v", f, err)
				}
			}
		})
	}
}

// delete_file through the gate: read-only and denied paths are protected,
// also inside a folder deleted with recursive; symlinks that lead out are
// removed themselves or refused, never followed.
func TestDeleteFileGate(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		args        string
		ok, denied  bool
		want        string
		gone, there []string
	}{
		{"read-only glob", `{"path":"acceptance/test_cli.py"}`, false, true, "read-only", nil, []string{"acceptance/test_cli.py"}},
		{"read-only folder", `{"path":"acceptance","recursive":true}`, false, true, "read-only", nil, []string{"acceptance/test_cli.py"}},
		{"denied path", `{"path":"app/.env"}`, false, true, "paths.deny", nil, []string{"app/.env"}},
		{"denied path inside a folder", `{"path":"app","recursive":true}`, false, true, "nothing was deleted: app/.env is protected", nil, []string{"app/.env", "app/main.py"}},
		{"read-only inside a folder", `{"path":"tests","recursive":true}`, false, true, "nothing was deleted: tests/acceptance is protected", nil, []string{"tests/unit.py", "tests/acceptance/t.py"}},
		{"symlink to a read-only file", `{"path":"ro.py"}`, true, false, "deleted symlink ro.py", []string{"ro.py"}, []string{"acceptance/test_cli.py"}},
		{"through a symlink into a read-only folder", `{"path":"acc/test_cli.py"}`, false, true, "read-only", nil, []string{"acceptance/test_cli.py"}},
		{"symlink pointing out", `{"path":"out.txt"}`, true, false, "deleted symlink out.txt", []string{"out.txt"}, nil},
		{"through a symlinked folder pointing out", `{"path":"outdir/secret.txt"}`, false, false, "refused: the path leads outside the workspace", nil, []string{"outdir"}},
		{"stray file", `{"path":"stray.log"}`, true, false, "deleted file stray.log", []string{"stray.log"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := newWorkspace(t, map[string]string{"acceptance/test_cli.py": "def test(): pass\n",
				"app/main.py": "print(1)\n", "app/.env": "K=V\n", "tests/unit.py": "\n", "tests/acceptance/t.py": "\n", "stray.log": "x"})
			for link, target := range map[string]string{"ro.py": "acceptance/test_cli.py", "acc": "acceptance", "out.txt": secret, "outdir": outside} {
				if err := os.Symlink(target, filepath.Join(ws.Dir, link)); err != nil {
					t.Fatal(err)
				}
			}
			p := parsePolicy(t, gatePolicy).WithReadOnly("acceptance/**", "tests/acceptance/**")
			rec := &recorder{}
			g := tools.NewGate(p, tools.WithObserver(rec), tools.WithScope(policy.Scope{Workspace: ws.Dir}))
			res, err := g.Call(context.Background(), gateView(t, ws), call(tools.DeleteFileName, tt.args))
			if err != nil {
				t.Fatal(err)
			}
			if res.OK != tt.ok || res.Denied != tt.denied || !strings.Contains(res.Output, tt.want) {
				t.Errorf("ok=%v denied=%v %s\nwant ok=%v denied=%v with %q", res.OK, res.Denied, res.Output, tt.ok, tt.denied, tt.want)
			}
			if recs := rec.take(); len(recs) != 1 {
				t.Errorf("%d records, want 1", len(recs))
			}
			for _, f := range tt.gone {
				if _, err := os.Lstat(filepath.Join(ws.Dir, f)); !os.IsNotExist(err) {
					t.Errorf("%s still exists (%v)", f, err)
				}
			}
			for _, f := range tt.there {
				if _, err := os.Lstat(filepath.Join(ws.Dir, f)); err != nil {
					t.Errorf("%s is gone: %v", f, err)
				}
			}
			if b, err := os.ReadFile(secret); err != nil || string(b) != "s3cret" {
				t.Errorf("file outside the workspace: %q %v", b, err)
			}
		})
	}
}

// refusingSandbox refuses every command as a sandbox does when the working
// folder leads out of the workspace.
type refusingSandbox struct{ err error }

func (s refusingSandbox) Exec(context.Context, sandbox.Command) (sandbox.Result, error) {
	return sandbox.Result{}, fmt.Errorf("test sandbox: %w", s.err)
}
func (refusingSandbox) Info() sandbox.Info { return sandbox.Info{Kind: "test"} }
func (refusingSandbox) Close() error       { return nil }

// A sandbox's refusal of the command itself is the model's to fix; any
// other sandbox failure is an infrastructure error.
func TestRunCommandSandboxRefusal(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		tool, args string
		err        error
		want       string // "" = infrastructure error
	}{
		{tools.RunCommandName, `{"command":"ls","dir":"sub"}`, sandbox.ErrOutsideWorkspace, `dir: "sub" leads outside the workspace`},
		{tools.RunTestsName, `{"command":"go test ./..."}`, sandbox.ErrOutsideWorkspace, "leads outside the workspace"},
		{tools.RunCommandName, `{"command":"'' x"}`, sandbox.ErrEmptyCommand, "command: the program name is empty"},
		{tools.RunCommandName, `{"command":"ls"}`, errors.New("containerd gone"), ""},
	} {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		ws, err := tools.OpenWorkspace(dir, refusingSandbox{tt.err}, sandbox.Limits{Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
		inv, err := builtin(t, ws, tt.tool).Decode([]byte(tt.args))
		if err != nil {
			t.Fatal(err)
		}
		res, err := inv.Run(context.Background())
		switch {
		case tt.want == "" && (err == nil || !errors.Is(err, tt.err)):
			t.Errorf("%s %s: err = %v, want the sandbox's error", tt.tool, tt.args, err)
		case tt.want != "" && (err != nil || res.OK || !strings.Contains(res.Output, tt.want)):
			t.Errorf("%s %s: %v %s, want an error result with %q", tt.tool, tt.args, err, res.ForModel(), tt.want)
		}
	}
	// The local sandbox refuses an empty program name; it reaches the model.
	ws := newWorkspace(t, nil)
	res, _ := run(t, ws, tools.RunCommandName, obj{"command": "'' x"})
	if res.OK || !strings.Contains(res.Output, "program name is empty") {
		t.Errorf("empty program: %s", res.ForModel())
	}
}
