package sandbox_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// The local kind lists every limit as enforced or not, and Unenforced
// picks out those a run sets: what the run warns about.
func TestLocalInfoListsEveryLimit(t *testing.T) {
	t.Parallel()
	lim := sandbox.Limits{Timeout: time.Minute, CPUs: 2, Pids: 100}
	sb, err := sandbox.Open(context.Background(), sandbox.LocalKind, sandbox.RunSpec{Workspace: t.TempDir(), Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	info := sb.Info()
	for _, name := range []string{sandbox.LimitTimeout, sandbox.LimitOutput, sandbox.LimitMemory, sandbox.LimitCPUs, sandbox.LimitPids, sandbox.LimitDisk, sandbox.LimitNetwork} {
		n := 0
		for _, e := range slices.Concat(info.Enforced, info.NotEnforced) {
			if strings.HasPrefix(e, name+" ") || strings.HasPrefix(e, name+":") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s is listed %d times in %q", name, n, info.Summary())
		}
	}
	got := info.Unenforced(lim)
	var names []string
	for _, e := range got {
		name, _, _ := strings.Cut(e, ":")
		names = append(names, name)
	}
	slices.Sort(names)
	if want := []string{"cpus", "network", "pids"}; !slices.Equal(names, want) {
		t.Errorf("Unenforced = %q, want entries about %v (set and not enforced; memory and disk are not set)", got, want)
	}
}
