package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/tools"
)

// newWorkspace opens a fresh workspace under t.TempDir with a local sandbox
// and writes files into it.
func newWorkspace(t testing.TB, files map[string]string) *tools.Workspace {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	limits := sandbox.Limits{Timeout: 30 * time.Second, Output: 64 << 10}
	sb, err := sandbox.NewLocal(dir, limits)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := tools.OpenWorkspace(dir, sb, limits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ws.Close()
		sb.Close()
	})
	return ws
}

// builtin returns the named built-in of ws.
func builtin(t testing.TB, ws *tools.Workspace, name string) tools.Tool {
	t.Helper()
	for _, tool := range tools.Builtins(ws) {
		if tool.Name() == name {
			return tool
		}
	}
	t.Fatalf("no built-in %q", name)
	return nil
}

// run decodes args and runs the tool without a gate. A decode error comes
// back as a failed result whose output starts with "decode: ".
func run(t testing.TB, ws *tools.Workspace, name string, args any) (tools.Result, []tools.Effect) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := builtin(t, ws, name).Decode(raw)
	if err != nil {
		return tools.Result{Output: "decode: " + err.Error()}, nil
	}
	res, err := inv.Run(context.Background())
	if err != nil {
		t.Fatalf("%s(%s): infrastructure error %v", name, raw, err)
	}
	return res, inv.Effects
}

type obj = map[string]any

func TestBuiltinsDescribed(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, nil)
	reg, err := tools.NewRegistry(tools.Builtins(ws)...)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{tools.DeleteFileName, tools.EditFileName, tools.ListFilesName, tools.ReadFileName, tools.RunCommandName,
		tools.RunLinterName, tools.RunTestsName, tools.SearchFilesName, tools.WriteFileName}
	if got := reg.Names(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Names = %v, want %v", got, want)
	}
	for _, tool := range tools.Builtins(ws) {
		if len(tool.Description()) < 100 {
			t.Errorf("%s: description too short: %q", tool.Name(), tool.Description())
		}
	}
}

