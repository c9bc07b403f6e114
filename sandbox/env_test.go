package sandbox

import (
	"path/filepath"
	"slices"
	"testing"
)

// HostModCache follows the go command: $GOMODCACHE, else pkg/mod in the
// first GOPATH entry, else ~/go/pkg/mod; hostGoEnv passes the same one on.
func TestHostModCache(t *testing.T) {
	home := t.TempDir()
	tests := []struct {
		name, gomodcache, gopath, want string
	}{
		{"GOMODCACHE wins", "/cache/mod", "/gp", "/cache/mod"},
		{"first GOPATH entry", "", "/gp1" + string(filepath.ListSeparator) + "/gp2", "/gp1/pkg/mod"},
		{"home", "", "", filepath.Join(home, "go", "pkg", "mod")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HOME", home)
			t.Setenv("GOMODCACHE", tt.gomodcache)
			t.Setenv("GOPATH", tt.gopath)
			if got := HostModCache(); got != tt.want {
				t.Errorf("HostModCache() = %q, want %q", got, tt.want)
			}
			if env := hostGoEnv(); !slices.Contains(env, "GOMODCACHE="+tt.want) {
				t.Errorf("hostGoEnv() = %q, want GOMODCACHE=%s", env, tt.want)
			}
		})
	}
}

// MergeEnv keeps the first position of a key and the last value given.
func TestMergeEnv(t *testing.T) {
	t.Parallel()
	got := MergeEnv([]string{"A=1", "B=2"}, []string{"C=3", "A=4", "C=5"})
	if want := []string{"A=4", "B=2", "C=5"}; !slices.Equal(got, want) {
		t.Errorf("MergeEnv = %q, want %q", got, want)
	}
}
