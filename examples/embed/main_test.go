package main

import (
	"context"
	"testing"
)

// The embedding program runs to completion (its output is the example).
func TestRun(t *testing.T) {
	if err := run(context.Background()); err != nil {
		t.Fatal(err)
	}
}
