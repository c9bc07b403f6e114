package policy_test

import (
	"testing"

	"github.com/trioagent/trio/policy"
)

// A policy's ReadRules, compiled again from what a run folder keeps, deny
// reading exactly the paths the policy's CheckPath denies.
func TestReadRulesMatchCheckPath(t *testing.T) {
	allow, err := policy.Parse("allow.yaml", []byte("version: 1\npaths:\n  deny: [\"**/.env\"]\n  allow: [\"src/**\", \"README.md\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{".env", "a/.env", ".env.local", "config/.env.prod", "key.pem", "id_rsa.pub", ".ssh/config",
		".git/config", "sub/.git/HEAD", "src/main.go", "src/.env", "README.md", "docs/x.md", "bad\xff.txt", `back\slash`, "../up"}
	for _, p := range []*policy.Policy{policy.Default(), allow} {
		f, err := p.ReadRules().Compile()
		if err != nil {
			t.Fatal(err)
		}
		for _, rel := range paths {
			want := p.CheckPath(rel, policy.Read).Verdict == policy.Deny
			if got := f.Denied(rel); got != want {
				t.Errorf("%s: Denied(%q) = %v, CheckPath denies: %v", p.Name(), rel, got, want)
			}
		}
	}
}
