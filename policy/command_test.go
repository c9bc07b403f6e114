package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line  string
		argv  []string
		shell bool
		err   string // substring of the error, "" for none
	}{
		{line: "go test ./...", argv: []string{"go", "test", "./..."}},
		{line: "g'i't push", argv: []string{"git", "push"}},
		{line: `"go"  test  -run 'TestA|TestB'`, argv: []string{"go", "test", "-run", "TestA|TestB"}},
		{line: `echo "a b" 'c d' e\ f`, argv: []string{"echo", "a b", "c d", "e f"}},
		{line: `echo "\$HOME" '$HOME' \$HOME "\"q\\"`, argv: []string{"echo", "$HOME", "$HOME", "$HOME", `"q\`}},
		{line: `ls '*.go' "[ab]"`, argv: []string{"ls", "*.go", "[ab]"}},
		{line: "[ -f x ]", argv: []string{"[", "-f", "x", "]"}},
		{line: "echo $'x'", argv: []string{"echo", "$x"}}, // POSIX sh has no $'...'
		{line: "  go  vet  ", argv: []string{"go", "vet"}},
		{line: "go test # run tests", argv: []string{"go", "test"}},
		{line: "echo $HOME", shell: true},
		{line: "echo ${HOME}", shell: true},
		{line: `echo "$HOME"`, shell: true},
		{line: "ls *.go", shell: true},
		{line: "ls file?.go", shell: true},
		{line: "ls [ab].go", shell: true},
		{line: "go test | tail", shell: true},
		{line: "go test; go vet", shell: true},
		{line: "go test;", shell: true},
		{line: "go test\n", argv: []string{"go", "test"}},
		{line: "go test && go vet", shell: true},
		{line: "go test || true", shell: true},
		{line: "go test > out.txt", shell: true},
		{line: "go test 2>&1", shell: true},
		{line: "cat < in", shell: true},
		{line: "echo $(id)", shell: true},
		{line: "echo `id`", shell: true},
		{line: "echo $((1+2))", shell: true},
		{line: "(go test)", shell: true},
		{line: "{ go test; }", shell: true},
		{line: "go test &", shell: true},
		{line: "X=1 go test", shell: true},
		{line: "! go test", shell: true},
		{line: "go test\ngo vet", shell: true},
		{line: "for f in a b; do echo x; done", shell: true},
		{line: "f() { x; }", shell: true},
		{line: "cat <<EOF\nhi\nEOF", shell: true},
		{line: "echo 'unterminated", err: "1:6"},
		{line: "go test |", err: "1:9"},
		{line: "if true; then", err: "1:10"},
		{line: "", err: "empty command"},
		{line: "   # only a comment", err: "empty command"},
	}
	for _, tt := range tests {
		cmd, err := ParseCommand(tt.line)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseCommand(%q) error = %v, want one containing %q", tt.line, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseCommand(%q): %v", tt.line, err)
			continue
		}
		if cmd.Line != tt.line || cmd.Shell != tt.shell || !slices.Equal(cmd.Argv, tt.argv) {
			t.Errorf("ParseCommand(%q) = %+v, want argv %q shell %v", tt.line, cmd, tt.argv, tt.shell)
		}
		if cmd.Shell && cmd.Argv != nil {
			t.Errorf("ParseCommand(%q): Shell with Argv %q", tt.line, cmd.Argv)
		}
	}
	if _, err := ParseCommand(""); !errors.Is(err, ErrEmptyCommand) {
		t.Errorf("ParseCommand(\"\") = %v, want ErrEmptyCommand", err)
	}
}

type cmdCase struct {
	line string   // parsed with ParseCommand when argv is nil
	argv []string // given directly, as a tool that builds argv would
	want Verdict
	rule string // prefix of Decision.Rule
	why  string // substring of Decision.Reason
}

func runCommandCases(t *testing.T, p *Policy, tests []cmdCase) {
	t.Helper()
	for _, tt := range tests {
		cmd := Command{Argv: tt.argv}
		name := strings.Join(tt.argv, " ")
		if tt.argv == nil {
			var err error
			cmd, err = ParseCommand(tt.line)
			if err != nil {
				t.Errorf("ParseCommand(%q): %v", tt.line, err)
				continue
			}
			name = tt.line
		}
		d := p.CheckCommand(cmd, testScope)
		if d.Verdict != tt.want || !strings.HasPrefix(d.Rule, tt.rule) || !strings.Contains(d.Reason, tt.why) {
			t.Errorf("%s\n  got  %v %q: %s\n  want %v %q (reason with %q)", name, d.Verdict, d.Rule, d.Reason, tt.want, tt.rule, tt.why)
		}
		if d.Reason == "" || d.Rule == "" {
			t.Errorf("%s: decision without rule or reason: %+v", name, d)
		}
	}
}

func TestCheckCommandRules(t *testing.T) {
	t.Parallel()
	runCommandCases(t, loadTest(t), []cmdCase{
		// Allowed, with the rule quoted as written and its line.
		{line: "go test ./...", want: Allow, rule: `commands.allow: "go test *" (testdata/rules.yaml:11)`},
		{line: "go test", want: Allow, rule: `commands.allow: "go test *"`},
		{line: "go build -o bin/app ./cmd/app", want: Allow, rule: `commands.allow: "go build *"`},
		{line: "gofmt -l .", want: Allow, rule: `commands.allow: "gofmt -l *"`},
		{line: "python3 -m pytest -q tests", want: Allow, rule: `commands.allow: "python3 -m pytest *"`},
		{line: "python3 tests/deep/test_x.py -v", want: Allow, rule: `commands.allow: "python3 **.py *"`},
		{line: "bash build.sh", want: Allow, rule: `commands.allow: "bash *.sh"`},
		{line: "./bin/tool run x", want: Allow, rule: `commands.allow: "./bin/tool *"`},
		{line: "git log HEAD..main", want: Allow, rule: `commands.allow: "git log *"`},
		{line: "echo hi", want: Allow},
		// Asked.
		{line: "go get example.com/x", want: Ask, rule: `commands.ask: "go get *" (testdata/rules.yaml:30)`, why: `"go get example.com/x" matches commands.ask "go get *"`},
		{line: "rm -rf build", want: Ask, rule: `commands.ask: "rm *"`},
		{line: "git push origin main", want: Ask, rule: `commands.ask: "git * push *"`},
		// Denied: deny beats ask beats allow, unmatched is denied.
		{line: "curl https://example.com", want: Deny, rule: `commands.deny: "curl *"`},
		{line: "git push --force", want: Deny, rule: `commands.deny: "* --force** *"`},
		{line: "git push --force-with-lease", want: Deny, rule: `commands.deny: "* --force** *"`},
		{line: "go test -toolexec=/usr/bin/x ./...", want: Deny, rule: `commands.deny: "go * -toolexec** *"`},
		{line: "rm -r / x", want: Deny, rule: "path-outside-workspace"},
		{line: "make", want: Deny, rule: "default-deny", why: `no commands rule matches "make"`},
		{line: "gofmt -w main.go", want: Deny, rule: "default-deny"},
		{line: "bash build.py", want: Deny, rule: "default-deny"},
		{line: "sh build.sh", want: Deny, rule: "default-deny"},
		{argv: []string{}, want: Deny, rule: "empty-command"},
		{argv: []string{""}, want: Deny, rule: "empty-command"},
	})
}

// Attempts to get a denied program past the policy.
func TestCheckCommandBypasses(t *testing.T) {
	t.Parallel()
	runCommandCases(t, loadTest(t), []cmdCase{
		// Quoting does not hide a program's name.
		{line: "g'i't push", want: Ask, rule: `commands.ask: "git * push *"`},
		{line: `c"u"rl x`, want: Deny, rule: `commands.deny: "curl *"`},
		{line: `\curl x`, want: Deny, rule: `commands.deny: "curl *"`},
		// Programs named by path match only rules naming that path.
		{line: "/usr/bin/curl x", want: Deny, rule: "default-deny", why: "named by a path"},
		{line: "./go test", want: Deny, rule: "default-deny", why: "named by a path"},
		{line: "bin/go test", want: Deny, rule: "default-deny"},
		{line: "/tmp/go test", want: Deny, rule: "path-outside-workspace"},
		{line: "./bin/../bin/tool x", want: Deny, rule: "default-deny"},
		// Wrappers are judged as what they run.
		{line: "env -i sh -c 'curl x'", want: Deny, rule: `commands.deny: "curl *"`},
		{line: "env FOO=1 curl x", want: Deny, rule: "variable-not-allowed", why: "FOO"},
		{line: "env LANG=C curl x", want: Deny, rule: `commands.deny: "curl *"`},
		{line: "env rm x", want: Ask, rule: `commands.ask: "rm *"`},
		{line: "env GOOS=linux go build ./...", want: Allow, rule: `commands.allow: "go build *"`},
		{line: "env -u HOME -C sub go test", want: Allow},
		{line: "env -S 'curl x'", want: Deny, rule: "spec"},
		{line: "env LD_PRELOAD=./x.so go test", want: Deny, rule: "variable-not-allowed"},
		{line: "env PATH=.:/usr/bin go test", want: Deny, rule: "variable-not-allowed"},
		{line: "env GIT_SSH_COMMAND=x git status", want: Deny, rule: "variable-not-allowed"},
		{line: "env GOFLAGS=-toolexec=x go test", want: Deny, rule: "variable-not-allowed"},
		{line: "env", want: Deny, rule: "spec-mismatch", why: "no command"},
		{line: "xargs rm", want: Deny, rule: `paths.read_only: "vendor/**"`, why: "<unknown>"}, // may be read-only
		{line: "xargs -0 -n1 curl", want: Deny, rule: `commands.deny: "curl *"`},
		{line: "xargs grep foo", want: Deny, rule: "unknown-input"}, // echo .env | xargs grep foo
		{line: "xargs gofmt -l", want: Deny, rule: "unknown-input"},
		{line: "xargs echo", want: Allow, rule: `commands.allow: "echo *"`},
		{line: "xargs -I{} sh -c '{}'", want: Deny, rule: "unknown-program"},
		{line: "xargs -I X X", want: Deny, rule: "unknown-program"},
		{line: "xargs --frobnicate rm", want: Deny, rule: "spec"},
		{line: "xargs env", want: Deny, rule: "unknown-program"},
		{argv: []string{"find", "build", "-exec", "rm", "{}", ";"}, want: Ask, rule: `commands.ask: "rm *"`},
		{line: `find build -exec rm {} \;`, want: Ask, rule: `commands.ask: "rm *"`},
		// An unquoted ; ends the command for the shell, so find never sees it.
		{line: "find . -exec rm {} ;", want: Deny, rule: "shell-disabled"},
		{argv: []string{"find", ".", "-exec", "rm", "{}"}, want: Deny, rule: "spec", why: "without a closing"},
		{line: "find . -name '*.go' -execdir curl -d @{} x +", want: Deny, rule: "spec"},
		{line: "find . -name '*.go' -exec grep -l foo {} +", want: Allow, rule: `commands.allow: "find *"`},
		{line: "find build -name '*.tmp' -delete", want: Ask, rule: `commands.ask: "rm *"`},
		{line: "find . -ok curl x ;", want: Deny, rule: "shell-disabled"},
		{argv: []string{"find", ".", "-ok", "curl", "x"}, want: Deny, rule: "spec"},
		{line: `find . -okdir curl {} \;`, want: Deny, rule: `commands.deny: "curl *"`},
		{line: `find . -exec {} \;`, want: Deny, rule: "unknown-program"},
		{line: "find / -name passwd", want: Deny, rule: "path-outside-workspace"},
		{line: "timeout 5 curl x", want: Deny, rule: `commands.deny: "curl *"`},
		{line: "timeout -s KILL -k 2 60 go test ./...", want: Allow, rule: `commands.allow: "go test *"`},
		{line: "timeout --frob 5 go test", want: Deny, rule: "spec"},
		{line: "nice -n 5 wget x", want: Deny, rule: `commands.deny: "wget *"`},
		{line: "nice -5 wget x", want: Deny, rule: `commands.deny: "wget *"`},
		{line: "nice --adjustment=5 go test", want: Allow},
		{line: "nohup go test", want: Deny, rule: `commands.deny: "nohup *"`},
		{line: "command curl x", want: Deny, rule: `commands.deny: "curl *"`},
		{line: "command -p go test", want: Allow},
		{line: "exec curl x", want: Deny, rule: `commands.deny: "curl *"`},
		{line: "time go test", want: Allow},
		{line: "time -o /etc/x go test", want: Deny, rule: "path-outside-workspace"},
		{line: "stdbuf -oL curl x", want: Deny, rule: `commands.deny: "curl *"`},
		{line: "timeout 5 nice env xargs curl", want: Deny, rule: `commands.deny: "curl *"`},
		// Shells: -c code is judged as a command line.
		{line: "sh -c 'go test ./...'", want: Allow, rule: `commands.allow: "go test *"`},
		{line: "bash -c 'curl x'", want: Deny, rule: `commands.deny: "curl *"`},
		{line: "bash -lc 'go test'", want: Deny, rule: "spec"},
		{line: "bash -i -c 'go test'", want: Deny, rule: "spec"},
		{line: "bash --rcfile x.sh -c 'go test'", want: Deny, rule: "spec"},
		{line: "bash -ec 'curl x'", want: Deny, rule: `commands.deny: "curl *"`},
		{line: "bash -e -c 'go test ./...'", want: Allow},
		{line: "bash -o pipefail -c 'curl x'", want: Deny, rule: `commands.deny: "curl *"`},
		{line: "sh -c 'go test | tail'", want: Deny, rule: "shell-disabled"},
		{line: "sh -c", want: Deny, rule: "spec"},
		{line: "dash -c 'sh -c \"sh -c curl\"'", want: Deny, rule: `commands.deny: "curl *"`},
		// Inline interpreter code needs a rule naming the flag.
		{line: "python3 -c 'import os'", want: Ask, rule: `commands.ask: "python3 -c *"`},
		{line: "python3 -Bc 'import os'", want: Deny, rule: "inline-code"},
		{line: "python -c 'import os'", want: Deny, rule: "inline-code"},
		{line: "python3.12 -c 'import os'", want: Deny, rule: "inline-code"},
		{line: "python3 -W ignore -c 'import os'", want: Deny, rule: "inline-code"},
		{line: "python3 -m pytest -c setup.cfg", want: Allow, rule: `commands.allow: "python3 -m pytest *"`},
		{line: "node -e 'require(1)'", want: Deny, rule: "inline-code"},
		{line: "node --eval=x", want: Deny, rule: "inline-code"},
		{line: "node -p 1", want: Deny, rule: "inline-code"},
		{line: "perl -e print", want: Allow, rule: `commands.allow: "perl -e print*"`},
		{line: "perl -ne print f", want: Deny, rule: "inline-code"},
		{line: "perl -E 'system 1'", want: Deny, rule: "inline-code"},
		{line: "ruby -e 'x'", want: Deny, rule: "inline-code"},
		// git options that run programs through configuration.
		{line: "git -c core.pager=sh log", want: Deny, rule: "spec"},
		{line: "git -ccore.pager=sh log", want: Deny, rule: "spec"},
		{line: "git --config-env=core.pager=X log", want: Deny, rule: "spec"},
		{line: "git --exec-path=. status", want: Deny, rule: "spec"},
		{line: "git log --ext-diff -c", want: Deny, rule: "spec", why: "diff.external"},
		{line: "git log --no-ext-diff -c", want: Allow},
		{line: "git diff --extcmd=sh", want: Deny, rule: "spec"},
		{line: "git status --upload-pack=x", want: Deny, rule: "spec"},
		{line: "git -C sub push", want: Deny, rule: "spec", why: "another folder"},
		{line: "git push origin main", want: Ask, rule: `commands.ask: "git * push *"`},
		// sed scripts that execute or write outside.
		{line: "sed -n 1,5p main.go", want: Allow, rule: `commands.allow: "sed *"`},
		{line: "sed 's/a\\/b/c/g' main.go", want: Allow},
		{line: "sed -i.bak -e 's/x/y/' -e '/^$/d' main.go", want: Allow},
		{line: "sed -e 's/x/y/e' f", want: Deny, rule: "sed-script", why: "e flag"},
		{line: "sed 's|x|y|ge' f", want: Deny, rule: "sed-script"},
		{line: "sed '1e id' f", want: Deny, rule: "sed-script", why: "e command"},
		{line: "sed -n '/x/{e date\n}' f", want: Deny, rule: "sed-script"},
		{line: "sed --expression='e id' f", want: Deny, rule: "sed-script"},
		{line: "sed -ne 'e id' f", want: Deny, rule: "sed-script"},
		{line: "sed 's/x/y/w /etc/cron.d/x' f", want: Deny, rule: "path-outside-workspace"},
		{line: "sed 'w out.txt' f", want: Allow},
		{line: "sed '1r /etc/shadow' f", want: Deny, rule: "path-outside-workspace"},
		{line: "sed -f script.sed f", want: Deny, rule: "spec", why: "from a file"},
		{line: "sed -ie 's/x/y/' f", want: Allow}, // -i with suffix "e"
		// Path arguments stay inside the workspace or read-only folders.
		{line: "cat ../../etc/passwd", want: Deny, rule: "path-outside-workspace", why: `"../../etc/passwd"`},
		{line: "cat a/../../x", want: Deny, rule: "path-outside-workspace"},
		{line: "cat a/../b", want: Allow},
		{line: "go build --file=/etc/shadow", want: Deny, rule: "path-outside-workspace", why: `"/etc/shadow"`},
		{line: "go test -coverprofile=../c.out", want: Deny, rule: "path-outside-workspace"},
		{line: "go build -o/tmp/x", want: Deny, rule: "path-outside-workspace"},
		{line: "go build -o /tmp/x", want: Deny, rule: "path-outside-workspace"},
		{line: "cat ~/.ssh/id_rsa", want: Deny, rule: "path-outside-workspace", why: `"~/.ssh/id_rsa"`},
		{line: "cat ~", want: Deny, rule: "path-outside-workspace"},
		{line: "cat ~root/x", want: Deny, rule: "path-outside-workspace"},
		{line: "cat --in=~/x", want: Deny, rule: "path-outside-workspace"},
		{line: "cat ~/.cache/go-build/ab", want: Allow},
		{line: "ls /usr/local/go/src", want: Allow},
		{line: "cat /root/go/pkg/mod/x@v1/a.go", want: Allow},
		{line: "cat /root/go/pkg/mod/../../.ssh/id_rsa", want: Deny, rule: "path-outside-workspace"},
		{line: "cat /usrx/y", want: Deny, rule: "path-outside-workspace"},
		{line: "cat /home/me/proj/out/main.go", want: Allow},
		{line: "cat /workspace/main.go", want: Allow},
		{line: "cat /workspace/../etc/passwd", want: Deny, rule: "path-outside-workspace"},
		{line: "cat /home/me/proj/outside", want: Deny, rule: "path-outside-workspace"},
		{line: "go test -o /dev/null", want: Allow},
		{line: "cat .env", want: Deny, rule: `paths.deny: "**/.env"`},
		{line: "cat sub/../.git/config", want: Deny, rule: `paths.deny: ".git/**"`},
		{line: "grep -r tok /workspace/secrets/key", want: Deny, rule: `paths.deny: "secrets/*"`},
		{line: "cat --file=certs/x.pem", want: Deny, rule: `paths.deny: "**/*.pem"`},
		// Shell constructs with shell mode off.
		{line: "echo $(id)", want: Deny, rule: "shell-disabled"},
		{line: "go test > out.txt", want: Deny, rule: "shell-disabled"},
		{line: "ls *.go", want: Deny, rule: "shell-disabled"},
		{line: "go test; curl x", want: Deny, rule: "shell-disabled"},
		{line: "X=1 go test", want: Deny, rule: "shell-disabled"},
		{line: "go test &", want: Deny, rule: "shell-disabled"},
	})
}

func TestCheckCommandShellMode(t *testing.T) {
	t.Parallel()
	runCommandCases(t, shellOn(t), []cmdCase{
		{line: "go test ./... 2>&1 | tail -n 20", want: Allow, rule: `commands.allow: "go test *"`, why: "tail -n 20"},
		{line: "go vet ./... && go test ./...", want: Allow},
		{line: "go test; curl x", want: Deny, rule: `commands.deny: "curl *"`},
		{line: "go test | rm x", want: Ask, rule: `commands.ask: "rm *"`},
		{line: "rm x || curl y", want: Deny, rule: `commands.deny: "curl *"`},
		{line: "echo $(curl x)", want: Deny, rule: "shell-unjudgeable", why: "command substitution"},
		{line: "echo `id`", want: Deny, rule: "shell-unjudgeable"},
		{line: "echo $HOME", want: Deny, rule: "shell-unjudgeable", why: "variable"},
		{line: "$(echo curl) x", want: Deny, rule: "shell-unjudgeable"},
		{line: "echo $((1+2))", want: Deny, rule: "shell-unjudgeable"},
		{line: "ls *.go", want: Allow},
		{line: "*.sh", want: Deny, rule: "unknown-program"},
		{line: "cat /etc/*", want: Deny, rule: "path-outside-workspace"},
		{line: "cat ../*", want: Deny, rule: "path-outside-workspace"},
		{line: "echo hi > out.txt", want: Allow},
		{line: "echo hi >> logs/out.txt", want: Allow},
		{line: "echo hi > /etc/passwd", want: Deny, rule: "path-outside-workspace"},
		{line: "echo hi > ../x", want: Deny, rule: "path-outside-workspace"},
		{line: "echo hi > .env", want: Deny, rule: `paths.deny: "**/.env"`},
		{line: "echo hi > vendor/x.go", want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: "cat < vendor/x.go", want: Allow},
		{line: "cat < /etc/passwd", want: Deny, rule: "path-outside-workspace"},
		{line: "cat < /usr/share/dict/words", want: Allow},
		{line: "echo x > /usr/lib/x", want: Deny, rule: "path-outside-workspace"},
		{line: "go test 2>/dev/null", want: Allow},
		{line: "go test >&2", want: Allow},
		{line: "go test >&file", want: Deny, rule: "shell-unjudgeable"},
		{line: "echo hi > $F", want: Deny, rule: "shell-unjudgeable"},
		{line: "go test &", want: Deny, rule: "shell-background"},
		{line: "curl() { echo; }; curl", want: Deny, rule: "shell-function"},
		{line: "(cd sub && go test ./...)", want: Allow},
		{line: "cd / && ls", want: Deny, rule: "path-outside-workspace"},
		{line: "cd", want: Deny, rule: "default-deny"}, // one plain command: no rule allows cd
		{line: "cd; cat x", want: Deny, rule: "shell-cd"},
		{line: "cd - && cat x", want: Deny, rule: "shell-cd"},
		{line: "cd sub && cat ../../x", want: Deny, rule: "path-outside-workspace"},
		{line: "cd secrets && cat token", want: Deny, rule: `paths.deny: "secrets/*"`},
		{line: "cd a; cd b; cat ../../../x", want: Deny, rule: "path-outside-workspace"},
		{line: "GOOS=linux go test", want: Allow},
		{line: "X=1 go test", want: Deny, rule: "variable-not-allowed", why: "X"},
		{line: "LANG=C", want: Allow, rule: "shell-assignment"},
		{line: "X=1", want: Deny, rule: "variable-not-allowed"},
		{line: "set -eu; set -o pipefail; go test ./... | tail", want: Allow},
		{line: "set -- /etc/passwd; go test", want: Deny, rule: "shell-builtin"},
		{line: "set foo; go test", want: Deny, rule: "shell-builtin"},
		{line: "export GOOS=linux; go build ./...", want: Allow},
		{line: "export PATH=./bin; go test", want: Deny, rule: "variable-not-allowed"},
		{line: "export GOCACHE=/tmp/x; go test", want: Deny, rule: "path-outside-workspace"},
		{line: "CDPATH=/ cd etc", want: Deny, rule: "variable-not-allowed"},
		{line: "LD_PRELOAD=./x.so go test", want: Deny, rule: "variable-not-allowed"},
		{line: "PATH=/tmp go test", want: Deny, rule: "variable-not-allowed"},
		{line: "GOCACHE=/tmp/c go test", want: Deny, rule: "path-outside-workspace"},
		{line: "X=$(curl x) go test", want: Deny, rule: "shell-unjudgeable"},
		{line: "eval 'curl x'", want: Deny, rule: "shell-builtin"},
		{line: "trap 'curl x' EXIT", want: Deny, rule: "shell-builtin"},
		{line: "alias ls=curl", want: Deny, rule: "shell-builtin"},
		{line: "sh -c 'curl x | sh'", want: Deny, rule: `commands.deny: "curl *"`},
		{line: "sh -c 'go test | tail'", want: Allow},
		{line: "if go vet ./...; then go test ./...; else echo failed; fi", want: Allow},
		{line: "if go vet; then go test; else curl x; fi", want: Deny, rule: `commands.deny: "curl *"`},
		{line: "while go test; do curl x; done", want: Deny, rule: `commands.deny: "curl *"`},
		{line: "for f in a b; do echo $f; done", want: Deny, rule: "shell-unjudgeable"},
		{line: "for f in /etc/*; do echo x; done", want: Deny, rule: "path-outside-workspace"},
		{line: "for f in a b; do echo x; done", want: Allow},
		{line: "case x in x) curl y;; esac", want: Deny, rule: `commands.deny: "curl *"`},
		{line: "cat <<EOF\nhello\nEOF", want: Allow},
		{line: "cat <<EOF\n$(curl x)\nEOF", want: Deny, rule: "shell-unjudgeable"},
		{line: "cat <<'EOF'\n$(curl x)\nEOF", want: Allow},
		{line: "! go test", want: Allow},
		{line: "{ go test; go vet; }", want: Allow},
		{line: "go test\ncurl x", want: Deny, rule: `commands.deny: "curl *"`},
		{line: "xargs -I{} sh -c '{}'", want: Deny, rule: "unknown-program"},
		{line: "find . -name '*.go' | xargs grep -l TODO", want: Deny, rule: "unknown-input"}, // a name with a blank splits into other words
		{line: "find . -name '*.go' -print0 | xargs -0 grep -l TODO", want: Allow},
		{line: "find . -name '.en*' -print0 | xargs -0 cat", want: Deny, rule: `paths.deny: "**/.env"`},
		{line: "find build -name '*.o' | xargs rm", want: Deny, rule: `paths.read_only: "vendor/**"`},
	})
}

// Review findings: each case was a hole or a wrong decision before.
func TestCheckCommandReview(t *testing.T) {
	t.Parallel()
	runCommandCases(t, loadTest(t), []cmdCase{
		// An option cluster with a value glued on is path-checked.
		{line: "grep -rf/etc/passwd .", want: Deny, rule: "path-outside-workspace", why: `"/etc/passwd"`},
		{line: "grep -rn~/x .", want: Deny, rule: "path-outside-workspace"},
		{line: "grep -rn foo .", want: Allow},
		{line: "go test -run=TestX/a -count=1 ./...", want: Allow},
		// paths.read_only protects against programs that write their operands.
		{line: "rm vendor/x.go", want: Deny, rule: `paths.read_only: "vendor/**"`, why: "read-only"},
		{line: "rm -rf vendor", want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: "rm -r .", want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: "rm -- tests/a/x_test.go", want: Deny, rule: `paths.read_only: "tests/**/*_test.go"`},
		{line: "rm -rf build", want: Ask, rule: `commands.ask: "rm *"`},
		{line: "rm tests/a/helper.go", want: Ask},
		{line: "env -C vendor rm x.go", want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: "find vendor -name '*.go' -delete", want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: "find build -name '*.o' -delete", want: Ask, rule: `commands.ask: "rm *"`},
		{line: `find . -name '*.o' -exec rm {} \;`, want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: "xargs rm", want: Deny, rule: `paths.read_only: "vendor/**"`, why: "<unknown>"},
		{line: "sed -i s/a/b/ vendor/x.go", want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: "sed --in-place=.bak s/a/b/ tests/x_test.go", want: Deny, rule: `paths.read_only: "tests/**/*_test.go"`},
		{line: "sed -n 1p vendor/x.go", want: Allow},
		{line: "sed s/a/b/ vendor/x.go", want: Allow},
		// Programs that write a file named by an option.
		{line: "sort -o vendor/list.txt x", want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: "sort --output=vendor/list.txt x", want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: "uniq x vendor/list.txt", want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: "go build -o vendor/app .", want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: "go test -coverprofile=vendor/c.out ./...", want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: "find . -name x -fprint vendor/list", want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: "gofmt -l -w .", want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: "time -o vendor/t.txt go test", want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: "time -o t.txt go test", want: Allow},
		{line: "timeout -sKILL 5 go test", want: Allow},
		{line: "exec -a x go test", want: Allow},
		{line: "command -v curl", want: Deny, rule: "default-deny"},                    // a lookup, by the rules
		{line: "sort -o sorted.txt vendor/list.txt", want: Deny, rule: "default-deny"}, // reads vendor: fine, but no rule
		{line: "go build -o bin/app ./vendor/x", want: Allow},
		{line: "go test -coverprofile=c.out ./...", want: Allow},
		{line: "gofmt -l vendor", want: Allow},
		{line: "find vendor -name '*.go' -print", want: Allow},
		// Read-only folders outside the workspace are for reading.
		{line: "cp x /usr/local/go/bin/go", want: Deny, rule: "path-outside-workspace", why: "for reading"},
		{line: "mkdir -p ~/.cache/go-build/x", want: Deny, rule: "path-outside-workspace"},
		{line: "go build -o /usr/local/bin/app .", want: Deny, rule: "path-outside-workspace"},
		{line: "go build -o /dev/null .", want: Allow},
		{line: "cp /usr/share/dict/words .", want: Deny, rule: "default-deny"}, // reading is fine; no rule for cp
		// Links to read-only paths would let later commands write them.
		{line: "ln -s vendor/x.go y.go", want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: "ln vendor/x.go y.go", want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: "ln -s vendor lib", want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: "cp -al vendor v2", want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: "cp -r vendor v2", want: Deny, rule: "default-deny"},     // copying is reading: no rule for cp
		{line: "ln -s x.go sub/y.go", want: Deny, rule: "default-deny"}, // no rule for ln
		// find -execdir runs in folders the policy cannot know.
		{line: `find . -name HEAD -execdir cat config \;`, want: Deny, rule: "wrapper-option"},
		{line: `find vendor -name '*.go' -execdir rm {} \;`, want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: `find . -name '*.go' -execdir gofmt -l {} +`, want: Allow},
		// git object names carry paths.
		{line: "git show HEAD:.env", want: Deny, rule: `paths.deny: "**/.env"`},
		{line: "git log -p HEAD~3:sub/.env", want: Deny, rule: `paths.deny: "**/.env"`},
		{line: "git diff :0:.git/config", want: Deny, rule: `paths.deny: ".git/**"`},
		{line: "git log HEAD:main.go", want: Allow},
		{line: "git diff --output=vendor/x.patch", want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: "git init --template=tmpl", want: Deny, rule: "spec"},
		{line: "git log --grep 'fix: see https://x'", want: Allow},
	})
	// With the working folder set, relative words are judged from it.
	p := loadTest(t)
	for _, tt := range []struct {
		dir, line string
		want      Verdict
		rule      string
	}{
		{"vendor", "rm x.go", Deny, `paths.read_only: "vendor/**"`},
		{"sub", "cat ../.git/config", Deny, `paths.deny: ".git/**"`},
		{"sub", "cat ../../x", Deny, "path-outside-workspace"},
		{"sub", "cat ../main.go", Allow, `commands.allow: "cat *"`},
		{"../x", "cat main.go", Deny, "path-outside-workspace"},
	} {
		cmd, _ := ParseCommand(tt.line)
		s := testScope
		s.Dir = tt.dir
		if d := p.CheckCommand(cmd, s); d.Verdict != tt.want || !strings.HasPrefix(d.Rule, tt.rule) {
			t.Errorf("in %s: %q = %v %s: %s; want %v %s", tt.dir, tt.line, d.Verdict, d.Rule, d.Reason, tt.want, tt.rule)
		}
	}
}

func TestCheckCommandReviewShell(t *testing.T) {
	t.Parallel()
	runCommandCases(t, shellOn(t), []cmdCase{
		// Globs are judged by every path they could expand to.
		{line: "cat .e*", want: Deny, rule: `paths.deny: "**/.env"`},
		{line: "cat sub/.en?", want: Deny, rule: `paths.deny: "**/.env"`},
		{line: "cat .gi[t]/config", want: Deny, rule: `paths.deny: ".git/**"`},
		{line: "cat certs/*.pem", want: Deny, rule: `paths.deny: "**/*.pem"`},
		{line: "cat certs/*", want: Allow}, // covers, like grep -r, but does not name them
		{line: "cat .*/etc/passwd", want: Deny, rule: "path-outside-workspace", why: ".."},
		{line: "ls .?", want: Deny, rule: "path-outside-workspace"},
		{line: "cat sub/.*/x", want: Deny, rule: "path-outside-workspace"},
		{line: "cat *", want: Allow}, // * does not match dot files
		{line: "ls */*.go", want: Allow},
		{line: "cat *.go", want: Allow},
		{line: "rm -rf *", want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: "rm vendor/*.go", want: Deny, rule: `paths.read_only: "vendor/**"`},
		{line: "rm build/*.o", want: Ask},
		{line: "cd vendor && rm x.go", want: Deny, rule: `paths.read_only: "vendor/**"`},
		// Two rules that ask are both named, so "always" for one does not
		// approve the other.
		{line: "rm x; go get y", want: Ask, rule: `commands.ask: "rm *"`, why: "go get y"},
		{line: "GLOBIGNORE=x; cat *", want: Deny, rule: "variable-not-allowed"},
	})
	p := shellOn(t)
	cmd, _ := ParseCommand("rm x && go get y")
	if d := p.CheckCommand(cmd, testScope); !strings.Contains(d.Rule, `"rm *"`) || !strings.Contains(d.Rule, `"go get *"`) {
		t.Errorf("two asks: rule %q names only one of them", d.Rule)
	}
}

// TestQuoteArgv: what QuoteArgv writes, ParseCommand reads back as the same
// words, as one plain command.
func TestQuoteArgv(t *testing.T) {
	t.Parallel()
	for _, argv := range [][]string{
		{"go", "test", "./..."},
		{"go", "test", "-run", "TestA|TestB", "-json"},
		{"echo", "it's", "a b", "", "$HOME", "*.go", `back\slash`, "x;y", "~/x"},
		{"python3", "-m", "pytest", "-k", "not slow and 'q'"},
	} {
		line := QuoteArgv(argv)
		cmd, err := ParseCommand(line)
		if err != nil || cmd.Shell || !slices.Equal(cmd.Argv, argv) {
			t.Errorf("QuoteArgv(%q) = %s, read back as %q (shell %v, %v)", argv, line, cmd.Argv, cmd.Shell, err)
		}
	}
}
