package tools

import (
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
)

// PathRules is p's path rules as a sandbox lays them out: what the file
// tools may not read is Hidden from commands, what they may not write is
// ReadOnly. Both ask p.CheckPath, so a rule means the same for file tools
// and for commands (a paths.allow list hides what it does not name).
func PathRules(p *policy.Policy) sandbox.PathRules {
	return func(rel string) sandbox.Access {
		if p.CheckPath(rel, policy.Read).Verdict == policy.Deny {
			return sandbox.Hidden
		}
		if p.CheckPath(rel, policy.Write).Verdict == policy.Deny {
			return sandbox.ReadOnly
		}
		return sandbox.Writable
	}
}