func TestPathsConfined(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("s3cret"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := newWorkspace(t, map[string]string{"in.txt": "hello\n"})
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ws.Dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws.Dir, "linkdir")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool string
		args obj
		want string
	}{
		{tools.ReadFileName, obj{"path": "../secret.txt"}, `argument "path": "../secret.txt" leads outside the workspace`},
		{tools.ReadFileName, obj{"path": "a/../../x"}, "leads outside the workspace"},
		{tools.ReadFileName, obj{"path": filepath.Join(outside, "secret.txt")}, "is outside the workspace"},
		{tools.ReadFileName, obj{"path": "link.txt"}, "refused: the path leads outside the workspace"},
		{tools.ReadFileName, obj{"path": "linkdir/secret.txt"}, "refused: the path leads outside the workspace"},
		{tools.WriteFileName, obj{"path": "linkdir/new.txt", "content": "x"}, "refused"},
		{tools.WriteFileName, obj{"path": "../new.txt", "content": "x"}, "leads outside the workspace"},
		{tools.EditFileName, obj{"path": "link.txt", "old_text": "s3cret", "new_text": "x"}, "refused"},
		{tools.ListFilesName, obj{"path": "linkdir"}, "refused"},
		{tools.DeleteFileName, obj{"path": "linkdir/secret.txt"}, "refused: the path leads outside the workspace"},
		{tools.DeleteFileName, obj{"path": "../secret.txt"}, "leads outside the workspace"},
		{tools.DeleteFileName, obj{"path": filepath.Join(outside, "secret.txt")}, "is outside the workspace"},
		{tools.SearchFilesName, obj{"pattern": "s3cret", "path": "linkdir"}, "refused"},
		{tools.RunCommandName, obj{"command": "ls", "dir": "../"}, "leads outside the workspace"},
		{tools.RunCommandName, obj{"command": "ls", "dir": "linkdir"}, "refused: the path leads outside the workspace"},
		{tools.RunCommandName, obj{"command": "ls", "dir": "in.txt"}, "not a folder"},
	}
	for _, tt := range tests {
		res, _ := run(t, ws, tt.tool, tt.args)
		if res.OK || !strings.Contains(res.Output, tt.want) {
			t.Errorf("%s(%v) = ok=%v %q, want refusal containing %q", tt.tool, tt.args, res.OK, res.Output, tt.want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "s3cret" {
		t.Error("file outside the workspace changed")
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Error("file created outside the workspace")
	}
	// An absolute path inside the workspace is accepted and reported relative.
	res, eff := run(t, ws, tools.ReadFileName, obj{"path": filepath.Join(ws.Dir, "in.txt")})
	if !res.OK || len(eff) != 1 || eff[0].Path != "in.txt" {
		t.Errorf("absolute path inside: %+v %+v", res, eff)
	}
	// Searching the root does not follow the symlinked folder out.
	res, _ = run(t, ws, tools.SearchFilesName, obj{"pattern": "s3cret"})
	if strings.Contains(res.Output, "linkdir") {
		t.Errorf("search followed a symlink out: %q", res.Output)
	}
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	ws := newWorkspace(t, map[string]string{"a.txt": b.String(), "bin": "x\x00y", "empty": "",
		"huge.txt": strings.Repeat(strings.Repeat("z", 1000)+"\n", 400)})
	res, eff := run(t, ws, tools.ReadFileName, obj{"path": "./a.txt", "offset": 10, "limit": 2})
	if !res.OK || res.Output != "    10\tline 10\n    11\tline 11\n[showing lines 10-11 of 30 (cut by limit); call read_file with offset=12 for more]\n" {
		t.Errorf("read_file = %+v", res)
	}
	if len(eff) != 1 || eff[0].Kind != tools.EffectRead || eff[0].Path != "a.txt" {
		t.Errorf("effects = %+v", eff)
	}
	for _, tt := range []struct {
		args obj
		want string
	}{
		{obj{"path": "bin"}, "binary file"},
		{obj{"path": "nope"}, "nope: no such file"},
		{obj{"path": "."}, "is a directory"},
		{obj{"path": "a.txt", "offset": 99}, "past the end"},
		{obj{"path": "a.txt", "limit": -1}, `argument "limit"`},
	} {
		if res, _ := run(t, ws, tools.ReadFileName, tt.args); res.OK || !strings.Contains(res.Output, tt.want) {
			t.Errorf("read_file(%v) = %+v, want %q", tt.args, res, tt.want)
		}
	}
	if res, _ := run(t, ws, tools.ReadFileName, obj{"path": "empty"}); !res.OK || !strings.Contains(res.Output, "empty") {
		t.Errorf("empty file: %+v", res)
	}
	res, _ = run(t, ws, tools.ReadFileName, obj{"path": "huge.txt"})
	if !res.OK || !res.Truncated || len(res.Output) > tools.MaxReadBytes+200 || !strings.Contains(res.Output, "KiB cap") {
		t.Errorf("huge file: ok=%v truncated=%v len=%d tail=%q", res.OK, res.Truncated, len(res.Output), res.Output[max(0, len(res.Output)-150):])
	}
}

func TestWriteFileAtomic(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"old.sh": "old"})
	if err := os.Chmod(filepath.Join(ws.Dir, "old.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, eff := run(t, ws, tools.WriteFileName, obj{"path": "deep/er/new.txt", "content": "fresh"})
	if !res.OK || !strings.Contains(res.Output, "created deep/er/new.txt (5 bytes)") {
		t.Errorf("write new: %+v", res)
	}
	if len(eff) != 1 || eff[0].Kind != tools.EffectWrite || eff[0].Path != "deep/er/new.txt" {
		t.Errorf("effects = %+v", eff)
	}
	if b, _ := os.ReadFile(filepath.Join(ws.Dir, "deep/er/new.txt")); string(b) != "fresh" {
		t.Errorf("content = %q", b)
	}
	res, _ = run(t, ws, tools.WriteFileName, obj{"path": "old.sh", "content": "new"})
	if !res.OK || !strings.Contains(res.Output, "replaced") {
		t.Errorf("replace: %+v", res)
	}
	st, _ := os.Stat(filepath.Join(ws.Dir, "old.sh"))
	if st.Mode().Perm() != 0o755 {
		t.Errorf("mode = %v, want 0755 kept", st.Mode())
	}
	// No temporary files are left behind.
	entries, _ := os.ReadDir(ws.Dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
	if res, _ := run(t, ws, tools.WriteFileName, obj{"path": "deep", "content": "x"}); res.OK || !strings.Contains(res.Output, "is a directory") {
		t.Errorf("write over a folder: %+v", res)
	}
	if res, _ := run(t, ws, tools.WriteFileName, obj{"path": "old.sh/x", "content": "x"}); res.OK {
		t.Errorf("write under a file: %+v", res)
	}
}

func TestEditFile(t *testing.T) {
	t.Parallel()
	const src = "a\nfoo\nb\nfoo\nc\n"
	tests := []struct {
		name string
		args obj
		ok   bool
		want string // output substring
		file string // content after, when ok
	}{
		{"unique", obj{"old_text": "b\n", "new_text": "B\n"}, true, "replaced 1 match at line 3", "a\nfoo\nB\nfoo\nc\n"},
		{"ambiguous", obj{"old_text": "foo", "new_text": "x"}, false, "matches 2 times (at lines 2, 4)", ""},
		{"missing", obj{"old_text": "zzz", "new_text": "x"}, false, "old_text not found", ""},
		{"whitespace hint", obj{"old_text": "a  foo", "new_text": "x"}, false, "whitespace is ignored", ""},
		{"range", obj{"start_line": 2, "end_line": 3, "new_text": "X"}, true, "replaced lines 2-3", "a\nX\nfoo\nc\n"},
		{"range delete", obj{"start_line": 1, "end_line": 1, "new_text": ""}, true, "replaced lines 1-1", "foo\nb\nfoo\nc\n"},
		{"range last", obj{"start_line": 5, "end_line": 5, "new_text": "C\nD"}, true, "", "a\nfoo\nb\nfoo\nC\nD\n"},
		{"range past end", obj{"start_line": 5, "end_line": 6, "new_text": "x"}, false, "past the end (the file has 5 lines)", ""},
		{"range backwards", obj{"start_line": 3, "end_line": 2, "new_text": "x"}, false, `argument "end_line"`, ""},
		{"both modes", obj{"old_text": "a", "start_line": 1, "end_line": 1, "new_text": "x"}, false, "not both", ""},
		{"neither", obj{"new_text": "x"}, false, `argument "old_text": required`, ""},
		{"no new_text", obj{"old_text": "a"}, false, `argument "new_text": required`, ""},
		{"insert at top", obj{"insert_after": 0, "new_text": "top"}, true, "inserted 1 line after line 0", "top\na\nfoo\nb\nfoo\nc\n"},
		{"insert in the middle", obj{"insert_after": 2, "new_text": "x\ny\n"}, true, "inserted 2 lines after line 2", "a\nfoo\nx\ny\nb\nfoo\nc\n"},
		{"insert appends", obj{"insert_after": 5, "new_text": "end"}, true, "after line 5", src + "end\n"},
		{"insert past end", obj{"insert_after": 6, "new_text": "x"}, false, "insert_after 6 is past the end (the file has 5 lines; 5 appends)", ""},
		{"insert negative", obj{"insert_after": -1, "new_text": "x"}, false, `argument "insert_after": must be 0`, ""},
		{"insert nothing", obj{"insert_after": 1, "new_text": ""}, false, `argument "new_text": is empty`, ""},
		{"insert and replace", obj{"insert_after": 1, "old_text": "a", "new_text": "x"}, false, "inserts without replacing", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := newWorkspace(t, map[string]string{"f.txt": src})
			tt.args["path"] = "f.txt"
			res, _ := run(t, ws, tools.EditFileName, tt.args)
			if res.OK != tt.ok || !strings.Contains(res.Output, tt.want) {
				t.Fatalf("edit_file = ok=%v %q, want ok=%v and %q", res.OK, res.Output, tt.ok, tt.want)
			}
			b, _ := os.ReadFile(filepath.Join(ws.Dir, "f.txt"))
			want := tt.file
			if !tt.ok {
				want = src
			}
			if string(b) != want {
				t.Errorf("file = %q, want %q", b, want)
			}
		})
	}
}

func TestListFiles(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		".git/config": "x", "src/.git/HEAD": "x", "main.go": "", "src/a.go": "", "src/b_test.go": "",
		"src/deep/c.go": "", "README.md": "", ".env": "SECRET=1",
	}
	for i := range tools.MaxListEntries + 10 {
		files[fmt.Sprintf("many/f%04d.txt", i)] = ""
	}
	ws := newWorkspace(t, files)
	tests := []struct {
		args obj
		want string
	}{
		{obj{"pattern": "*.go"}, "main.go\nsrc/a.go\nsrc/b_test.go\nsrc/deep/c.go\n"},
		{obj{"pattern": "src/**/*.go"}, "src/a.go\nsrc/b_test.go\nsrc/deep/c.go\n"},
		{obj{"path": "src", "pattern": "**/*_test.go"}, "src/b_test.go\n"},
		{obj{"path": "src", "pattern": "deep/*"}, "src/deep/c.go\n"},
		{obj{"pattern": "*.rs"}, `no files under . match "*.rs"` + "\n"},
	}
	for _, tt := range tests {
		res, _ := run(t, ws, tools.ListFilesName, tt.args)
		if !res.OK || res.Output != tt.want {
			t.Errorf("list_files(%v) = %q, want %q", tt.args, res.Output, tt.want)
		}
	}
	res, _ := run(t, ws, tools.ListFilesName, obj{})
	lines := strings.Split(strings.TrimSpace(res.Output), "\n")
	if !res.Truncated || len(lines) != tools.MaxListEntries+1 || !strings.Contains(lines[len(lines)-1], "capped at 500") {
		t.Errorf("cap: truncated=%v, %d lines, last %q", res.Truncated, len(lines), lines[len(lines)-1])
	}
	if strings.Contains(res.Output, ".git/") {
		t.Error(".git listed")
	}
	if lines[0] != ".env" || lines[1] != "README.md" {
		t.Errorf("not sorted: %v", lines[:3])
	}
	// A Visible filter hides paths (as PolicyVisible does for denied ones).
	ws.Visible = func(rel string) bool { return rel != ".env" && rel != "many" }
	res, _ = run(t, ws, tools.ListFilesName, obj{})
	if strings.Contains(res.Output, ".env") || strings.Contains(res.Output, "many/") || res.Truncated {
		t.Errorf("Visible ignored: %q", res.Output)
	}
	if res, _ := run(t, ws, tools.ListFilesName, obj{"pattern": "[a-"}); res.OK || !strings.Contains(res.Output, `argument "pattern"`) {
		t.Errorf("bad glob: %+v", res)
	}
}

func TestSearchFiles(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{
		"a.go":        "package a\n\nfunc One() {}\nfunc Two() {}\n\nvar x = 1\n// end\n",
		"b.txt":       "nothing\nfunc here too\n",
		"bin.dat":     "func\x00binary",
		".git/config": "func",
		"sub/c.go":    "package sub\nfunc Three() {}\n",
	})
	res, eff := run(t, ws, tools.SearchFilesName, obj{"pattern": `^func \w+`, "glob": "*.go", "context_lines": 1})
	want := "a.go-2- \na.go:3: func One() {}\na.go:4: func Two() {}\na.go-5- \n--\n" +
		"sub/c.go-1- package sub\nsub/c.go:2: func Three() {}\n--\n[3 matches in 2 files]\n"
	if !res.OK || res.Output != want {
		t.Errorf("search =\n%s\nwant\n%s", res.Output, want)
	}
	if len(eff) != 1 || eff[0].Path != "." {
		t.Errorf("effects = %+v", eff)
	}
	res, _ = run(t, ws, tools.SearchFilesName, obj{"pattern": "func"})
	if strings.Contains(res.Output, "bin.dat") || strings.Contains(res.Output, ".git") || !strings.Contains(res.Output, "b.txt:2: func here too") {
		t.Errorf("search all = %q", res.Output)
	}
	res, _ = run(t, ws, tools.SearchFilesName, obj{"pattern": "Three", "path": "sub/c.go"})
	if res.Output != "sub/c.go:2: func Three() {}\n[1 matches in 1 files]\n" {
		t.Errorf("search one file = %q", res.Output)
	}
	for _, tt := range []struct {
		args obj
		want string
	}{
		{obj{"pattern": "("}, `argument "pattern": not a valid Go regular expression`},
		{obj{"pattern": "x", "context_lines": 11}, `argument "context_lines"`},
		{obj{"pattern": "x", "path": "missing"}, "no such file"},
	} {
		if res, _ := run(t, ws, tools.SearchFilesName, tt.args); res.OK || !strings.Contains(res.Output, tt.want) {
			t.Errorf("search(%v) = %+v, want %q", tt.args, res, tt.want)
		}
	}
}

