package userns

import (
	"context"
	"fmt"
	"os"

	"github.com/trioagent/trio/sandbox"
)

var _ sandbox.Resetter = (*Sandbox)(nil)

// Reset gives the next commands a new build cache: the one earlier
// commands wrote (compiled packages, cached test results, anything planted
// there) is removed and a fresh copy of the trusted base takes its place.
// /tmp and HOME are new for every command already, and no process of an
// earlier command is alive, so after Reset nothing the Worker's code left
// outside the workspace reaches the Critic's checks. What the removed
// cache held no longer counts against the disk limit.
func (s *Sandbox) Reset(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return sandbox.ErrClosed
	}
	dir := s.cacheDir()
	if err := removeState(dir); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("userns sandbox: reset the cache: %w", err)
	}
	if err := s.seedCache(ctx); err != nil {
		return err
	}
	if s.cfg.Limits.Disk > 0 {
		seeded := usage(dir)
		s.diskBase += seeded - s.seeded
		s.seeded, s.cacheUsed = seeded, seeded
	}
	return nil
}
