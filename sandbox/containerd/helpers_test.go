package containerd

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/trioagent/trio/sandbox"
)

// requireContainerd skips when containerd is unreachable, and fails when
// CI=true: in CI these tests are the proof that the sandbox isolates.
func requireContainerd(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Available(ctx, ""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and containerd is unreachable: %v", err)
		}
		t.Skipf("containerd unreachable (set %s; CI=true makes this a failure): %v", AddressEnv, err)
	}
}

func newSandbox(t testing.TB, spec sandbox.RunSpec) *Sandbox {
	t.Helper()
	requireContainerd(t)
	if spec.Workspace == "" {
		spec.Workspace = t.TempDir()
	}
	if spec.Limits == (sandbox.Limits{}) {
		spec.Limits = sandbox.Limits{Timeout: time.Minute, Memory: 512 << 20, CPUs: 1, Pids: 256, Output: 64 << 10}
	}
	// Long enough for the first sandbox on a machine to build the warm
	// build cache.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s, err := New(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func run(t testing.TB, s *Sandbox, argv ...string) sandbox.Result {
	t.Helper()
	res, err := s.Exec(context.Background(), sandbox.Command{Argv: argv})
	if err != nil {
		t.Fatalf("Exec %q: %v", argv, err)
	}
	return res
}

// waitSpare waits until the sandbox's spare box has started (or failed
// to), so that what containerd lists is settled.
func waitSpare(s *Sandbox) {
	s.execMu.Lock()
	job := s.spare
	s.execMu.Unlock()
	if job != nil {
		<-job.done
	}
}
