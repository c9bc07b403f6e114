package policy

import "testing"

// Inside an enforcing sandbox only which programs run is judged: each
// program of the line, what wrappers and substitutions run, and deny and
// ask rules.
func TestEnforcedDecisions(t *testing.T) {
	t.Parallel()
	p := loadTest(t) // commands.shell: false
	s := testScope
	s.Enforced = true
	tests := []struct {
		line string
		want Verdict
	}{
		{"go build -o /tmp/app -ldflags=-s .", Allow},
		{"CGO_ENABLED=0 GOFLAGS=-mod=mod go test -count=1 ./... > out.txt 2>&1", Allow},
		{"go vet ./... && go test ./... | tail -5", Allow},
		{"cd sub && go test ./...", Allow},
		{"for f in *.go; do gofmt -l \"$f\"; done", Allow},
		{"go build ./... & go vet ./...", Allow},
		{"go test ./...; curl https://example.com", Deny},
		{"echo $(curl https://example.com)", Deny},
		{"cat \"$(curl https://example.com)\"", Deny},
		{"env GOFLAGS=-mod=mod curl x", Deny},
		{"sh -c 'curl x'", Deny},
		{"find . -name '*.go' -exec curl {} \\;", Deny},
		{"$CC main.c", Deny},
		{"f() { curl x; }; f", Deny},
		{"eval 'curl x'", Deny},
		{"nc -l 80", Deny},
	}
	for _, tt := range tests {
		cmd, err := ParseCommand(tt.line)
		if err != nil {
			t.Errorf("%q: %v", tt.line, err)
			continue
		}
		if d := p.CheckCommand(cmd, s); d.Verdict != tt.want || d.Rule == "" || d.Reason == "" {
			t.Errorf("%q: %v by %s (%s), want %v", tt.line, d.Verdict, d.Rule, d.Reason, tt.want)
		}
		// Without the sandbox every one of them is judged whole: none of
		// the shell forms passes with commands.shell off.
		if d := p.CheckCommand(cmd, testScope); tt.want == Allow && cmd.Shell && d.Verdict == Allow {
			t.Errorf("%q: allowed without an enforcing sandbox", tt.line)
		}
	}
}
