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

// Reset gives the next commands a new build cache: the one earlier
// commands wrote (compiled packages, cached test results, anything planted
// there) is removed and a fresh copy of the trusted base takes its place.
// /tmp and HOME are new for every command already, and no process of an
// earlier command is alive, so after Reset nothing the Worker's code left
// outside the workspace reaches the Critic's checks. What the removed
// cache held no longer counts against the disk limit. A started process
// keeps writing to the old cache, which is not removed while one runs.
//
// The fresh copy is made ahead of time, in the background, so Reset
// itself costs two renames; the old cache is removed in the background.
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
	keep := s.started()
	if keep {
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
	if err := s.takeSpare(ctx, dir); err != nil {
		return err
	}
	s.makeSpare()
	if s.cfg.Limits.Disk > 0 {
		seeded := usage(dir)
		s.diskMu.Lock()
		if keep {
			s.diskBase += seeded // the old cache's seeded part stays measured
		} else {
			s.diskBase += seeded - s.seeded
		}
		s.diskMu.Unlock()
		s.seeded, s.cacheUsed = seeded, seeded
	}
	return nil
}

// spare is a copy of the warm base being made for the next Reset.
type spare struct {
	dir  string // holds go-build when done
	done chan error
}

// makeSpare starts copying the warm base for the next Reset. Without a
// base (no Go, or the warm cache turned off) there is nothing to copy.
func (s *Sandbox) makeSpare() {
	if s.warmBase == "" {
		return
	}
	sp := &spare{dir: filepath.Join(s.stateDir, "cache-spare-"+strconv.Itoa(s.resets)), done: make(chan error, 1)}
	s.spare = sp
	s.background.Add(1)
	go func() {
		defer s.background.Done()
		err := os.Mkdir(sp.dir, 0o755)
		if err == nil {
			err = sandbox.CopyTree(s.warmBase, filepath.Join(sp.dir, "go-build"))
		}
		sp.done <- err
	}()
}

// takeSpare makes dir the next cache: the spare when its copy succeeded,
// else a copy made now.
func (s *Sandbox) takeSpare(ctx context.Context, dir string) error {
	sp := s.spare
	s.spare = nil
	if sp != nil {
		if err := <-sp.done; err == nil {
			if err := os.Rename(sp.dir, dir); err != nil {
				return fmt.Errorf("userns sandbox: reset the cache: %w", err)
			}
			return nil
		}
		_ = removeState(sp.dir)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("userns sandbox: reset the cache: %w", err)
	}
	return s.seedCache(ctx)
}
