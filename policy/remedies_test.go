package policy

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// Every rule a built-in check denies with says what would allow the
// command: remedies.txt has a line for each rule name the code uses.
func TestEveryRuleHasARemedy(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	uses := regexp.MustCompile(`deny\("([a-z-]+)"|Rule = "([a-z-]+)"|Rule: +"([a-z-]+)"`)
	allows := map[string]bool{"find": true, "shell": true, "workspace": true, "tools-default-allow": true, "shell-assignment": true, "shell-set": true}
	for _, f := range files {
		if filepath.Ext(f) != ".go" || regexp.MustCompile(`_test\.go$`).MatchString(f) {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range uses.FindAllStringSubmatch(string(src), -1) {
			rule := m[1] + m[2] + m[3]
			if allows[rule] {
				continue
			}
			if _, ok := remedies()[rule]; !ok {
				t.Errorf("%s: rule %q has no line in remedies.txt", f, rule)
			}
		}
	}
	d := deny("default-deny", "no commands rule matches %q", "frob")
	if got := withRemedy(d.Rule, d.Reason); got == d.Reason {
		t.Errorf("default-deny's reason gained no remedy: %q", got)
	}
	if got := withRemedy(`commands.deny: "curl *" (policy.yaml:9)`, "x"); got == "x" {
		t.Errorf("a commands.deny rule's reason gained no remedy: %q", got)
	}
}
