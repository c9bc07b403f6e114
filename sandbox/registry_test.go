package sandbox_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/trioagent/trio/sandbox"
)

// Every kind opens through sandbox.Open; its failures are one *Error
// naming the kind and the step, tested with errors.Is and errors.As.
func TestOpenThroughRegistry(t *testing.T) {
	t.Parallel()
	if !slices.Contains(sandbox.Kinds(), sandbox.LocalKind) {
		t.Fatalf("Kinds() = %v, want local registered", sandbox.Kinds())
	}
	ws := t.TempDir()
	sb, err := sandbox.Open(context.Background(), sandbox.LocalKind, sandbox.RunSpec{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	res, err := sb.Exec(context.Background(), sandbox.Command{Argv: []string{"sh", "-c", "echo hi > f"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Exec: %+v, %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "f")); string(b) != "hi\n" {
		t.Errorf("the command did not run in the workspace: %q", b)
	}

	var se *sandbox.Error
	_, err = sandbox.Open(context.Background(), "nosuchkind", sandbox.RunSpec{Workspace: ws})
	if !errors.Is(err, sandbox.ErrUnknownKind) || !errors.As(err, &se) || se.Kind != "nosuchkind" || se.Op != "open" {
		t.Errorf("unknown kind: %v", err)
	}
	_, err = sandbox.Open(context.Background(), sandbox.LocalKind, sandbox.RunSpec{Workspace: filepath.Join(ws, "missing")})
	if err == nil || !errors.As(err, &se) || se.Kind != sandbox.LocalKind {
		t.Errorf("missing workspace: %v", err)
	}
	_, err = sandbox.Open(context.Background(), sandbox.LocalKind, sandbox.RunSpec{Workspace: ws, Settings: struct{}{}})
	if !errors.Is(err, sandbox.ErrConfig) {
		t.Errorf("settings for a kind that has none: %v, want ErrConfig", err)
	}
	if err := sandbox.Available(context.Background(), sandbox.LocalKind, nil, "", nil); err != nil {
		t.Errorf("local unavailable: %v", err)
	}
}
