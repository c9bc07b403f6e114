package configs_test

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/trioagent/trio/policy"
)

// The floors of TestLegitCommands: the share of testdata/legit-commands.txt
// the shipped unattended policy allows unattended, inside a sandbox kind
// that enforces the policy's rules (containerd, userns, landlock) and with
// local, where every argument is judged. Every denial names its rule and
// says what would allow the command.
const (
	legitFloorEnforced = 0.98
	legitFloorLocal    = 0.93
)

func TestLegitCommands(t *testing.T) {
	t.Parallel()
	p, err := policy.Load("policy.unattended.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("testdata/legit-commands.txt")
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
	if len(lines) < 150 {
		t.Fatalf("%d commands, want at least 150", len(lines))
	}
	for _, kind := range []struct {
		name     string
		enforced bool
		floor    float64
	}{{"enforced", true, legitFloorEnforced}, {"local", false, legitFloorLocal}} {
		t.Run(kind.name, func(t *testing.T) {
			allowed := 0
			var denied []string
			for _, l := range lines {
				cmd, err := policy.ParseCommand(l)
				if err != nil {
					t.Errorf("%q: %v", l, err)
					continue
				}
				s := scope
				s.Enforced = kind.enforced
				d := p.CheckCommand(cmd, s)
				if d.Verdict == policy.Allow {
					allowed++
					continue
				}
				if d.Rule == "" || !strings.Contains(d.Reason, "to allow it: ") {
					t.Errorf("%q: a denial without its rule, or a reason that does not say what would allow it: %+v", l, d)
				}
				denied = append(denied, fmt.Sprintf("%s: %s (%s)", l, d.Rule, d.Reason))
			}
			share := float64(allowed) / float64(len(lines))
			t.Logf("%s: %d of %d allowed (%.1f %%)", kind.name, allowed, len(lines), 100*share)
			if share < kind.floor {
				t.Errorf("%.1f %% allowed, want at least %.0f %%; denied:\n%s", 100*share, 100*kind.floor, strings.Join(denied, "\n"))
			} else if testing.Verbose() {
				t.Logf("denied:\n%s", strings.Join(denied, "\n"))
			}
		})
	}
}
