package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		// want are substrings of the error; the first is always file:line.
		want []string
	}{
		{"unknown top key", "version: 1\nmodee: interactive\n", []string{"p.yaml:2:", "modee"}},
		{"unknown nested key", "version: 1\nlimits:\n  timeout: 3s\n  cpux: 2\n", []string{"p.yaml:4:", "cpux"}},
		{"unknown commands key", "version: 1\ncommands:\n  allow: []\n  shel: true\n", []string{"p.yaml:4:", "shel"}},
		{"missing version", "mode: interactive\n", []string{"p.yaml:1", "version", "required"}},
		{"unknown version", "version: 2\n", []string{"p.yaml:1:", "version", `unknown version "2"`}},
		{"version string", "version: \"1\"\n", []string{"p.yaml:1:", "version"}},
		{"unknown mode", "version: 1\nmode: yolo\n", []string{"p.yaml:2:", "mode", "yolo"}},
		{"mode number", "version: 1\nmode: 3\n", []string{"p.yaml:2:", "mode", "want a string"}},
		{"bad duration", "version: 1\nlimits:\n  timeout: 3 parsecs\n", []string{"p.yaml:3:", "limits.timeout", "duration"}},
		{"duration number", "version: 1\nlimits:\n  timeout: 30\n", []string{"p.yaml:3:", "limits.timeout"}},
		{"negative duration", "version: 1\nconfirm:\n  timeout: -5m\n", []string{"p.yaml:3:", "confirm.timeout"}},
		{"bad size", "version: 1\nlimits:\n  memory: 1 gigabyte\n", []string{"p.yaml:3:", "limits.memory", "size"}},
		{"bad size unit", "version: 1\nlimits:\n  output: 64KB2\n", []string{"p.yaml:3:", "limits.output"}},
		{"zero size", "version: 1\nlimits:\n  memory: 0\n", []string{"p.yaml:3:", "limits.memory"}},
		{"cpus word", "version: 1\nlimits:\n  cpus: two\n", []string{"p.yaml:3:", "limits.cpus"}},
		{"cpus zero", "version: 1\nlimits:\n  cpus: 0\n", []string{"p.yaml:3:", "limits.cpus"}},
		{"pids float", "version: 1\nlimits:\n  pids: 1.5\n", []string{"p.yaml:3:", "limits.pids"}},
		{"network yes", "version: 1\nlimits:\n  network: yes\n", []string{"p.yaml:3:", "limits.network", "true or false"}},
		{"disk word", "version: 1\nlimits:\n  disk: plenty\n", []string{"p.yaml:3:", "limits.disk", "size"}},
		{"disk zero", "version: 1\nlimits:\n  disk: 0\n", []string{"p.yaml:3:", "limits.disk"}},
		{"disk below the floor", "version: 1\nlimits:\n  disk: 4MB\n", []string{"p.yaml:3:", "limits.disk", "between 64MiB and 1TiB", `"4MB"`}},
		{"disk above the ceiling", "version: 1\nlimits:\n  timeout: 3s\n  disk: 2TiB\n", []string{"p.yaml:4:", "limits.disk", "between 64MiB and 1TiB"}},
		{"shell string", "version: 1\ncommands:\n  shell: \"true\"\n", []string{"p.yaml:3:", "commands.shell"}},
		{"shell pipe", "version: 1\ncommands:\n  shell: pipe\n", []string{"p.yaml:3:", "commands.shell", "true, false or pipes"}},
		{"programs bad role", "version: 1\nprograms:\n  x:\n    options:\n      - {names: [-a], value: pathh}\n", []string{"p.yaml:5:", "programs.x.options[0].value", "unknown role"}},
		{"programs bad example", "version: 1\nprograms:\n  x:\n    operands: []\n    examples: {match: [\"x y\"]}\n", []string{"p.yaml:4:", "x.examples", "must match"}},
		{"unclosed class", "version: 1\ncommands:\n  allow:\n    - \"go test *\"\n    - \"ls [a\"\n", []string{"p.yaml:5:", "commands.allow[1]", "unclosed ["}},
		{"trailing backslash", "version: 1\ncommands:\n  deny: ['rm \\']\n", []string{"p.yaml:3:", "commands.deny[0]", "backslash"}},
		{"empty pattern", "version: 1\ncommands:\n  ask:\n    - \"\"\n", []string{"p.yaml:4:", "commands.ask[0]", "empty"}},
		{"null pattern", "version: 1\ncommands:\n  ask:\n    -\n", []string{"p.yaml:4", "commands.ask"}},
		{"pattern number", "version: 1\ncommands:\n  allow:\n    - 3\n", []string{"p.yaml:4:", "commands.allow[0]", "want a string"}},
		{"pattern list", "version: 1\ncommands:\n  allow: [[a]]\n", []string{"p.yaml:3:", "commands.allow[0]"}},
		{"allow not a list", "version: 1\ncommands:\n  allow: go test\n", []string{"p.yaml:3:", "commands.allow", "sequence"}},
		{"commands scalar", "version: 1\ncommands: 3\n", []string{"p.yaml:2:", "commands", "mapping"}},
		{"bad path glob", "version: 1\npaths:\n  deny: [\"a/**b\"]\n", []string{"p.yaml:3:", "paths.deny[0]", "whole path segment"}},
		{"absolute path glob", "version: 1\npaths:\n  read_only: [\"/etc/**\"]\n", []string{"p.yaml:3:", "paths.read_only[0]"}},
		{"dotdot path glob", "version: 1\npaths:\n  deny: [\"../x\"]\n", []string{"p.yaml:3:", "paths.deny[0]"}},
		{"relative read-only dir", "version: 1\ncommands:\n  read_only_dirs: [usr]\n", []string{"p.yaml:3:", "commands.read_only_dirs[0]", "not absolute"}},
		{"root read-only dir", "version: 1\ncommands:\n  read_only_dirs: [/]\n", []string{"p.yaml:3:", "commands.read_only_dirs[0]"}},
		{"confirm default allow", "version: 1\nconfirm:\n  default: allow\n", []string{"p.yaml:3:", "confirm.default"}},
		{"bad tool pattern", "version: 1\ntools:\n  deny: [\"a b\"]\n", []string{"p.yaml:3:", "tools.deny[0]"}},
		{"duplicate key", "version: 1\nversion: 1\n", []string{"p.yaml:2:", "version"}},
		{"yaml syntax", "version: 1\ncommands:\n  allow: [\"go test *\"\n", []string{"p.yaml:"}},
		{"bad indentation", "version: 1\n  mode: interactive\n", []string{"p.yaml:"}},
		{"unquoted star", "version: 1\ncommands:\n  deny:\n    - * --force\n", []string{"p.yaml:4"}},
		{"empty file", "", []string{"p.yaml:1", "empty"}},
		{"two documents", "version: 1\n---\nversion: 1\n", []string{"p.yaml", "document"}},
		{"top-level list", "- a\n", []string{"p.yaml:1:", "mapping"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Parse("p.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatalf("Parse accepted a broken file: %+v", p)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, tt.want[0]) {
				t.Errorf("error %q does not start with %q", msg, tt.want[0])
			}
			for _, w := range tt.want[1:] {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", msg, w)
				}
			}
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Errorf("error %T is not a *FileError", err)
			}
		})
	}
}

