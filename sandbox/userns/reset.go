package userns

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/trioagent/trio/sandbox"
)

var _ sandbox.Resetter = (*Sandbox)(nil)

// Reset gives the next commands a new, empty build cache: the one earlier
// commands wrote (compiled packages, cached test results, anything planted
// there) is removed. The trusted base stays as it was (commands only ever
// see it read-only), so the standard library is still compiled, and so do
// the trusted builds, which only trusted builds' go commands wrote, as
// their checks kept it (see Sandbox.trusted): the Critic reuses them. /tmp and
// HOME are new for every command already, and no process of an earlier
// command is alive, so after Reset nothing the Worker's code left outside
// the workspace reaches the Critic's checks. What the removed cache held
// no longer counts against the disk limit. A started process keeps
// writing to the old cache, which is not removed while one runs.
//
// Reset costs a rename and a folder; the old cache is removed in the
// background.
func (s *Sandbox) Reset(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return sandbox.ErrClosed
	}
	dir := s.cacheDir()
	s.resets++
	old := filepath.Join(s.stateDir, "cache-old-"+strconv.Itoa(s.resets))
	if err := os.Rename(dir, old); err != nil {
		return fmt.Errorf("userns sandbox: reset the cache: %w", err)
	}
	// A started process (an MCP server) keeps the old cache bound: it
	// stays, counted against the disk limit, until Close; the Critic's
	// checks never see it.
	if s.started() {
		s.diskMu.Lock()
		s.kept = append(s.kept[:len(s.kept):len(s.kept)], old)
		s.diskMu.Unlock()
	} else {
		s.background.Add(1)
		go func() {
			defer s.background.Done()
			_ = removeState(old)
		}()
	}
	if err := os.MkdirAll(filepath.Join(dir, "go-build"), 0o755); err != nil {
		return fmt.Errorf("userns sandbox: reset the cache: %w", err)
	}
	s.cacheUsed = s.cachesUsage()
	return nil
}
