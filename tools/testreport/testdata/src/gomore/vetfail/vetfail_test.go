package vetfail

import (
	"fmt"
	"testing"
)

func TestFormat(t *testing.T) {
	fmt.Printf("%d\n", "not a number")
}
