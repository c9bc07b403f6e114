package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestRemoveLeftovers: a state folder whose owner died (kill -9, no
// Close) is removed and reported, read-only folders in its cache
// included; a live owner's, another host's and one without an owner
// file stay.
func TestRemoveLeftovers(t *testing.T) {
	state := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	write := func(dir, owner string) {
		t.Helper()
		ro := filepath.Join(state, dir, "cache", "ro")
		if err := os.MkdirAll(ro, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ro, "x"), nil, 0o444); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(state, dir, "owner"), []byte(owner+"\n"), 0o444); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("kind-gone", host+"/"+strconv.Itoa(dead.Process.Pid)+"/1")
	write("kind-live", OwnerLabel())
	write("kind-elsewhere", "another-host/"+strconv.Itoa(dead.Process.Pid)+"/1")
	write("kind-unowned", "")
	t.Cleanup(func() { RemoveState(state) })
	out, err := RemoveLeftovers("kind", filepath.Join(state, "kind-*"), "owner")
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].State != filepath.Join(state, "kind-gone") || out[0].Kind != "kind" {
		t.Fatalf("removed %+v, want only kind-gone", out)
	}
	if _, err := os.Stat(filepath.Join(state, "kind-gone")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("kind-gone is still there: %v", err)
	}
	for _, d := range []string{"kind-live", "kind-elsewhere", "kind-unowned"} {
		if _, err := os.Stat(filepath.Join(state, d)); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}
