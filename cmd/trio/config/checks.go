package config

import (
	"slices"
	"strings"

	"github.com/trioagent/trio/critic"
	"github.com/trioagent/trio/tools"
)

// Checks turns on the Critic's layers beyond the tests, all off by
// default: the lint check, the reviewer of passing changes, and one
// re-plan before a run gives up.
type Checks struct {
	Lint   Lint   `yaml:"lint"`
	Review Review `yaml:"review"`
	// Replan lets the Planner revise the remaining steps once after
	// same_failure or a spent repair budget.
	Replan bool `yaml:"replan"`
}

// Lint is the lint check (agent.WithLint).
type Lint struct {
	Enabled bool `yaml:"enabled"`
	// Blocking names the linters whose findings fail the round (see `trio
	// tools`, run_linter); unset keeps the defaults, [] makes all advisory.
	Blocking []string `yaml:"blocking"`
}

// Review is the reviewer (agent.WithReview).
type Review struct {
	Enabled bool `yaml:"enabled"`
	// BlockAt is the lowest severity that sends the Worker back (info,
	// low, medium, high, critical); empty makes the review advisory.
	BlockAt string `yaml:"block_at"`
	// MaxRounds bounds the review rounds (default 1).
	MaxRounds int `yaml:"max_rounds"`
}

func (c *checker) checkChecks(k *Checks) {
	known := tools.LinterNames()
	for i, n := range k.Lint.Blocking {
		if !slices.Contains(known, n) {
			c.fail("checks.lint.blocking", "item %d: %q is not a linter; want one of %s", i+1, n, strings.Join(known, ", "))
		}
	}
	if k.Lint.Blocking != nil && !k.Lint.Enabled {
		c.fail("checks.lint.blocking", "set checks.lint.enabled: true, or remove blocking")
	}
	r := k.Review
	if r.BlockAt != "" {
		if _, err := critic.ParseSeverity(r.BlockAt); err != nil {
			c.fail("checks.review.block_at", "%v", err)
		}
	}
	c.between("checks.review.max_rounds", r.MaxRounds, MaxRepairRounds)
	if (r.BlockAt != "" || r.MaxRounds != 0) && !r.Enabled {
		c.fail("checks.review", "set checks.review.enabled: true, or remove block_at and max_rounds")
	}
}
