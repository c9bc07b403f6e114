package failing

import "testing"

func TestSubOK(t *testing.T) {
	if Sub(0, 0) != 0 {
		t.Fatal("zero")
	}
}

func TestSub(t *testing.T) {
	got := Sub(5, 3)
	if got != 2 {
		t.Errorf("Sub(5, 3) = %d, want 2", got)
	}
	t.Log("second line of output")
}

func TestSubTable(t *testing.T) {
	t.Run("pos", func(t *testing.T) {
		if Sub(1, 1) != 0 {
			t.Fatalf("Sub(1, 1) != 0")
		}
	})
	t.Run("zero", func(t *testing.T) {})
}
