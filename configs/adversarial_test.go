package configs_test

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/trioagent/trio/policy"
)

// TestAdversarialCommands: none of testdata/adversarial-commands.txt, lines
// an attacker would try by program family (options the specs once took for
// operands, values that write files, revisions and pathspecs git reads
// differently, labels sed ends sooner, symlinks followed out of read-only
// folders...), runs unattended under the shipped unattended policy with the
// local kind, where the policy is the only wall: each is denied or asks.
func TestAdversarialCommands(t *testing.T) {
	t.Parallel()
	p, err := policy.Load("policy.unattended.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := commandLines(t, "testdata/adversarial-commands.txt")
	if len(lines) < 100 {
		t.Fatalf("%d commands, want at least 100", len(lines))
	}
	for _, l := range lines {
		cmd, err := policy.ParseCommand(l)
		if err != nil {
			continue // a line that does not parse never runs
		}
		d := p.CheckCommand(cmd, scope)
		if d.Verdict == policy.Allow {
			t.Errorf("%q is allowed (%s: %s)", l, d.Rule, d.Reason)
		}
	}
}

// commandLines reads a list of command lines: one per line, # starts a
// comment line.
func commandLines(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}
