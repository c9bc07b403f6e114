package policy

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

var testScope = Scope{Workspace: "/home/me/proj/out", Aliases: []string{"/workspace"}}

func loadTest(t testing.TB) *Policy {
	t.Helper()
	p, err := Load("testdata/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// shellOn is the test policy with commands.shell turned on.
func shellOn(t testing.TB) *Policy {
	t.Helper()
	data, err := os.ReadFile("testdata/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse("shell.yaml", []byte(strings.Replace(string(data), "shell: false", "shell: true", 1)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckPath(t *testing.T) {
	t.Parallel()
	p := loadTest(t)
	tests := []struct {
		path string
		a    Access
		want Verdict
		rule string
	}{
		{"main.go", Write, Allow, "workspace"},
		{"./cmd/x/main.go", Read, Allow, "workspace"},
		{"", Read, Allow, "workspace"},
		{".", Read, Allow, "workspace"},
		{".git", Read, Deny, `paths.deny: ".git/**"`},
		{".git/config", Read, Deny, `paths.deny: ".git/**"`},
		{"a/../.git/HEAD", Write, Deny, `paths.deny: ".git/**"`},
		{".gitignore", Write, Allow, "workspace"},
		{".env", Read, Deny, `paths.deny: "**/.env"`},
		{"deep/er/.env", Read, Deny, `paths.deny: "**/.env"`},
		{".envrc", Read, Allow, "workspace"},
		{"certs/server.pem", Read, Deny, `paths.deny: "**/*.pem"`},
		{"secrets/token", Read, Deny, `paths.deny: "secrets/*"`},
		{"secrets/sub/token", Read, Allow, "workspace"}, // * is one segment part
		{"vendor/x/y.go", Read, Allow, "workspace"},
		{"vendor/x/y.go", Write, Deny, `paths.read_only: "vendor/**"`},
		{"vendor", Write, Deny, `paths.read_only: "vendor/**"`},
		{"tests/a_test.go", Write, Deny, `paths.read_only: "tests/**/*_test.go"`},
		{"tests/deep/b_test.go", Write, Deny, `paths.read_only: "tests/**/*_test.go"`},
		{"tests/helper.go", Write, Allow, "workspace"},
		{"/etc/passwd", Read, Deny, "path-outside-workspace"},
		{"../x", Read, Deny, "path-outside-workspace"},
		{"a/../../x", Write, Deny, "path-outside-workspace"},
		{"~/x", Read, Deny, "path-outside-workspace"},
		{"..", Read, Deny, "path-outside-workspace"},
	}
	for _, tt := range tests {
		d := p.CheckPath(tt.path, tt.a)
		if d.Verdict != tt.want || !strings.HasPrefix(d.Rule, tt.rule) {
			t.Errorf("CheckPath(%q, %v) = %v %q (%s), want %v %q", tt.path, tt.a, d.Verdict, d.Rule, d.Reason, tt.want, tt.rule)
		}
		if d.Reason == "" {
			t.Errorf("CheckPath(%q): empty reason", tt.path)
		}
	}
}

func TestCheckPathAllowList(t *testing.T) {
	t.Parallel()
	p, err := Parse("allow.yaml", []byte("version: 1\npaths:\n  allow: [\"src/**\", \"*.md\"]\n  deny: [\"src/gen/**\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want Verdict
	}{
		{"src/a.go", Allow}, {"README.md", Allow}, {"docs/x.md", Deny}, {"main.go", Deny}, {"src/gen/x.go", Deny},
	}
	for _, tt := range tests {
		if d := p.CheckPath(tt.path, Write); d.Verdict != tt.want {
			t.Errorf("CheckPath(%q) = %v (%s), want %v", tt.path, d.Verdict, d.Reason, tt.want)
		}
	}
}

func TestCheckPathEmptyAllowList(t *testing.T) {
	t.Parallel()
	p, err := Parse("allow.yaml", []byte("version: 1\npaths:\n  allow: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d := p.CheckPath("main.go", Read); d.Verdict != Deny || d.Rule != "default-deny" {
		t.Errorf("empty paths.allow: main.go = %v %q, want default-deny", d.Verdict, d.Rule)
	}
}

func TestCheckTool(t *testing.T) {
	t.Parallel()
	p := loadTest(t)
	tests := []struct {
		name string
		want Verdict
		rule string
	}{
		{"shell_exec", Deny, `tools.deny: "shell_*"`},
		{"deploy", Ask, `tools.ask: "deploy"`},
		{"read_file", Allow, `tools.allow: "read_file"`},
		{"write_file", Allow, "tools-default-allow"},
	}
	for _, tt := range tests {
		d := p.CheckTool(tt.name)
		if d.Verdict != tt.want || !strings.HasPrefix(d.Rule, tt.rule) {
			t.Errorf("CheckTool(%q) = %v %q, want %v %q", tt.name, d.Verdict, d.Rule, tt.want, tt.rule)
		}
	}
}

func TestWithCopies(t *testing.T) {
	t.Parallel()
	p := loadTest(t)
	ro := p.WithReadOnly("tests/**", "[bad")
	if d := ro.CheckPath("tests/x.go", Write); d.Verdict != Deny || !strings.Contains(d.Rule, "read_only (added)") {
		t.Errorf("WithReadOnly: tests/x.go write = %v %q", d.Verdict, d.Rule)
	}
	// A bad glob makes the whole workspace read-only, never weaker.
	if d := ro.CheckPath("main.go", Write); d.Verdict != Deny {
		t.Errorf("WithReadOnly with a bad glob: main.go write = %v, want deny", d.Verdict)
	}
	if d := ro.CheckPath("main.go", Read); d.Verdict != Allow {
		t.Errorf("WithReadOnly: main.go read = %v, want allow", d.Verdict)
	}
	if d := p.CheckPath("tests/x.go", Write); d.Verdict != Allow {
		t.Errorf("original changed by WithReadOnly: %v", d.Verdict)
	}
	u := p.WithUnattended()
	if !u.Unattended() || p.Unattended() {
		t.Errorf("WithUnattended: copy %v, original %v", u.Unattended(), p.Unattended())
	}
	// Unattended does not change verdicts; the gate turns Ask into Deny.
	if d := u.CheckCommand(Command{Argv: []string{"go", "get", "x"}}, testScope); d.Verdict != Ask {
		t.Errorf("unattended go get = %v, want ask", d.Verdict)
	}
	dot := p.WithReadOnly("./gen/**/")
	if d := dot.CheckPath("gen/a.go", Write); d.Verdict != Deny {
		t.Errorf("WithReadOnly(./gen/**/): gen/a.go write = %v", d.Verdict)
	}
	if d := dot.CheckPath("main.go", Write); d.Verdict != Allow {
		t.Errorf("WithReadOnly(./gen/**/): main.go write = %v", d.Verdict)
	}
	for _, bad := range []string{"/abs/**", "../x/**", ""} {
		if d := p.WithReadOnly(bad).CheckPath("main.go", Write); d.Verdict != Deny {
			t.Errorf("WithReadOnly(%q): main.go write = %v, want deny (never weaker)", bad, d.Verdict)
		}
	}
	dirs := p.ReadOnlyDirs()
	dirs[0] = "/"
	if p.ReadOnlyDirs()[0] == "/" {
		t.Error("ReadOnlyDirs exposes the policy's slice")
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	p := loadTest(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := p.WithReadOnly("x/**")
			for range 50 {
				p.CheckCommand(Command{Line: "go test ./... | tail", Shell: true}, testScope)
				q.CheckCommand(Command{Argv: []string{"find", ".", "-exec", "rm", "{}", ";"}}, testScope)
				q.CheckPath("x/y", Access(i%2))
				p.CheckTool("deploy")
			}
		}()
	}
	wg.Wait()
}

func TestAccessors(t *testing.T) {
	t.Parallel()
	p := loadTest(t)
	if p.Workspace() != "./out" || p.Shell() || p.Unattended() {
		t.Errorf("workspace %q shell %v unattended %v", p.Workspace(), p.Shell(), p.Unattended())
	}
	want := Limits{Timeout: 120 * time.Second, Memory: 1 << 30, Pids: 256, Output: 64 << 10, Disk: 4 << 30, File: 4 << 20}
	if p.Limits() != want {
		t.Errorf("Limits() = %+v, want defaults %+v", p.Limits(), want)
	}
	if p.ConfirmTimeout() != 5*time.Minute {
		t.Errorf("ConfirmTimeout() = %v", p.ConfirmTimeout())
	}
	if p.Name() != "testdata/rules.yaml" {
		t.Errorf("Name() = %q", p.Name())
	}
}

func TestDefault(t *testing.T) {
	t.Parallel()
	p := Default()
	if p != Default() {
		t.Error("Default() builds a new policy each call")
	}
	if p.Shell() || p.Limits().Network || p.Unattended() {
		t.Errorf("Default is not strict: shell %v network %v", p.Shell(), p.Limits().Network)
	}
	for _, tt := range []struct {
		argv []string
		want Verdict
	}{
		{[]string{"go", "test", "./..."}, Allow},
		{[]string{"python3", "-m", "pytest", "-q"}, Allow},
		{[]string{"rm", "-rf", "x"}, Deny},
		{[]string{"curl", "example.com"}, Deny},
		{[]string{"go", "test", "-exec=/tmp/x", "./..."}, Deny},
	} {
		if d := p.CheckCommand(Command{Argv: tt.argv}, testScope); d.Verdict != tt.want {
			t.Errorf("Default %v = %v (%s), want %v", tt.argv, d.Verdict, d.Reason, tt.want)
		}
	}
	if d := p.CheckPath(".git/config", Read); d.Verdict != Deny {
		t.Errorf("Default allows .git/config")
	}
}
