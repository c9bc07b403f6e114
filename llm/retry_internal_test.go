package llm

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{"none", nil, 0, false},
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second, true},
		{"fractional seconds", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond, true},
		{"http date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second, true},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{"ms wins", map[string]string{"Retry-After": "7", "Retry-After-Ms": "250"}, 250 * time.Millisecond, true},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0, false},
		{"negative", map[string]string{"Retry-After": "-3"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			got, ok := parseRetryAfter(h, now)
			if got != tt.want || ok != tt.ok {
				t.Errorf("got %s %v, want %s %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestBackoffFullJitter(t *testing.T) {
	t.Parallel()
	base, max := 100*time.Millisecond, time.Second
	for attempt, ceil := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second} {
		var lo, hi time.Duration = ceil, 0
		for range 2000 {
			d := backoff(base, max, attempt)
			if d < 0 || d > ceil {
				t.Fatalf("attempt %d: wait %s outside [0, %s]", attempt, d, ceil)
			}
			lo, hi = min(lo, d), maxDur(hi, d)
		}
		// Full jitter spreads over the whole range, not near the ceiling.
		if lo > ceil/10 || hi < ceil*9/10 {
			t.Errorf("attempt %d: waits span [%s, %s] of [0, %s]", attempt, lo, hi, ceil)
		}
	}
	if d := backoff(base, max, 100); d > max {
		t.Errorf("huge attempt: %s", d)
	}
}

func maxDur(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

func TestClipKeepsRunes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdef", 3, "abc…"},
		{"héllo", 2, "h…"}, // byte 2 is inside é
		{"héllo", 3, "hé…"},
	}
	for _, tt := range tests {
		if got := clip(tt.in, tt.n); got != tt.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
