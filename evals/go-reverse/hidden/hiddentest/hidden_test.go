package hiddentest

import (
	"testing"

	"rev"
)

func TestHiddenUnicode(t *testing.T) {
	if got := rev.Reverse("héllo, 世界"); got != "界世 ,olléh" {
		t.Errorf("Reverse = %q", got)
	}
	if got := rev.Reverse(""); got != "" {
		t.Errorf("Reverse(\"\") = %q", got)
	}
}

func TestHiddenPalindrome(t *testing.T) {
	for s, want := range map[string]bool{"": true, "Ésé": true, "Ésa": false, "No 'x' in Nixon": true, "ab": false} {
		if got := rev.IsPalindrome(s); got != want {
			t.Errorf("IsPalindrome(%q) = %v, want %v", s, got, want)
		}
	}
}
