package sandbox

import (
	"strings"
	"testing"
)

func TestCappedBuffer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		limit     int64
		writes    []string
		want      string
		truncated bool
	}{
		{"fits", 10, []string{"abc", "def"}, "abcdef", false},
		{"exact", 6, []string{"abcdef"}, "abcdef", false},
		{"head and tail", 6, []string{"abcdefghij"}, "abc\n[... 4 bytes truncated ...]\nhij", true},
		{"many small writes", 4, []string{"a", "b", "c", "d", "e", "f", "g"}, "ab\n[... 3 bytes truncated ...]\nfg", true},
		{"wrap in ring", 8, []string{"abcd", "ef", "gh", "ijk"}, "abcd\n[... 3 bytes truncated ...]\nhijk", true},
		{"odd limit", 5, []string{"0123456789"}, "012\n[... 5 bytes truncated ...]\n89", true},
		{"limit one", 1, []string{"xyz"}, "x\n[... 2 bytes truncated ...]\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := NewCappedBuffer(tt.limit)
			var total int
			for _, w := range tt.writes {
				n, err := b.Write([]byte(w))
				if err != nil || n != len(w) {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
				total += n
			}
			if got := b.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if b.Truncated() != tt.truncated {
				t.Errorf("Truncated() = %v, want %v", b.Truncated(), tt.truncated)
			}
			if b.Total() != int64(total) {
				t.Errorf("Total() = %d, want %d", b.Total(), total)
			}
		})
	}
}

func TestCappedBufferBoundedMemory(t *testing.T) {
	chunk := []byte(strings.Repeat("x", 32<<10))
	b := NewCappedBuffer(64 << 10)
	allocs := testing.AllocsPerRun(1000, func() { b.Write(chunk) })
	if allocs != 0 {
		t.Errorf("Write allocates %v times per call, want 0", allocs)
	}
	if !b.Truncated() || len(b.String()) > 64<<10+64 {
		t.Errorf("kept %d bytes, truncated=%v", len(b.String()), b.Truncated())
	}
}
