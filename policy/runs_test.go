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
		{line: "sort --compress-program=sh -S 1 a.txt", want: Deny, rule: "runs-program", why: "--compress-program"},
		{line: "sort -S 1 --compress-program sh a.txt", want: Deny, rule: "runs-program"},
		{line: "rg --pre sh pattern", want: Deny, rule: "runs-program", why: "rg --pre"},
		{line: "rg --pre=./x.sh pattern", want: Deny, rule: "runs-program"},
		{line: "tar -I sh -xf a.tar", want: Deny, rule: "runs-program", why: "tar -I"},
		{line: "tar -xIzstd a.tar", want: Deny, rule: "runs-program"},
		{line: "tar xIf zstd a.tar", want: Deny, rule: "runs-program"},
		{line: "tar --use-compress-program=sh -xf a.tar", want: Deny, rule: "runs-program"},
		{line: "tar --to-command=sh -xf a.tar", want: Deny, rule: "runs-program"},
		{line: "tar --checkpoint=1 --checkpoint-action=exec=sh -cf a.tar .", want: Deny, rule: "runs-program"},
		{line: "go test -exec sh ./...", want: Deny, rule: "runs-program", why: "-exec"},
		{line: "go test --exec=sh ./...", want: Deny, rule: "runs-program"},
		{line: "go build -toolexec ./x .", want: Deny, rule: "runs-program"},
		{line: "go vet -vettool=./x ./...", want: Deny, rule: "runs-program"},
		{line: "go build -overlay=o.json .", want: Deny, rule: "runs-program"},
		{line: "go build -ldflags=-extld=./x .", want: Deny, rule: "runs-program", why: "linker"},
		{line: "go env -w GOFLAGS=-toolexec=x", want: Deny, rule: "runs-program", why: "go env -w"},
		{line: "zip -TT ./x a.zip a", want: Deny, rule: "runs-program"},
		{line: "rsync -e ./x a b", want: Deny, rule: "runs-program"},
		{line: "git -p log", want: Deny, rule: "git-runs-programs", why: "pager"},
		{line: "git --paginate log", want: Deny, rule: "git-runs-programs"},
		{line: "tree -o vendor/x.txt", want: Deny, rule: `paths.read_only: "vendor/**"`, why: "tree writes"},
		{line: "npm exec cowsay", want: Ask, rule: `commands.ask: "npx *"`},
		{line: "npm --prefix d x cowsay", want: Ask, rule: `commands.ask: "npx *"`},
		// Found by FuzzCheckCommand: a valued option at the end panicked.
		{line: "xargs -'a'", want: Deny, rule: "wrapper-option", why: "without a value"},
		{line: "xargs -n", want: Deny, rule: "wrapper-option"},
		{line: "env -u", want: Deny, rule: "wrapper-option", why: "without a name"},
		{line: "env -C", want: Deny, rule: "wrapper-option", why: "without a folder"},
		{line: "env --chdir", want: Deny, rule: "wrapper-option"},
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
