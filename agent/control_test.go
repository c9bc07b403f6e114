package agent_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/agent"
)

// Pins of control files, kept per workspace outside it: the first session
// pins, a changed, created or removed file stops the next one naming it
// until trust pins it afresh; files outside the workspace are not pinned.
func TestPinControlFiles(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	ws, out := t.TempDir(), t.TempDir()
	cfg, pol, outside := filepath.Join(ws, "trio.yaml"), filepath.Join(ws, "policy.yaml"), filepath.Join(out, "trio.yaml")
	os.WriteFile(cfg, []byte("runs_dir: runs\n"), 0o644)
	os.WriteFile(outside, []byte("a\n"), 0o644)
	files := []string{cfg, pol, outside}

	pinned, err := agent.PinControlFiles(ws, files, false)
	if err != nil || len(pinned) != 2 {
		t.Fatalf("first session: pinned %v, %v; want the two files in the workspace", pinned, err)
	}
	path, err := agent.PinsFile(ws)
	if err != nil || !strings.HasPrefix(path, filepath.Join(state, "trio", "pins")+"/") {
		t.Fatalf("pins file %q (%v), want under $XDG_STATE_HOME/trio/pins", path, err)
	}
	os.WriteFile(outside, []byte("b\n"), 0o644) // yours: never pinned
	if _, err := agent.PinControlFiles(ws, files, false); err != nil {
		t.Fatalf("nothing in the workspace changed: %v", err)
	}

	os.WriteFile(cfg, []byte("runs_dir: elsewhere\n"), 0o644)
	os.WriteFile(pol, []byte("version: 1\n"), 0o644)
	_, err = agent.PinControlFiles(ws, files, false)
	var ce *agent.ControlChangedError
	if !errors.As(err, &ce) || !errors.Is(err, agent.ErrControlChanged) ||
		!strings.Contains(err.Error(), cfg+": sha256 was ") || !strings.Contains(err.Error(), pol+": was absent, now present") {
		t.Fatalf("changed and created: %v", err)
	}
	if _, err := agent.PinControlFiles(ws, files, false); err == nil {
		t.Fatal("a refused change was pinned")
	}
	if _, err := agent.PinControlFiles(ws, files, true); err != nil {
		t.Fatalf("trusted: %v", err)
	}
	if _, err := agent.PinControlFiles(ws, files, false); err != nil {
		t.Fatalf("after trust: %v", err)
	}
	os.Remove(pol)
	if _, err := agent.PinControlFiles(ws, files, false); err == nil || !strings.Contains(err.Error(), pol+": was present, now absent") {
		t.Errorf("removed: %v", err)
	}
}

// A user without a home folder (nobody's is /nonexistent) keeps pins in a
// private folder of its uid under the temporary folder; one that another
// user made there is refused, not trusted.
func TestPinsWithoutHome(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/nonexistent")
	t.Setenv("TMPDIR", tmp)
	ws := t.TempDir()
	cfg := filepath.Join(ws, "trio.yaml")
	if _, err := agent.PinControlFiles(ws, []string{cfg}, false); err != nil {
		t.Fatalf("pin without a home: %v", err)
	}
	path, _ := agent.PinsFile(ws)
	if !strings.HasPrefix(path, tmp+"/") {
		t.Fatalf("pins file %s, want under %s", path, tmp)
	}
	os.WriteFile(cfg, []byte("x\n"), 0o644)
	if _, err := agent.PinControlFiles(ws, []string{cfg}, false); !errors.Is(err, agent.ErrControlChanged) {
		t.Errorf("a trio.yaml created since: %v", err)
	}

	// Someone else's folder of that name (made writable by others here,
	// as root cannot be another uid without a chown).
	os.Chmod(filepath.Dir(path), 0o777)
	if _, err := agent.PinControlFiles(ws, []string{cfg}, true); err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Errorf("a pins folder others may write: %v", err)
	}
}
