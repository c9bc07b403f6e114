package broken

import "testing"

func TestMul(t *testing.T) {
	if Mul(2, 3) != undefinedSix {
		t.Fatal("mul")
	}
	var unused string = 7
}