// Several mistakes are reported together, each with its own line.
func TestParseReportsEveryError(t *testing.T) {
	t.Parallel()
	_, err := Parse("p.yaml", []byte("version: 1\nmode: nope\nlimits:\n  timeout: soon\n  memory: lots\n"))
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{"p.yaml:2:", "p.yaml:4:", "p.yaml:5:"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q misses %q", err, w)
		}
	}
}

func TestParseValues(t *testing.T) {
	t.Parallel()
	src := `version: 1
mode: unattended
workspace: /srv/ws
commands:
  shell: true
  read_only_dirs: [/opt/tool/, "~/go/pkg/mod"]
limits: {timeout: 90s, memory: 512MiB, cpus: 1.5, pids: 64, output: 100000, disk: 8GiB, file: 2MiB, network: true}
confirm: {timeout: 30s, default: deny}
`
	p, err := Parse("v.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := Limits{Timeout: 90 * time.Second, Memory: 512 << 20, CPUs: 1.5, Pids: 64, Output: 100000, Disk: 8 << 30, File: 2 << 20, Network: true}
	if p.Limits() != want {
		t.Errorf("Limits = %+v, want %+v", p.Limits(), want)
	}
	if !p.Unattended() || !p.Shell() || p.Workspace() != "/srv/ws" || p.ConfirmTimeout() != 30*time.Second {
		t.Errorf("unattended %v shell %v workspace %q confirm %v", p.Unattended(), p.Shell(), p.Workspace(), p.ConfirmTimeout())
	}
	if got := strings.Join(p.ReadOnlyDirs(), ","); got != "/opt/tool,~/go/pkg/mod" {
		t.Errorf("ReadOnlyDirs = %s", got)
	}
}

func TestParseSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1GiB", 1 << 30, true}, {"512MiB", 512 << 20, true}, {"64KiB", 64 << 10, true}, {"2TiB", 2 << 40, true},
		{"1GB", 1e9, true}, {"10KB", 10000, true}, {"100B", 100, true}, {"4096", 4096, true},
		{"", 0, false}, {"GiB", 0, false}, {"-1MiB", 0, false}, {"1.5GiB", 0, false}, {"1 XB", 0, false},
		{"9999999999999TiB", 0, false},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "ok.yaml")
	if err := os.WriteFile(good, []byte("version: 1\ncommands:\n  allow: [\"go test *\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Load(good)
	if err != nil {
		t.Fatal(err)
	}
	d := p.CheckCommand(Command{Argv: []string{"go", "test"}}, Scope{Workspace: dir})
	if d.Verdict != Allow || !strings.Contains(d.Rule, good+":3") {
		t.Errorf("decision %+v does not cite %s:3", d, good)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want ErrNotExist", err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\n\nlimits:\n  memory: huge\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.HasPrefix(err.Error(), bad+":4:") {
		t.Errorf("Load(bad) = %v, want it to start with %s:4:", err, bad)
	}
}

// limits.disk is range-checked at both ends, inclusive, and a policy that
// leaves it out gets the default rather than no limit.
func TestParseDisk(t *testing.T) {
	t.Parallel()
	tests := []struct {
		disk string // "" leaves the key out
		want int64  // 0: an error naming limits.disk
	}{
		{"", DefaultDisk},
		{"64MiB", 64 << 20},
		{"67108863", 0},
		{"1TiB", 1 << 40},
		{"1099511627777", 0},
		{"10GB", 10_000_000_000},
	}
	for _, tt := range tests {
		src := "version: 1\nlimits:\n  cpus: 1\n"
		if tt.disk != "" {
			src += "  disk: " + tt.disk + "\n"
		}
		p, err := Parse("d.yaml", []byte(src))
		switch {
		case tt.want == 0 && (err == nil || !strings.Contains(err.Error(), "d.yaml:4:") || !strings.Contains(err.Error(), "limits.disk")):
			t.Errorf("disk %q: error %v, want one naming d.yaml:4 and limits.disk", tt.disk, err)
		case tt.want != 0 && err != nil:
			t.Errorf("disk %q: %v", tt.disk, err)
		case tt.want != 0 && p.Limits().Disk != tt.want:
			t.Errorf("disk %q = %d, want %d", tt.disk, p.Limits().Disk, tt.want)
		}
	}
}

func TestParseFileLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string // "" leaves the key out
		want int64  // 0: an error naming limits.file
	}{
		{"", DefaultFile},
		{"1KiB", 1 << 10},
		{"1023", 0},
		{"1GiB", 1 << 30},
		{"2GiB", 0},
		{"lots", 0},
	}
	for _, tt := range tests {
		src := "version: 1\nlimits:\n  cpus: 1\n"
		if tt.file != "" {
			src += "  file: " + tt.file + "\n"
		}
		p, err := Parse("f.yaml", []byte(src))
		switch {
		case tt.want == 0 && (err == nil || !strings.Contains(err.Error(), "f.yaml:4:") || !strings.Contains(err.Error(), "limits.file")):
			t.Errorf("file %q: error %v, want one naming f.yaml:4 and limits.file", tt.file, err)
		case tt.want != 0 && err != nil:
			t.Errorf("file %q: %v", tt.file, err)
		case tt.want != 0 && p.Limits().File != tt.want:
			t.Errorf("file %q = %d, want %d", tt.file, p.Limits().File, tt.want)
		}
	}
}
