package main

import (
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/planner"
)

// An unfinished run's place is its repair round while repairing, and never
// a step past the plan's end.
func TestWhereText(t *testing.T) {
	t.Parallel()
	plan := &planner.Plan{Steps: []planner.Step{{ID: 1}, {ID: 2}}}
	tests := []struct {
		name string
		r    agent.Report
		want string
	}{
		{"repair", agent.Report{Phase: "repair", Plan: plan, Metrics: agent.Metrics{StepsDone: 2, RepairRounds: 1}}, "phase repair, round 1"},
		{"building", agent.Report{Phase: "build", Plan: plan, Metrics: agent.Metrics{StepsDone: 1}}, "phase build, step 2 of 2"},
		{"build with every step done", agent.Report{Phase: "build", Plan: plan, Metrics: agent.Metrics{StepsDone: 2}}, "phase build"},
		{"checks", agent.Report{Phase: "check", Plan: plan, Metrics: agent.Metrics{StepsDone: 2}}, "phase check"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := whereText(&tt.r); got != tt.want {
				t.Errorf("whereText = %q, want %q", got, tt.want)
			}
		})
	}
}