func TestSearchCap(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"many.txt": strings.Repeat("hit\n", tools.MaxSearchMatches+5)})
	res, _ := run(t, ws, tools.SearchFilesName, obj{"pattern": "hit"})
	if !res.Truncated || strings.Count(res.Output, "many.txt:") != tools.MaxSearchMatches || !strings.Contains(res.Output, "stopped at 200") {
		t.Errorf("cap: truncated=%v count=%d", res.Truncated, strings.Count(res.Output, "many.txt:"))
	}
}

func TestRunCommand(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"sub/x.txt": "hi"})
	res, eff := run(t, ws, tools.RunCommandName, obj{"command": "ls", "dir": "sub"})
	if !res.OK || res.ExitCode != 0 || res.Stdout != "x.txt\n" || res.Output != "exit code 0" {
		t.Errorf("ls = %+v", res)
	}
	if len(eff) != 2 || eff[0].Kind != tools.EffectExec || fmt.Sprint(eff[0].Command.Argv) != "[ls]" ||
		eff[1].Kind != tools.EffectRead || eff[1].Path != "sub" {
		t.Errorf("effects = %+v", eff)
	}
	res, _ = run(t, ws, tools.RunCommandName, obj{"command": "ls no-such-file"})
	if res.OK || res.ExitCode == 0 || res.Stderr == "" || !strings.Contains(res.Output, "exit code") {
		t.Errorf("failing ls = %+v", res)
	}
	res, _ = run(t, ws, tools.RunCommandName, obj{"command": "sleep 5", "timeout_seconds": 1})
	if res.OK || !strings.Contains(res.Output, "timed out after 1s") {
		t.Errorf("timeout = %+v", res)
	}
	for _, tt := range []struct {
		args obj
		want string
	}{
		{obj{"command": ""}, `argument "command": must not be empty`},
		{obj{"command": "echo 'unterminated"}, `argument "command"`},
		{obj{"command": "ls", "timeout_seconds": -1}, `argument "timeout_seconds"`},
	} {
		if res, _ := run(t, ws, tools.RunCommandName, tt.args); res.OK || !strings.Contains(res.Output, tt.want) {
			t.Errorf("run_command(%v) = %+v, want %q", tt.args, res, tt.want)
		}
	}
}

