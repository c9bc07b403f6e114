package policy

import (
	"fmt"
	"slices"
)

// ReadRules are the part of a policy that decides which workspace paths
// may be read: paths.deny and paths.allow, as written. A run keeps them
// with its start snapshot, so that whoever reads the run folder later
// (trio diff, the viewer) leaves out the same paths the run could not read.
type ReadRules struct {
	Deny []string `json:"deny,omitempty"`
	// Allow is set when the policy has a paths.allow list (even an empty
	// one): then only the paths it matches may be read.
	Allow []string `json:"allow,omitempty"`
	// HasAllow says the policy had a paths.allow list.
	HasAllow bool `json:"has_allow,omitempty"`
}

// ReadRules returns the policy's rules for reading workspace paths.
func (p *Policy) ReadRules() ReadRules {
	r := ReadRules{HasAllow: p.hasPathAllow}
	for _, x := range p.pathDeny {
		r.Deny = append(r.Deny, x.src)
	}
	for _, x := range p.pathAllow {
		r.Allow = append(r.Allow, x.src)
	}
	return r
}

// ReadFilter is a compiled ReadRules.
type ReadFilter struct {
	deny, allow []glob
	hasAllow    bool
}

// Compile compiles the rules; a glob that does not compile is an error
// naming it.
func (r ReadRules) Compile() (*ReadFilter, error) {
	f := &ReadFilter{hasAllow: r.HasAllow}
	for _, l := range []struct {
		src []string
		dst *[]glob
	}{{r.Deny, &f.deny}, {r.Allow, &f.allow}} {
		for _, s := range slices.Clone(l.src) {
			g, err := compilePathGlob(s)
			if err != nil {
				return nil, fmt.Errorf("policy: path glob %q: %w", s, err)
			}
			*l.dst = append(*l.dst, g)
		}
	}
	return f, nil
}

// Denied reports whether reading rel, a workspace-relative slash path, is
// denied: the same answer as Policy.CheckPath(rel, Read).
func (f *ReadFilter) Denied(rel string) bool {
	clean, ok := cleanRel(rel)
	if !ok {
		return true
	}
	for _, g := range f.deny {
		if g.match(clean) {
			return true
		}
	}
	if !f.hasAllow {
		return false
	}
	for _, g := range f.allow {
		if g.match(clean) {
			return false
		}
	}
	return true
}
