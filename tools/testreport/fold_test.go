package testreport

import (
	"strings"
	"testing"
)

func TestFoldRepeats(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"one line", "one line"},
		{"a\na\nb\n", "a\na\nb\n"},
		{"a\na\na\nb", "a\n… same line 2 more times\nb"},
		{strings.Repeat("tick\n", 213) + "done\n", "tick\n… same line 212 more times\ndone\n"},
		{"x\ny\nx\ny\n", "x\ny\nx\ny\n"},
		{"\n\n\n\nz", "\n… same line 3 more times\nz"},
	} {
		if got := FoldRepeats(c.in); got != c.want {
			t.Errorf("FoldRepeats(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
