package userns

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/trioagent/trio/sandbox"
)

func init() { sandbox.Register(Kind, driver{}) }

// driver is the kind as package sandbox's registry opens it.
type driver struct{}

func settings(v any) (Config, error) { return sandbox.SettingsOf[Config](v) }

func (driver) Available(ctx context.Context, s any) error {
	cfg, err := settings(s)
	if err != nil {
		return err
	}
	return Available(ctx, cfg.Bwrap)
}

func (driver) Open(ctx context.Context, spec sandbox.RunSpec) (sandbox.Sandbox, error) {
	s, err := New(ctx, spec)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Prune removes the state folders, and the trusted builds' folders of
// the warm cache, that this user's sandboxes left when their process
// died (their commands died with it).
func (driver) Prune(_ context.Context, s any) ([]sandbox.Leftover, error) {
	cfg, err := settings(s)
	if err != nil {
		return nil, err
	}
	return Prune(cfg.StateDir, cfg.WarmCache)
}

// Prune removes the state folders in stateDir ("" for os.TempDir()), and
// the trusted builds' folders in warmCache ("" for
// sandbox.DefaultWarmCache(); "none" for none), that this user's
// sandboxes left when their process died, and says which.
func Prune(stateDir, warmCache string) ([]sandbox.Leftover, error) {
	if stateDir == "" {
		stateDir = os.TempDir()
	}
	if warmCache == "" {
		warmCache = sandbox.DefaultWarmCache()
	}
	out, err := removeLeftovers(stateDir)
	if warmCache != "none" {
		more, werr := removeLeftovers(filepath.Join(warmCache, "runs"))
		out, err = append(out, more...), errors.Join(err, werr)
	}
	return out, err
}
