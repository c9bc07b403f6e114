package configs_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/trioagent/trio/policy"
)

var scope = policy.Scope{Workspace: "/home/me/out", Aliases: []string{"/workspace"}}

type cmdCase struct {
	line string
	want policy.Verdict
}

type pathCase struct {
	path string
	a    policy.Access
	want policy.Verdict
}

func check(t *testing.T, p *policy.Policy, cmds []cmdCase, paths []pathCase) {
	t.Helper()
	for _, tt := range cmds {
		cmd, err := policy.ParseCommand(tt.line)
		if err != nil {
			t.Errorf("ParseCommand(%q): %v", tt.line, err)
			continue
		}
		d := p.CheckCommand(cmd, scope)
		if d.Verdict != tt.want {
			t.Errorf("%s: %q = %v (%s: %s), want %v", p.Name(), tt.line, d.Verdict, d.Rule, d.Reason, tt.want)
		}
	}
	for _, tt := range paths {
		if d := p.CheckPath(tt.path, tt.a); d.Verdict != tt.want {
			t.Errorf("%s: %v %q = %v (%s), want %v", p.Name(), tt.a, tt.path, d.Verdict, d.Rule, tt.want)
		}
	}
}

// Commands and paths every shipped policy must deny.
var alwaysDenied = []cmdCase{
	{"curl https://example.com", policy.Deny},
	{"/usr/bin/curl https://example.com", policy.Deny},
	{"sudo go test", policy.Deny},
	{"ssh host", policy.Deny},
	{"/tmp/go test ./...", policy.Deny},
	{"./.git/hooks/pre-commit", policy.Deny},
	{"env XDG_CONFIG_HOME=. git status", policy.Deny},
	{"git diff --ext-d", policy.Deny},
	{"python3 /usr/lib/python3/http/server.py", policy.Deny},
	{"env -i sh -c 'sudo id'", policy.Deny},
	{"git -c core.pager=sh log", policy.Deny},
	{"sed -e 's/x/y/e' main.go", policy.Deny},
	{"cat ../../etc/passwd", policy.Deny},
	{"go build --file=/etc/shadow", policy.Deny},
	{"cat ~/.ssh/id_rsa", policy.Deny},
	{"go test -exec /tmp/evil ./...", policy.Deny},
	{"go test -toolexec=./evil ./...", policy.Deny},
	{"go test --toolexec=./evil ./...", policy.Deny},
	{"go vet --vettool=./evil ./...", policy.Deny},
	{"go build -ldflags=-extld=./evil .", policy.Deny},
	{"go build -ldflags '-s -extldflags=-fplugin=x.so' .", policy.Deny},
	{"go env -w GOFLAGS=-toolexec=./evil", policy.Deny},
	{"grep -rf/etc/passwd .", policy.Deny},
	{"rm -rf /", policy.Deny},
	{"python3 -c 'import os'", policy.Deny},
	{"node -e 'process.exit(1)'", policy.Deny},
	{"cat .env", policy.Deny},
	{"go test ./... > /etc/x", policy.Deny},
	{"echo $(curl x)", policy.Deny},
}

var alwaysDeniedPaths = []pathCase{
	{".git/config", policy.Read, policy.Deny},
	{".env", policy.Read, policy.Deny},
	{"config/.env", policy.Write, policy.Deny},
	{"tls/server.pem", policy.Read, policy.Deny},
	{"../outside.go", policy.Write, policy.Deny},
	{"/etc/passwd", policy.Read, policy.Deny},
	{"main.go", policy.Write, policy.Allow},
	{"cmd/app/main.go", policy.Read, policy.Allow},
}