// write_file and edit_file refuse a file past the policy's limits.file,
// with a tool error naming the limit, and write nothing.
func TestFileSizeLimit(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"small.txt": "abc\n"})
	ws.MaxFile = 1 << 10
	big := strings.Repeat("x", 2000)
	res, _ := run(t, ws, tools.WriteFileName, obj{"path": "big.txt", "content": big})
	if res.OK || !strings.Contains(res.Output, "limits.file") || !strings.Contains(res.Output, "1.0 KiB (1024 bytes)") || !strings.Contains(res.Output, "2000 bytes") {
		t.Errorf("write_file past the limit: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(ws.Dir, "big.txt")); err == nil {
		t.Error("write_file past the limit wrote the file")
	}
	if res, _ := run(t, ws, tools.WriteFileName, obj{"path": "ok.txt", "content": big[:1024]}); !res.OK {
		t.Errorf("write_file at the limit: %+v", res)
	}
	res, _ = run(t, ws, tools.EditFileName, obj{"path": "small.txt", "insert_after": 1, "new_text": big})
	if res.OK || !strings.Contains(res.Output, "edit_file small.txt") || !strings.Contains(res.Output, "limits.file") {
		t.Errorf("edit_file past the limit: %+v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(ws.Dir, "small.txt")); string(b) != "abc\n" {
		t.Errorf("small.txt = %q after a refused edit", b)
	}
	// Without a limit set, the default applies.
	ws.MaxFile = 0
	res, _ = run(t, ws, tools.WriteFileName, obj{"path": "huge.txt", "content": strings.Repeat("y", 4<<20+1)})
	if res.OK || !strings.Contains(res.Output, "4.0 MiB") {
		t.Errorf("write_file past the default limit: %+v", res)
	}
}
