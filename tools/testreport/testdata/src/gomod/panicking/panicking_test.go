package panicking

import "testing"

func TestFirst(t *testing.T) {
	if At([]int{1}, 0) != 1 {
		t.Fatal("first")
	}
}

func TestOutOfRange(t *testing.T) {
	_ = At([]int{1, 2}, 5)
}