func load(t *testing.T, name string) *policy.Policy {
	t.Helper()
	p, err := policy.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func strictCases() ([]cmdCase, []pathCase) {
	return []cmdCase{
			{"go test ./...", policy.Allow},
			{"go build ./...", policy.Allow},
			{"go vet ./...", policy.Allow},
			{"gofmt -l .", policy.Allow},
			{"python3 -m pytest -q", policy.Allow},
			{"python3 -m unittest discover -s tests", policy.Allow},
			{"timeout 60 go test ./...", policy.Allow},
			{"gofmt -l -w .", policy.Deny},
			{"gofmt -l --w=true main.go", policy.Deny},
			{"ls", policy.Deny},
			{"cat main.go", policy.Deny},
			{"go run .", policy.Deny},
			{"go get example.com/m", policy.Deny},
			{"gofmt -w .", policy.Deny},
			{"rm main.go", policy.Deny},
			{"python3 main.py", policy.Deny},
			{"go test ./... | tail", policy.Deny},
			{"npm install", policy.Deny},
			{"./go test ./...", policy.Deny}, // a bare-name rule does not match a program named by path
		}, []pathCase{
			{"vendor/x/x.go", policy.Write, policy.Deny},
			{"vendor/x/x.go", policy.Read, policy.Allow},
			{"go.sum", policy.Write, policy.Deny},
		}
}

func TestStrict(t *testing.T) {
	t.Parallel()
	p := load(t, "policy.strict.yaml")
	if p.Unattended() || p.Shell() || p.Limits().Network {
		t.Errorf("strict: unattended %v shell %v network %v", p.Unattended(), p.Shell(), p.Limits().Network)
	}
	cmds, paths := strictCases()
	check(t, p, append(cmds, alwaysDenied...), append(paths, alwaysDeniedPaths...))
}

// policy.Default is the strict policy, embedded in package policy.
func TestDefaultIsStrict(t *testing.T) {
	t.Parallel()
	cmds, paths := strictCases()
	check(t, policy.Default(), append(cmds, alwaysDenied...), append(paths, alwaysDeniedPaths...))
	strip := func(name string) string {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range strings.Split(string(data), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(l), "#") {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	if strip("policy.strict.yaml") != strip("../policy/default.yaml") {
		t.Error("policy.strict.yaml and policy/default.yaml differ outside comments; keep them in step")
	}
}

func TestUnattended(t *testing.T) {
	t.Parallel()
	p := load(t, "policy.unattended.yaml")
	if !p.Unattended() || !p.Shell() || p.Pipes() || p.Limits().Network {
		t.Errorf("unattended: unattended %v shell %v pipes %v network %v", p.Unattended(), p.Shell(), p.Pipes(), p.Limits().Network)
	}
	if l := p.Limits(); l.Timeout != 300*time.Second || l.Memory != 2<<30 || l.CPUs != 2 || l.Pids != 512 || l.Output != 64<<10 || l.Disk != 4<<30 {
		t.Errorf("unattended limits = %+v", l)
	}
	check(t, p, append([]cmdCase{
		{"go build ./...", policy.Allow},
		{"go test -race ./...", policy.Allow},
		{"go vet ./...", policy.Allow},
		{"go run ./cmd/app --help", policy.Allow},
		{"go mod tidy", policy.Allow},
		{"go mod init example.com/app", policy.Allow},
		{"gofmt -w .", policy.Deny}, // would rewrite vendor/, which is read-only
		{"gofmt -w main.go cmd internal", policy.Allow},
		{"go fmt ./...", policy.Allow},
		{"python3 -m pytest -q", policy.Allow},
		{"python3 -m unittest", policy.Allow},
		{"python3 app.py --help", policy.Allow},
		{"python3 src/app/main.py", policy.Allow},
		{"npm test", policy.Allow},
		{"node --test", policy.Allow},
		{"ls -la", policy.Allow},
		{"cat README.md", policy.Allow},
		{"mkdir -p cmd/app", policy.Allow},
		{"rm build/out.txt", policy.Allow},
		{"git status", policy.Allow},
		{"find . -name '*.go' -exec gofmt -l {} +", policy.Allow},
		{"go get example.com/m", policy.Ask},
		{"pip install requests", policy.Ask},
		{"python3 -m pip install requests", policy.Ask},
		{"npm install left-pad", policy.Ask},
		{"wget https://example.com", policy.Deny},
		{"git push origin main", policy.Deny},
		{"git -C sub push", policy.Deny},
		{"rm -rf .", policy.Deny},
		{"rm -rf ..", policy.Deny},
		{"xargs rm -rf /", policy.Deny},
		{"find build -delete", policy.Allow}, // judged as rm inside the workspace
		{"find . -delete", policy.Deny},      // would delete vendor/, which is read-only
		{"go build -ldflags='-s -w -X main.version=1' .", policy.Allow},
		{"go env GOPATH", policy.Allow},
		{"go test ./... | tail", policy.Allow}, // shell: true, each part judged
		{"go test ./... 2>&1 | tail -n 20", policy.Allow},
		{"go test ./... > out.txt", policy.Allow},
		{"go test ./... > vendor/out.txt", policy.Deny},
		{"go test ./... > /tmp/out.txt", policy.Deny},
		{"go test ./... | sh", policy.Deny},
		{"go test ./... | tee vendor/x", policy.Deny},
		{"ls; go test", policy.Allow},
		{"go vet ./... && go test ./...", policy.Allow},
		{"CGO_ENABLED=0 go build -o bin/app .", policy.Allow},
		{"GOFLAGS=-toolexec=/tmp/x go build .", policy.Deny},
		{"cat $(echo .env)", policy.Deny},
		{"cat .e*", policy.Deny},
		{"go test ./... && go get example.com/m", policy.Ask},
		{"make", policy.Allow},
		{"make SHELL=./x", policy.Deny},
		{"./bin/app --help", policy.Allow}, // a program the run built
		{"./go test ./...", policy.Allow},  // likewise: not the toolchain, the workspace's ./go
		{"python3 --version", policy.Allow},
		{"chmod +x run.sh", policy.Allow},
		{"chmod -R 777 vendor", policy.Deny},
	}, alwaysDenied...), append([]pathCase{
		{"node_modules/x/index.js", policy.Write, policy.Deny},
		{"go.sum", policy.Write, policy.Allow},
	}, alwaysDeniedPaths...))
}

func TestInteractive(t *testing.T) {
	t.Parallel()
	p := load(t, "policy.interactive.yaml")
	if p.Unattended() || !p.Shell() || p.Limits().Network || p.ConfirmTimeout() != 5*time.Minute {
		t.Errorf("interactive: unattended %v shell %v network %v", p.Unattended(), p.Shell(), p.Limits().Network)
	}
	check(t, p, append([]cmdCase{
		{"go test ./... 2>&1 | tail -n 20", policy.Allow},
		{"go vet ./... && go test ./...", policy.Allow},
		{"gofmt -l . | wc -l", policy.Allow},
		{"[ -f go.mod ] && echo ok", policy.Allow},
		{"find . -name '*.go' -print0 | xargs -0 grep -n TODO", policy.Allow},
		// Names printed one per line may split at blanks into other words.
		{"find . -name '*.go' | xargs grep -n TODO", policy.Deny},
		{"ls *.go", policy.Allow},
		{"echo done > status.txt", policy.Allow},
		{"python3 -m pytest -q", policy.Allow},
		{"rm -rf build", policy.Ask},
		{"find build -name '*.tmp' -delete", policy.Ask},
		{"find . -name '*.tmp' | xargs rm", policy.Deny}, // may hit vendor/, which is read-only
		{"cat .e*", policy.Deny},
		{"ls .*", policy.Deny},
		{"rm x; go get y", policy.Ask},
		{"go get example.com/m", policy.Ask},
		{"npm install", policy.Ask},
		{"git push", policy.Ask},
		{"go test ./... && rm -rf build", policy.Ask},
		{"go test ./... ; sudo reboot", policy.Deny},
		{"rm -rf / --no-preserve-root", policy.Deny},
		{"echo x > vendor/a.go", policy.Deny},
		{"go test &", policy.Deny},
	}, alwaysDenied...), append([]pathCase{
		{"vendor/a.go", policy.Write, policy.Deny},
	}, alwaysDeniedPaths...))
}

// The Critic's tests are read-only to the Worker (Policy.WithReadOnly):
// the write-capable commands the unattended policy allows cannot rewrite
// them, and ordinary development commands still run.
func TestUnattendedAcceptanceReadOnly(t *testing.T) {
	t.Parallel()
	p := load(t, "policy.unattended.yaml").WithReadOnly("acceptance/**")
	check(t, p, []cmdCase{
		{"rm acceptance/test_cli.py", policy.Deny},
		{"rm -rf acceptance", policy.Deny},
		{"mv acceptance/test_cli.py x.py", policy.Deny},
		{"mv x.py acceptance/test_cli.py", policy.Deny},
		{"cp x.py acceptance/", policy.Deny},
		{"cp -r fixtures/acceptance .", policy.Deny},
		{"sed -i s/1/2/ acceptance/test_cli.py", policy.Deny},
		{"touch acceptance/new_test.py", policy.Deny},
		{"find acceptance -name '*.py' -delete", policy.Deny},
		{"go test ./...", policy.Allow},
		{"go vet ./...", policy.Allow},
		{"python3 -m pytest -q", policy.Allow},
		{"gofmt -l .", policy.Allow},
		{"ls", policy.Allow},
		{"cat acceptance/test_cli.py", policy.Allow},
		{"mkdir -p pkg/x", policy.Allow},
		{"cp acceptance/test_cli.py /dev/null", policy.Allow},
		{"cp -r src build", policy.Allow},
		{"mv build/app .", policy.Allow},
		{"rm -rf build", policy.Allow},
		{"sed -n 1,20p acceptance/test_cli.py", policy.Allow},
	}, []pathCase{
		{"acceptance/test_cli.py", policy.Write, policy.Deny},
		{"acceptance/test_cli.py", policy.Read, policy.Allow},
	})
}
