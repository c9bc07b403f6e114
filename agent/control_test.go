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
