package critic_test

import (
	"fmt"

	"github.com/trioagent/trio/critic"
)

func ExampleFindings_Fingerprint() {
	round := func(d string) critic.Findings {
		return critic.Findings{Verdict: critic.VerdictFail, Checks: []critic.CheckResult{
			{Name: critic.CheckTests, Detail: "go: 3 passed, 1 failed\nTestRender (render_test.go:12): got <p>x</p> (" + d + ")"},
		}}
	}
	// The same failure with different timings is the same failure.
	fmt.Println(round("0.01s").Fingerprint() == round("1.20s").Fingerprint())
	// Output: true
}
