package testreport

import (
	"fmt"
	"strings"
)

// FoldRepeats replaces each run of more than two identical consecutive
// lines with the line once and a note, "… same line N more times", so a
// loop that prints one line thousands of times costs one line of context.
// Lines are compared whole (trailing spaces included); the output keeps
// s's final newline, if any.
func FoldRepeats(s string) string {
	if !strings.Contains(s, "\n") {
		return s
	}
	trailing := strings.HasSuffix(s, "\n")
	ls := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	out := make([]string, 0, len(ls))
	for i := 0; i < len(ls); {
		j := i + 1
		for j < len(ls) && ls[j] == ls[i] {
			j++
		}
		switch n := j - i; {
		case n > 2:
			out = append(out, ls[i], fmt.Sprintf("… same line %d more times", n-1))
		default:
			out = append(out, ls[i:j]...)
		}
		i = j
	}
	r := strings.Join(out, "\n")
	if trailing {
		r += "\n"
	}
	return r
}
