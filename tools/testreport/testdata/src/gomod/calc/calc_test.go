package calc

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(2, 3); got != 5 {
		t.Fatalf("Add(2, 3) = %d, want 5", got)
	}
}

func TestAddTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b int
		want int
	}{{"zero", 0, 0, 0}, {"neg", -1, 1, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Add(tc.a, tc.b); got != tc.want {
				t.Errorf("got %d", got)
			}
		})
	}
}

func TestSkipped(t *testing.T) {
	t.Skip("not on this machine")
}
