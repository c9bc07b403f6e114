package policy

import (
	"path"
	"strings"
	"testing"
)

// fakeLinks is a workspace with symlinks, as a map from link path to
// target (workspace-relative, or absolute when it leads out).
type fakeLinks map[string]string

func (f fakeLinks) Resolve(rel string) (string, bool) {
	for hops := 0; hops < 40; hops++ {
		changed := false
		parts := strings.Split(rel, "/")
		for i := range parts {
			prefix := path.Join(parts[:i+1]...)
			t, ok := f[prefix]
			if !ok {
				continue
			}
			if t == "" {
				return "", false // a loop
			}
			rest := path.Join(parts[i+1:]...)
			if strings.HasPrefix(t, "/") {
				return path.Join(t, rest), true
			}
			rel, changed = path.Join(t, rest), true
			break
		}
		if !changed {
			return rel, true
		}
	}
	return "", false
}

// Glob matches every link name against the pattern's first segment.
func (f fakeLinks) Glob(pattern string) ([]string, bool) {
	first, rest, _ := strings.Cut(pattern, "/")
	var out []string
	for name := range f {
		if ok, _ := path.Match(first, name); ok && !strings.Contains(name, "/") {
			t, ok := f.Resolve(path.Join(name, rest))
			if !ok {
				return nil, false
			}
			out = append(out, t)
		}
	}
	return out, true
}

// TestCheckCommandLinks: with Scope.Links, path arguments are judged by
// what they reach through symlinks as well as by their text.
func TestCheckCommandLinks(t *testing.T) {
	t.Parallel()
	p, err := Parse("links.yaml", []byte(`version: 1
paths:
  deny: [".git/**", "**/.env"]
  read_only: ["vendor/**"]
commands:
  allow: ["cat *", "ls *", "touch *", "rm *", "cp *", "go test *", "env *", "echo *", "./** *"]
  shell: true
  read_only_dirs: ["/usr"]
`))
	if err != nil {
		t.Fatal(err)
	}
	links := fakeLinks{
		"etc": "/etc", "chain": "hop", "hop": "/etc", "envlnk": ".env", "repo": ".git",
		"dep": "vendor", "src": "app", "inc": "/usr/include", "loop": "",
	}
	tests := []struct {
		line, dir string
		want      Verdict
		reason    string // substring of the reason
	}{
		{line: "cat etc/passwd", reason: `"etc/passwd" leads through a symlink to "/etc/passwd"`},
		{line: "ls chain/", reason: `leads through a symlink to "/etc"`},
		{line: "cat envlnk", reason: `names ".env" (through a symlink)`},
		{line: "cat repo/config", reason: `".git/config" (through a symlink)`},
		{line: "touch dep/x.go", reason: `(through a symlink to "vendor/x.go")`},
		{line: "rm -r dep", reason: `paths.read_only "vendor/**"`},
		{line: "cp main.go dep/", reason: `paths.read_only "vendor/**"`},
		{line: "touch inc/x.h", reason: `leads through a symlink to "/usr/include/x.h"`},
		{line: "cat loop/x", reason: "cannot be followed"},
		{line: "cd etc && cat passwd", reason: `"etc" leads through a symlink`},
		{line: "cd src && cat ../envlnk", reason: `"../envlnk" is outside the workspace`},
		{line: "echo x > dep/a.go", reason: `paths.read_only "vendor/**"`},
		{line: "cat < etc/shadow", reason: `leads through a symlink to "/etc/shadow"`},
		{line: "cat et*/passwd", reason: `matches a symlink that leads to "/etc/passwd"`},
		{line: "cat env*", reason: `matches a symlink to ".env"`},
		{line: "rm in*/x.h", reason: "outside the workspace"},
		{line: "env -C etc cat passwd", reason: `"etc" leads through a symlink`},
		{line: "cat lo*", reason: "cannot be followed"},
		{line: "cat --file=etc/passwd", reason: "leads through a symlink"},
		{line: "ls", dir: "etc", reason: `working folder "etc" leads outside the workspace`},
		{line: "rm /usr/lib/*", reason: "outside the workspace"},
		{line: "./inc/tool --help", reason: `program "./inc/tool" leads through a symlink to "/usr/include/tool"`},

		{line: "cat dep/a.go", want: Allow},
		{line: "ls dep", want: Allow},
		{line: "cat inc/stdio.h", want: Allow},
		{line: "cat src/main.go", want: Allow},
		{line: "touch src/new.go", want: Allow},
		{line: "cd src && cat main.go", want: Allow},
		{line: "env -C src ls", want: Allow},
		{line: "cat main.go etc.go", want: Allow},
		{line: "go test ./...", want: Allow},
		{line: "ls", dir: "src", want: Allow},
		{line: "./src/tool --help", want: Allow},
	}
	for _, tt := range tests {
		cmd, err := ParseCommand(tt.line)
		if err != nil {
			t.Fatalf("%s: %v", tt.line, err)
		}
		d := p.CheckCommand(cmd, Scope{Workspace: "/ws", Dir: tt.dir, Links: links})
		if d.Verdict != tt.want || !strings.Contains(d.Reason, tt.reason) {
			t.Errorf("%s (dir %q): got %s %s: %s; want %s with %q", tt.line, tt.dir, d.Verdict, d.Rule, d.Reason, tt.want, tt.reason)
		}
		if tt.want == Deny && tt.dir == "" {
			// Without Links, the same line is judged by its text alone.
			if asWritten := p.CheckCommand(cmd, Scope{Workspace: "/ws"}); strings.Contains(asWritten.Reason, "symlink") {
				t.Errorf("%s without Links: %s", tt.line, asWritten.Reason)
			}
		}
	}
}

// systemLinks adds where absolute paths under read-only folders lead.
type systemLinks struct {
	fakeLinks
	abs map[string]string
}

func (s systemLinks) ResolveSystem(abs string) (string, bool) {
	for from, to := range s.abs {
		if within(abs, from) {
			return path.Join(to, strings.TrimPrefix(abs, from)), true
		}
	}
	return abs, true
}

// TestSystemLinks: with a Links that also answers for read-only folders,
// a path there is judged where it leads, not by its text.
func TestSystemLinks(t *testing.T) {
	t.Parallel()
	p, err := Parse("sys.yaml", []byte(`version: 1
paths:
  deny: ["**/.env"]
commands:
  allow: ["cat *", "python3 *"]
  read_only_dirs: ["/usr"]
`))
	if err != nil {
		t.Fatal(err)
	}
	links := systemLinks{fakeLinks: fakeLinks{}, abs: map[string]string{
		"/usr/lib/evil": "/tmp/evil", "/usr/share/secret": "/ws/.env", "/usr/lib/ok": "/usr/lib/python3",
	}}
	for _, tt := range []struct {
		line string
		want Verdict
		why  string
	}{
		{"cat /usr/lib/evil/x", Deny, `leads through a symlink to "/tmp/evil/x"`},
		{"cat /usr/share/secret", Deny, `paths.deny "**/.env"`},
		{"python3 /usr/lib/evil/x.py", Deny, "outside the workspace"},
		{"cat /usr/lib/ok/os.py", Allow, ""},
		{"cat /usr/include/stdio.h", Allow, ""},
	} {
		cmd, _ := ParseCommand(tt.line)
		d := p.CheckCommand(cmd, Scope{Workspace: "/ws", Links: links})
		if d.Verdict != tt.want || !strings.Contains(d.Reason, tt.why) {
			t.Errorf("%s: %v %s: %s; want %v with %q", tt.line, d.Verdict, d.Rule, d.Reason, tt.want, tt.why)
		}
	}
}
