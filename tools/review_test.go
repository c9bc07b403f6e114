package tools_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/tools"
)

// Review findings: each case got past the gate before.
func TestGateReview(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{
		".env":          "SECRET=1\n",
		"app/.env":      "SECRET=2\n",
		"app/main.go":   "package main\n",
		"vendor/x.go":   "package x\n",
		".git/config":   "[remote] url = https://tok@host\n",
		"notes/todo.md": "SECRET rotation\n",
	})
	for link, target := range map[string]string{"env.txt": ".env", "dep": "vendor", "repo": ".git"} {
		if err := os.Symlink(target, filepath.Join(ws.Dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	g := tools.NewGate(parsePolicy(t, gatePolicy), tools.WithConfirmer(&confirmer{answer: policy.AnswerYes}),
		tools.WithScope(policy.Scope{Workspace: ws.Dir}))
	v := gateView(t, ws)
	tests := []struct {
		name string
		call tools.Call
		ok   bool
		want string // substring of the output
		not  string // must not appear in the output
	}{
		{"search the root skips denied files", call("search_files", `{"pattern":"SECRET"}`), true, "notes/todo.md:1:", "SECRET=1"},
		{"search a folder skips denied files", call("search_files", `{"pattern":"SECRET","path":"app"}`), true, "no matches", "SECRET=2"},
		{"list skips denied files", call("list_files", `{}`), true, "app/main.go", ".env"},
		{"read through a symlink to a denied file", call("read_file", `{"path":"env.txt"}`), false, `paths.deny`, "SECRET"},
		{"list through a symlink to .git", call("list_files", `{"path":"repo"}`), false, `.git/**`, "config"},
		{"write through a symlinked read-only folder", call("write_file", `{"path":"dep/y.go","content":"package x"}`), false, "read-only", ""},
		{"edit through a symlinked read-only folder", call("edit_file", `{"path":"dep/x.go","old_text":"x","new_text":"y"}`), false, "read-only", ""},
		{"command in a read-only folder", call("run_command", `{"command":"touch x.go","dir":"vendor"}`), false, "read-only", ""},
		{"command in a folder reading a denied file", call("run_command", `{"command":"ls ../.env","dir":"app"}`), false, "paths.deny", ""},
		{"command in a folder, allowed", call("run_command", `{"command":"ls main.go","dir":"app"}`), true, "main.go", ""},
	}
	for _, tt := range tests {
		res, err := g.Call(context.Background(), v, tt.call)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		out := res.ForModel()
		if res.OK != tt.ok || !strings.Contains(out, tt.want) || (tt.not != "" && strings.Contains(out, tt.not)) {
			t.Errorf("%s: ok=%v %s\nwant ok=%v with %q without %q", tt.name, res.OK, out, tt.ok, tt.want, tt.not)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws.Dir, "vendor/x.go")); string(b) != "package x\n" {
		t.Errorf("read-only file changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws.Dir, "vendor/y.go")); err == nil {
		t.Error("file created in a read-only folder")
	}
}

// A model reads results as JSON; <, > and & stay as they are.
func TestForModelNoHTMLEscapes(t *testing.T) {
	t.Parallel()
	out := tools.Result{OK: true, Output: "a <b> && c"}.ForModel()
	if !strings.Contains(out, "a <b> && c") {
		t.Errorf("ForModel = %s", out)
	}
}

// "always" approves one ask rule; a shell line that also needs another ask
// rule is asked again.
func TestGateAlwaysShellLine(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, nil)
	p := parsePolicy(t, `
version: 1
commands:
  ask: ["touch *", "mkdir *"]
  shell: true
`)
	conf := &confirmer{answer: policy.AnswerAlways}
	g := tools.NewGate(p, tools.WithConfirmer(conf), tools.WithScope(policy.Scope{Workspace: ws.Dir}))
	v := gateView(t, ws)
	for i, c := range []struct {
		line  string
		asked int32
	}{
		{"touch a", 1},
		{"touch b", 1},            // approved with always
		{"touch c && mkdir d", 2}, // mkdir * was never approved
		{"touch e; mkdir f", 2},   // the same two rules: approved with always
		{"mkdir g && touch h", 3}, // named in another order: asked again
		{"touch i", 3},            // still approved on its own
	} {
		res, err := g.Call(context.Background(), v, call("run_command", `{"command":"`+c.line+`"}`))
		if err != nil || !res.OK {
			t.Fatalf("%d %q: %v %s", i, c.line, err, res.ForModel())
		}
		if n := conf.calls.Load(); n != c.asked {
			t.Errorf("%q: %d questions so far, want %d", c.line, n, c.asked)
		}
	}
}

// A symlink swapped in between the gate's check and the run does not take
// the call to another file in the workspace.
func TestSymlinkSwappedAfterCheck(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		tool, args string
		swap       string // replaced by a symlink to target after Decode
		target     string
	}{
		{tools.ReadFileName, `{"path":"a.txt"}`, "a.txt", ".env"},
		{tools.ReadFileName, `{"path":"d/a.txt"}`, "d", "secret"},
		{tools.EditFileName, `{"path":"a.txt","old_text":"S","new_text":"x"}`, "a.txt", ".env"},
		{tools.WriteFileName, `{"path":"d/a.txt","content":"x"}`, "d", "vendor"},
		{tools.EditFileName, `{"path":"d/a.txt","old_text":"p","new_text":"x"}`, "d", "vendor"},
		{tools.DeleteFileName, `{"path":"d/a.txt"}`, "d", "vendor"},
		{tools.DeleteFileName, `{"path":"d/a.txt"}`, "d", "secret"},
	} {
		ws := newWorkspace(t, map[string]string{"a.txt": "plain\n", "d/a.txt": "plain\n", ".env": "SECRET\n",
			"secret/a.txt": "SECRET\n", "vendor/a.txt": "package\n"})
		inv, err := builtin(t, ws, tt.tool).Decode([]byte(tt.args))
		if err != nil {
			t.Fatal(err)
		}
		swap := filepath.Join(ws.Dir, tt.swap)
		if err := os.RemoveAll(swap); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(tt.target, swap); err != nil {
			t.Fatal(err)
		}
		res, err := inv.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.OK || strings.Contains(res.Output, "SECRET") || !strings.Contains(res.Output, "changed") {
			t.Errorf("%s %s after swapping %s: %s", tt.tool, tt.args, tt.swap, res.ForModel())
		}
		for _, f := range []string{".env", "secret/a.txt", "vendor/a.txt"} {
			b, _ := os.ReadFile(filepath.Join(ws.Dir, f))
			if !strings.Contains(string(b), "SECRET") && !strings.Contains(string(b), "package") {
				t.Errorf("%s %s: %s changed to %q", tt.tool, tt.args, f, b)
			}
		}
		if _, err := os.Stat(filepath.Join(ws.Dir, "vendor", "a.txt")); err != nil {
			t.Error(err)
		}
	}
}

// write_file onto a symlink that leads out replaces the link; it never
// writes through it.
func TestWriteFileOntoSymlinkOut(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("s3cret"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := newWorkspace(t, nil)
	if err := os.Symlink(outside, filepath.Join(ws.Dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	res, _ := run(t, ws, tools.WriteFileName, obj{"path": "link.txt", "content": "mine"})
	if !res.OK {
		t.Fatalf("write_file: %s", res.ForModel())
	}
	if b, _ := os.ReadFile(outside); string(b) != "s3cret" {
		t.Errorf("outside file = %q", b)
	}
	if st, err := os.Lstat(filepath.Join(ws.Dir, "link.txt")); err != nil || !st.Mode().IsRegular() {
		t.Errorf("link.txt is not a regular file now: %v %v", st, err)
	}
}
