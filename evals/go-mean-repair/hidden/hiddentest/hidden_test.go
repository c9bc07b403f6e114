package hiddentest

import (
	"testing"

	"stats"
)

func TestHiddenEmpty(t *testing.T) {
	if _, err := stats.Max(nil); err == nil {
		t.Error("Max(nil): want an error")
	}
}

func TestHiddenSingle(t *testing.T) {
	if m, err := stats.Max([]float64{-7}); err != nil || m != -7 {
		t.Errorf("Max([-7]) = %v, %v", m, err)
	}
	if m, _ := stats.Mean([]float64{-1, 1}); m != 0 {
		t.Errorf("Mean = %v", m)
	}
}
