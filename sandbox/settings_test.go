package sandbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/containerd"
	"github.com/trioagent/trio/sandbox/landlock"
	"github.com/trioagent/trio/sandbox/userns"
)

// A kind's settings are its own Config (or *Config); another kind's
// Config, the mistake an embedder switching kinds makes, is refused with
// ErrConfig naming the type wanted, before anything runs or is reached.
func TestOpenRefusesAnotherKindsSettings(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	for _, tt := range []struct {
		kind     string
		settings any
	}{
		{userns.Kind, landlock.Config{}},
		{landlock.Kind, userns.Config{}},
		{containerd.Kind, &userns.Config{}},
	} {
		_, err := sandbox.Open(context.Background(), tt.kind, sandbox.RunSpec{Workspace: ws, Settings: tt.settings})
		var se *sandbox.Error
		if !errors.Is(err, sandbox.ErrConfig) || !errors.As(err, &se) || se.Kind != tt.kind || !strings.Contains(err.Error(), tt.kind+".Config") {
			t.Errorf("%s with %T: %v, want an *Error of the kind wrapping ErrConfig that names %s.Config", tt.kind, tt.settings, err, tt.kind)
		}
		if err := sandbox.Available(context.Background(), tt.kind, tt.settings, "", nil); !errors.Is(err, sandbox.ErrConfig) {
			t.Errorf("Available(%s, %T): %v, want ErrConfig", tt.kind, tt.settings, err)
		}
	}
}
