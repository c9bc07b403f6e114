package setupfail

import (
	"testing"

	"example.com/nope"
)

func TestX(t *testing.T) { nope.X() }
