package main

import (
	"strings"
	"testing"
)

// TestTemporalUsageErrors: the Temporal commands refuse what they cannot
// use before they dial anything (exit 3, naming what is wrong).
func TestTemporalUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"worker"}, "no store: give --store DIR or set TRIO_STORE"},
		{[]string{"worker", "--parallel", "0", "--store", "s"}, "--parallel 0: want at least 1"},
		{[]string{"run", "--temporal", "--goal", "x"}, "no store: give --store DIR or set TRIO_STORE"},
		{[]string{"run", "--temporal"}, "no goal"},
		{[]string{"confirm", "r1", "maybe"}, `answer "maybe": want yes, no or always`},
		{[]string{"confirm"}, "accepts between 1 and 2 arg"},
		{[]string{"status"}, "accepts 1 arg"},
		{[]string{"run", "--temporal", "--goal", "x", "--workspace", "w"}, "--workspace does not go with --temporal"},
		{[]string{"run", "--temporal", "--goal", "x", "--model", "m"}, "--model does not go with --temporal"},
		{[]string{"eval", suiteDir(t), "--temporal", "--tasks", "py-roman"}, "no store: give --store DIR or set TRIO_STORE"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			r := trio(t, dir, []string{"TRIO_STORE="}, tt.args...)
			if r.code != exitConfig || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, want 3 with %q:\n%s", r.code, tt.want, r.stderr)
			}
		})
	}
}
