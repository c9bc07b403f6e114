package tools

import (
	"io"
	"strings"
	"testing"
)

// A hook's output is copied from a pipe with io.Copy; the buffer keeps
// maxHookOutput bytes whatever the copy's method.
func TestHookOutputCapped(t *testing.T) {
	var b limitedBuffer
	b.max = maxHookOutput
	n, err := io.Copy(&b, strings.NewReader(strings.Repeat("a", 10*maxHookOutput)))
	if err != nil || n != int64(10*maxHookOutput) {
		t.Fatalf("copied %d, %v", n, err)
	}
	if got := len(b.String()); got != maxHookOutput {
		t.Fatalf("kept %d bytes of a hook's output, want %d", got, maxHookOutput)
	}
}
