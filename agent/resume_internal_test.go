package agent

import (
	"testing"

	"github.com/trioagent/trio/planner"
)

// The resume message names the repair round while repairing, and never a
// step past the plan's end.
func TestResumeText(t *testing.T) {
	t.Parallel()
	plan := &planner.Plan{Steps: []planner.Step{{ID: 1}, {ID: 2}}}
	tests := []struct {
		name string
		st   state
		want string
	}{
		{"repair after the last step", state{Phase: phaseRepair, Plan: plan, Step: 2, RepairRound: 1}, "resuming at repair round 1"},
		{"building", state{Phase: phaseBuild, Plan: plan, Step: 1}, "resuming at phase build, step 2 of 2"},
		{"build with every step done", state{Phase: phaseBuild, Plan: plan, Step: 2}, "resuming at phase build"},
		{"checks", state{Phase: phaseCheck, Plan: plan, Step: 2}, "resuming at phase check"},
		{"before the plan", state{Phase: phasePlan}, "resuming at phase plan"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := resumeText(&tt.st); got != tt.want {
				t.Errorf("resumeText = %q, want %q", got, tt.want)
			}
		})
	}
}
