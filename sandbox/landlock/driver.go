package landlock

import (
	"context"

	"github.com/trioagent/trio/sandbox"
)

func init() { sandbox.Register(Kind, driver{}) }

// driver is the kind as package sandbox's registry opens it.
type driver struct{}

func settings(v any) (Config, error) { return sandbox.SettingsOf[Config](v) }

func (driver) Available(ctx context.Context, s any) error {
	if _, err := settings(s); err != nil {
		return err
	}
	return Available(ctx)
}

func (driver) CheckWorkspace(dir string, rules sandbox.PathRules) error {
	return CheckWorkspace(dir, rules)
}

func (driver) Open(ctx context.Context, spec sandbox.RunSpec) (sandbox.Sandbox, error) {
	s, err := New(ctx, spec)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (driver) Prune(_ context.Context, s any) ([]sandbox.Leftover, error) {
	cfg, err := settings(s)
	if err != nil {
		return nil, err
	}
	return Prune(cfg.StateDir)
}
