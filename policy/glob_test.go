package policy

import (
	"strings"
	"testing"
)

func TestWordGlob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pat, s string
		want   bool
	}{
		{"go", "go", true},
		{"go", "gofmt", false},
		{"--force*", "--force", true},
		{"--force*", "--force-with-lease", true},
		{"*.py", "main.py", true},
		{"*.py", "src/main.py", false}, // * does not cross /
		{"**.py", "src/deep/main.py", true},
		{"-exec**", "-exec=/tmp/x", true},
		{"file?.go", "file1.go", true},
		{"file?.go", "file/.go", false},
		{"[abc].go", "b.go", true},
		{"[!abc].go", "b.go", false},
		{"[^abc].go", "d.go", true},
		{"[a-c]x", "bx", true},
		{"[a-c]x", "dx", false},
		{`\*`, "*", true},
		{`\*`, "x", false},
		{`a\ b`, "a b", true},
		{"[]]x", "]x", true},
		{"a.b", "axb", false}, // regexp metacharacters are literal
		{"(x)", "(x)", true},
		{"$HOME", "$HOME", true},
	}
	for _, tt := range tests {
		g, err := compileWordGlob(tt.pat)
		if err != nil {
			t.Errorf("compileWordGlob(%q): %v", tt.pat, err)
			continue
		}
		if got := g.match(tt.s); got != tt.want {
			t.Errorf("%q match %q = %v, want %v", tt.pat, tt.s, got, tt.want)
		}
	}
	for _, bad := range []string{"[abc", `x\`, "[", "[a/b]", `[\`} {
		if _, err := compileWordGlob(bad); err == nil {
			t.Errorf("compileWordGlob(%q) accepted a malformed glob", bad)
		}
	}
}

func TestPathGlob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pat, s string
		want   bool
	}{
		{".git/**", ".git", true},
		{".git/**", ".git/objects/ab/cd", true},
		{".git/**", ".gitignore", false},
		{".git/**", "sub/.git/config", false},
		{"**/.git/**", "sub/.git/config", true},
		{"**/.env", ".env", true},
		{"**/.env", "a/b/.env", true},
		{"**/.env", "a/b/x.env", false},
		{"**/*.pem", "k.pem", true},
		{"**/*.pem", "a/k.pem", true},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "ab", false},
		{"a/**/b", "a/x/bb", false},
		{"*.go", "main.go", true},
		{"*.go", "cmd/main.go", false},
		{"**", "anything/at/all", true},
		{"src/*", "src/a", true},
		{"src/*", "src/a/b", false},
		{"vendor/", "vendor", true},
	}
	for _, tt := range tests {
		g, err := compilePathGlob(tt.pat)
		if err != nil {
			t.Errorf("compilePathGlob(%q): %v", tt.pat, err)
			continue
		}
		if got := g.match(tt.s); got != tt.want {
			t.Errorf("%q match %q = %v, want %v", tt.pat, tt.s, got, tt.want)
		}
	}
	for _, bad := range []string{"", "/etc/**", "a/**b", "a/../b", "./a", "a//b", "[x"} {
		if _, err := compilePathGlob(bad); err == nil {
			t.Errorf("compilePathGlob(%q) accepted a malformed glob", bad)
		}
	}
}

func TestCommandPattern(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pat  string
		argv string
		deny bool
		want bool
	}{
		{"go test *", "go test", false, true},
		{"go test *", "go test ./... -run X", false, true},
		{"go test *", "go testx", false, false},
		{"go test", "go test ./...", false, false},
		{"* --force** *", "git push --force origin", true, true},
		{"* --force** *", "--force", true, true},
		{"* --force** *", "git push", true, false},
		{"git * push *", "git push", false, true},
		{"git * push *", "git -C x push origin", false, true},
		{"git * push *", "git pull", false, false},
		{"a * b * c", "a x b y b c", false, true},
		{"a * * b", "a b", false, true},
		{"curl *", "/usr/bin/curl x", true, false},
		{"* x", "/usr/bin/curl x", true, true},   // a deny rule led by * matches paths too
		{"* x", "/usr/bin/curl x", false, false}, // an allow rule does not
		{"./bin/tool *", "./bin/tool a", false, true},
		{"./bin/* *", "./bin/tool a", false, true},
		{"python3 *.py", "python3 a.py", false, true},
		{`echo a\ b`, "echo a\x01b", false, false},
	}
	for _, tt := range tests {
		p, err := compileCommandPattern(rule{list: "t", src: tt.pat})
		if err != nil {
			t.Errorf("compileCommandPattern(%q): %v", tt.pat, err)
			continue
		}
		if got := p.match(strings.Fields(tt.argv), tt.deny); got != tt.want {
			t.Errorf("%q match %q (deny %v) = %v, want %v", tt.pat, tt.argv, tt.deny, got, tt.want)
		}
	}
	// An unknown word matches only a whole-word star.
	p, _ := compileCommandPattern(rule{src: "rm -f *"})
	if !p.match([]string{"rm", "-f", unknownWord}, false) {
		t.Error("unknown word does not match *")
	}
	q, _ := compileCommandPattern(rule{src: "rm **"})
	if q.match([]string{"rm", unknownWord}, false) {
		t.Error("unknown word matches a glob word")
	}
	for _, bad := range []string{"", "   ", "ls [a", `rm \`, "a\nb"} {
		if _, err := compileCommandPattern(rule{src: bad}); err == nil {
			t.Errorf("compileCommandPattern(%q) accepted a malformed pattern", bad)
		}
	}
}
