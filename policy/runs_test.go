package policy

import "testing"

// A rule that allows a program does not allow an option that makes it run
// another program: each case was allowed before runs.go.
func TestRunsProgram(t *testing.T) {
	t.Parallel()
	p, err := Parse("runs.yaml", []byte(`
version: 1
paths:
  read_only: ["vendor/**"]
commands:
  allow: ["sort *", "rg *", "tar *", "go *", "zip *", "rsync *", "tree *", "git *", "npm *"]
  ask: ["npx *"]
`))
	if err != nil {
		t.Fatal(err)
	}
	runCommandCases(t, p, []cmdCase{
		{line: "sort --compress-program=sh -S 1 a.txt", want: Deny, rule: "spec", why: "--compress-program"},
		{line: "sort -S 1 --compress-program sh a.txt", want: Deny, rule: "spec"},
		{line: "rg --pre sh pattern", want: Deny, rule: "spec", why: "rg --pre"},
		{line: "rg --pre=./x.sh pattern", want: Deny, rule: "spec"},
		{line: "tar -I sh -xf a.tar", want: Deny, rule: "spec", why: "tar -I"},
		{line: "tar -xIzstd a.tar", want: Deny, rule: "spec"},
		{line: "tar --use-compress-program=sh -xf a.tar", want: Deny, rule: "spec"},
		{line: "tar --to-command=sh -xf a.tar", want: Deny, rule: "spec"},
		{line: "tar --checkpoint=1 --checkpoint-action=exec=sh -cf a.tar .", want: Deny, rule: "spec"},
		{line: "go test -exec sh ./...", want: Deny, rule: "spec", why: "-exec"},
		{line: "go test --exec=sh ./...", want: Deny, rule: "spec"},
		{line: "go build -toolexec ./x .", want: Deny, rule: "spec"},
		{line: "go vet -vettool=./x ./...", want: Deny, rule: "spec"},
		{line: "go build -overlay=o.json .", want: Deny, rule: "spec"},
		{line: "go build -ldflags=-extld=./x .", want: Deny, rule: "spec", why: "linker"},
		{line: "go env -w GOFLAGS=-toolexec=x", want: Deny, rule: "spec", why: "go env -w"},
		{line: "zip -TT ./x a.zip a", want: Deny, rule: "spec"},
		{line: "rsync -e ./x a b", want: Deny, rule: "spec"},
		{line: "git -p log", want: Deny, rule: "spec", why: "pager"},
		{line: "git --paginate log", want: Deny, rule: "spec"},
		{line: "tree -o vendor/x.txt", want: Deny, rule: `paths.read_only: "vendor/**"`, why: "tree writes"},
		{line: "tar xIf zstd a.tar", want: Deny, rule: "spec-mismatch"},
		{line: "npm exec cowsay", want: Deny, rule: "spec", why: "use npx"},
		{line: "npm --prefix d x cowsay", want: Deny, rule: "spec-mismatch"},
		// Found by FuzzCheckCommand: a valued option at the end panicked.
		{line: "xargs -'a'", want: Deny, rule: "spec", why: "without a value"},
		{line: "xargs -n", want: Deny, rule: "spec"},
		{line: "env -u", want: Deny, rule: "spec", why: "without a value"},
		{line: "env -C", want: Deny, rule: "spec", why: "without a value"},
		{line: "env --chdir", want: Deny, rule: "spec"},
		// Ordinary uses stay allowed.
		{line: "sort -o out.txt a.txt", want: Allow, rule: `commands.allow: "sort *"`},
		{line: "rg --pre-glob '*.gz' pattern", want: Allow, rule: `commands.allow: "rg *"`},
		{line: "tar -xf Info.tar", want: Allow, rule: `commands.allow: "tar *"`},
		{line: "go test -run TestExec ./...", want: Allow, rule: `commands.allow: "go *"`},
		{line: "go env GOPATH", want: Allow, rule: `commands.allow: "go *"`},
		{line: "git log -p", want: Allow, rule: `commands.allow: "git *"`},
		{line: "tree -o tree.txt", want: Allow, rule: `commands.allow: "tree *"`},
		{line: "npm test", want: Allow, rule: `commands.allow: "npm *"`},
	})
}

func TestShellOperator(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]string{
		"go test ./...": "", "echo 'a;b' \"c|d\" e\\&f": "", "ls # x; y": "", "ls\n": "", "ls \\\n -l": "",
		"a#b;c": ";", "ls\ncat x": "newline", "echo \"$(id)\"": "$(", "echo '$(id)'": "", "echo \"`id`\"": "`",
		"a && b": "&", "ls\n#": "", "\ncat": "", "# c\n\nls": "", "ls\n# x\n\tcat": "newline", "a|b": "|", "a > f": ">", "a < f": "<", "echo $(id)": "$(", "echo 'x": "",
	} {
		if got := shellOperator(line); got != want {
			t.Errorf("shellOperator(%q) = %q, want %q", line, got, want)
		}
	}
}
