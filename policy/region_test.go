package policy

import "testing"

func TestRegionMeets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		shell, glob  string
		meets, names bool
	}{
		{".e*", "**/.env", true, true},
		{"*", "**/.env", false, false}, // sh's * skips dot files
		{"*", "**/*.pem", true, false}, // covers without naming
		{"*.pem", "**/*.pem", true, true},
		{"*.go", "**/*.pem", false, false},
		{"*/.env", "**/.env", true, true},
		{".gi[t]/config", ".git/**", true, true},
		{"*/*", ".git/**", false, false},
		{"sub/*", "vendor/**", false, false},
		{"*", "vendor/**", true, false},
		{"vendor/*.go", "vendor/**", true, true},
		{"tests/a/x_test.go", "tests/**/*_test.go", true, true},
		{"tests/a/helper.go", "tests/**/*_test.go", false, false},
	}
	for _, tt := range tests {
		r, g := shellRegion(tt.shell), patternRegion(tt.glob)
		if got := r.meets(g); got != tt.meets {
			t.Errorf("%q meets %q = %v, want %v", tt.shell, tt.glob, got, tt.meets)
		}
		if got := r.names(g); got != tt.names {
			t.Errorf("%q names %q = %v, want %v", tt.shell, tt.glob, got, tt.names)
		}
	}
	for _, tt := range []struct {
		rel, glob string
		below     bool
		want      bool
	}{
		{".", "vendor/**", true, true},
		{".", "vendor/**", false, false},
		{"build", "vendor/**", true, false},
		{"vendor", "vendor/**", false, true},
		{"tests", "tests/**/*_test.go", true, true},
		{"tests", "tests/**/*_test.go", false, false},
	} {
		r := literalRegion(tt.rel)
		if tt.below {
			r = r.below()
		}
		if got := r.meets(patternRegion(tt.glob)); got != tt.want {
			t.Errorf("%q (below %v) meets %q = %v, want %v", tt.rel, tt.below, tt.glob, got, tt.want)
		}
	}
	for glob, want := range map[string]bool{".*": true, ".?": true, "a/.[.]/b": true, ".*rc": false, "[.]*": false, "*": false, "x.*": false} {
		if got := shellRegion(glob).mayClimb(); got != want {
			t.Errorf("mayClimb(%q) = %v, want %v", glob, got, want)
		}
	}
}
