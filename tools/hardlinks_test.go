package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/tools"
)

// canary is what every protected file holds; no tool result may show it.
const canary = "TRIO-CANARY-5f0c1e"

// protected are the files a hard link must not reach, each holding the
// canary: three denied by the shipped unattended policy and one outside the
// workspace ({out}).
var protected = []string{".env", ".git/config", ".git/objects/ab/cdef", "keys/server.pem", "{out}/secret"}

// hardLinkWorkspace is adversarialWorkspace with the canary in protected
// files and second names made for them as code run in the sandbox would:
//
//	notes.txt     = .env                 (paths.deny "**/.env")
//	app/cfg       = .git/config          (inside the denied .git/**)
//	blob          = .git/objects/ab/cdef (deep inside .git/**)
//	keys/copy.txt = keys/server.pem      ("**/*.pem")
//	outside.txt   = {out}/secret         (a name outside the workspace)
//	lnk           -> notes.txt           (a symlink to a second name)
//	twins/a.txt   = twins/b.txt          (both allowed)
//	lib_copy.go   = vendor/lib.go        (read-only, so readable)
func hardLinkWorkspace(t *testing.T) (*tools.Workspace, string) {
	t.Helper()
	ws, _ := adversarialWorkspace(t)
	out := ws.Dir + "-outside"
	t.Cleanup(func() { os.RemoveAll(out) })
	abs := func(name string) string {
		if rest, ok := strings.CutPrefix(name, "{out}/"); ok {
			return filepath.Join(out, rest)
		}
		return filepath.Join(ws.Dir, filepath.FromSlash(name))
	}
	write := func(name, content string) {
		if err := os.MkdirAll(filepath.Dir(abs(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs(name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range protected {
		write(name, "KEY="+canary+"\n")
	}
	write("twins/a.txt", "twin\n")
	write("vendor/lib.go", "package lib\n")
	for link, target := range map[string]string{
		"notes.txt":     ".env",
		"app/cfg":       ".git/config",
		"blob":          ".git/objects/ab/cdef",
		"keys/copy.txt": "keys/server.pem",
		"outside.txt":   "{out}/secret",
		"twins/b.txt":   "twins/a.txt",
		"lib_copy.go":   "vendor/lib.go",
	} {
		if err := os.Link(abs(target), abs(link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("notes.txt", abs("lnk")); err != nil {
		t.Fatal(err)
	}
	return ws, out
}

// TestHardLinks: a second name of a denied file, or a file with names
// outside the workspace, shows nothing of its content through any file
// tool, under the shipped unattended policy and through the gate; writing
// or deleting such a name leaves the shared content alone; hard links among
// allowed files keep working.
func TestHardLinks(t *testing.T) {
	t.Parallel()
	const (
		rf, ef, sf, lf = tools.ReadFileName, tools.EditFileName, tools.SearchFilesName, tools.ListFilesName
		wf, df         = tools.WriteFileName, tools.DeleteFileName
		env            = `paths.deny: "**/.env"`
		git            = `paths.deny: ".git/**"`
		pem            = `paths.deny: "**/*.pem"`
		outsideMsg     = "only 1 of them were found in the workspace"
	)
	tests := []struct {
		name, tool, args string
		want             string   // wantDenied, wantRefused or wantAllowed
		has              []string // substrings of the result
		lacks            []string // substrings the result must not hold
		after            map[string]string
	}{
		{"read a link to .env", rf, `{"path":"notes.txt"}`, wantDenied, []string{"notes.txt", "hard link to .env", env}, nil, nil},
		{"read a link into .git", rf, `{"path":"app/cfg"}`, wantDenied, []string{"app/cfg", ".git/config", git}, nil, nil},
		{"read a link deep in .git", rf, `{"path":"blob"}`, wantDenied, []string{".git/objects/ab/cdef", git}, nil, nil},
		{"read a link to a key", rf, `{"path":"keys/copy.txt"}`, wantDenied, []string{"keys/server.pem", pem}, nil, nil},
		{"read through a symlink to a link", rf, `{"path":"lnk"}`, wantDenied, []string{"notes.txt", env}, nil, nil},
		{"read by absolute path", rf, `{"path":"{ws}/notes.txt"}`, wantDenied, []string{env}, nil, nil},
		{"read a link to a file outside", rf, `{"path":"outside.txt"}`, wantRefused, []string{"outside.txt", "2 names", outsideMsg}, nil, nil},
		{"edit probes a link to .env", ef, `{"path":"notes.txt","old_text":"KEY=","new_text":"x"}`, wantDenied, []string{env}, []string{"replaced", "not found"}, nil},
		{"edit a link to a file outside", ef, `{"path":"outside.txt","old_text":"KEY=","new_text":"x"}`, wantRefused, []string{outsideMsg}, nil, nil},
		{"search a link to .env", sf, `{"pattern":"KEY","path":"notes.txt"}`, wantDenied, []string{env}, nil, nil},
		{"search a link to a file outside", sf, `{"pattern":"KEY","path":"outside.txt"}`, wantRefused, []string{outsideMsg}, nil, nil},
		{"search the workspace", sf, `{"pattern":"KEY"}`, wantAllowed, []string{"no matches", "skipped 5 files with more than one name"}, nil, nil},
		{"search a folder", sf, `{"pattern":".","path":"keys"}`, wantAllowed, []string{"skipped 1 files"}, []string{"copy.txt:"}, nil},
		{"list the workspace", lf, `{}`, wantAllowed, []string{"outside.txt", "twins/a.txt", "twins/b.txt", "lib_copy.go"},
			[]string{"notes.txt", "app/cfg", "blob", "keys/copy.txt"}, nil},
		{"read one of two allowed twins", rf, `{"path":"twins/b.txt"}`, wantAllowed, []string{"twin"}, nil, nil},
		{"read a link to a read-only file", rf, `{"path":"lib_copy.go"}`, wantAllowed, []string{"package lib"}, nil, nil},
		{"search allowed twins", sf, `{"pattern":"twin","path":"twins"}`, wantAllowed, []string{"twins/a.txt:1: twin", "twins/b.txt:1: twin"}, []string{"skipped"}, nil},
		{"write over a link to .env", wf, `{"path":"notes.txt","content":"mine\n"}`, wantAllowed, []string{"replaced notes.txt"}, nil,
			map[string]string{"notes.txt": "mine\n"}},
		{"edit a link to a read-only file", ef, `{"path":"lib_copy.go","old_text":"lib","new_text":"mine"}`, wantAllowed, nil, nil,
			map[string]string{"lib_copy.go": "package mine\n", "vendor/lib.go": "package lib\n"}},
		{"delete a link to .env", df, `{"path":"notes.txt"}`, wantAllowed, []string{"deleted file notes.txt"}, nil, nil},
		{"delete a folder holding a link into .git", df, `{"path":"app","recursive":true}`, wantAllowed, []string{"deleted folder app"}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws, out := hardLinkWorkspace(t)
			reg, err := tools.NewRegistry(tools.Builtins(ws)...)
			if err != nil {
				t.Fatal(err)
			}
			view, err := reg.View()
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var rec tools.Record
			g := tools.NewGate(shippedPolicy(t), tools.WithScope(policy.Scope{Workspace: ws.Dir}),
				tools.WithObserver(tools.ObserverFunc(func(r tools.Record) { mu.Lock(); rec = r; mu.Unlock() })))
			args := strings.ReplaceAll(tt.args, "{ws}", ws.Dir)
			res, err := g.Call(context.Background(), view, tools.Call{ID: "hl", Name: tt.tool, Arguments: json.RawMessage(args)})
			if err != nil {
				t.Fatalf("Go error %v, want a result", err)
			}
			text := res.Output + res.Stdout + res.Stderr
			if strings.Contains(text, canary) || strings.Contains(res.ForModel(), canary) {
				t.Fatalf("the canary is in the result:\n%s", text)
			}
			mu.Lock()
			defer mu.Unlock()
			switch tt.want {
			case wantDenied:
				if res.OK || !res.Denied {
					t.Errorf("want denied, got ok=%v denied=%v: %s", res.OK, res.Denied, text)
				}
			case wantRefused:
				if res.OK || res.Denied {
					t.Errorf("want refused (an error, not a policy denial), got ok=%v denied=%v: %s", res.OK, res.Denied, text)
				}
			case wantAllowed:
				if !res.OK {
					t.Errorf("want allowed, got: %s", text)
				}
			}
			if tt.want != wantAllowed && rec.Outcome != tools.OutcomeError {
				t.Errorf("record outcome %s, want %s (the tool ran and refused)", rec.Outcome, tools.OutcomeError)
			}
			for _, s := range tt.has {
				if !strings.Contains(text, s) {
					t.Errorf("result lacks %q:\n%s", s, text)
				}
			}
			for _, s := range tt.lacks {
				if strings.Contains(text, s) {
					t.Errorf("result holds %q:\n%s", s, text)
				}
			}
			for _, name := range protected {
				p := filepath.Join(ws.Dir, filepath.FromSlash(name))
				if rest, ok := strings.CutPrefix(name, "{out}/"); ok {
					p = filepath.Join(out, rest)
				}
				if b, err := os.ReadFile(p); err != nil || string(b) != "KEY="+canary+"\n" {
					t.Errorf("%s changed: %q %v", name, b, err)
				}
			}
			for name, want := range tt.after {
				if b, err := os.ReadFile(filepath.Join(ws.Dir, name)); err != nil || string(b) != want {
					t.Errorf("%s = %q %v, want %q", name, b, err, want)
				}
			}
		})
	}
}

// TestHardLinksAgreeWithLayout: the file tools refuse every file that
// sandbox.PlanLayout hides from commands under the same policy, so a path
// rule means the same to both, second names of denied files included.
func TestHardLinksAgreeWithLayout(t *testing.T) {
	t.Parallel()
	ws, _ := hardLinkWorkspace(t)
	p := shippedPolicy(t)
	rules := func(rel string) sandbox.Access {
		switch {
		case p.CheckPath(rel, policy.Read).Verdict != policy.Allow:
			return sandbox.Hidden
		case p.CheckPath(rel, policy.Write).Verdict != policy.Allow:
			return sandbox.ReadOnly
		}
		return sandbox.Writable
	}
	layout, err := sandbox.PlanLayout(ws.Dir, rules)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tools.NewRegistry(tools.Builtins(ws)...)
	if err != nil {
		t.Fatal(err)
	}
	view, err := reg.View()
	if err != nil {
		t.Fatal(err)
	}
	g := tools.NewGate(p, tools.WithScope(policy.Scope{Workspace: ws.Dir}))
	var files []string
	for _, e := range layout.Hidden {
		if !e.Dir {
			files = append(files, e.Path)
		}
	}
	// The layout must see the second names, or this test proves nothing.
	for _, want := range []string{"notes.txt", "app/cfg", "keys/copy.txt"} {
		if !strings.Contains(strings.Join(files, "\n")+"\n", want+"\n") {
			t.Fatalf("PlanLayout does not hide %s: %v", want, files)
		}
	}
	for _, f := range files {
		b, _ := json.Marshal(map[string]string{"path": f})
		res, err := g.Call(context.Background(), view, tools.Call{ID: "l", Name: tools.ReadFileName, Arguments: b})
		if err != nil || res.OK || !res.Denied || strings.Contains(res.ForModel(), canary) {
			t.Errorf("read_file %s, hidden from commands: ok=%v denied=%v err=%v: %s", f, res.OK, res.Denied, err, res.ForModel())
		}
	}
}

// TestHardLinksWithoutGate: an embedder that runs the file tools without a
// gate but hides paths with Workspace.Visible gets the same refusals.
func TestHardLinksWithoutGate(t *testing.T) {
	t.Parallel()
	ws, _ := hardLinkWorkspace(t)
	ws.Visible = tools.PolicyVisible(shippedPolicy(t))
	for _, tt := range []struct {
		tool string
		args obj
		want string
	}{
		{tools.ReadFileName, obj{"path": "notes.txt"}, "hard link to .env"},
		{tools.ReadFileName, obj{"path": "outside.txt"}, "only 1 of them were found"},
		{tools.EditFileName, obj{"path": "app/cfg", "old_text": "KEY", "new_text": "x"}, "hard link to .git/config"},
		{tools.SearchFilesName, obj{"pattern": "KEY"}, "skipped 5 files"},
	} {
		res, _ := run(t, ws, tt.tool, tt.args)
		if strings.Contains(res.Output, canary) || !strings.Contains(res.Output, tt.want) {
			t.Errorf("%s %v: want %q and no canary, got ok=%v: %s", tt.tool, tt.args, tt.want, res.OK, res.Output)
		}
	}
	if res, _ := run(t, ws, tools.ListFilesName, obj{}); strings.Contains(res.Output, "notes.txt") || !strings.Contains(res.Output, "twins/b.txt") {
		t.Errorf("list_files: %s", res.Output)
	}
}
