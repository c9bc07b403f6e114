package containerd

import (
	"context"

	"github.com/trioagent/trio/sandbox"
)

// Kind is the sandbox kind users name (Info.Kind, --sandbox containerd).
const Kind = "containerd"

func init() { sandbox.Register(Kind, driver{}) }

// driver is the kind as package sandbox's registry opens it.
type driver struct{}

func settings(v any) (Config, error) { return sandbox.SettingsOf[Config](v) }

func (driver) Available(ctx context.Context, s any) error {
	cfg, err := settings(s)
	if err != nil {
		return err
	}
	return Available(ctx, cfg.Address)
}

func (driver) Open(ctx context.Context, spec sandbox.RunSpec) (sandbox.Sandbox, error) {
	s, err := New(ctx, spec)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (driver) Prune(ctx context.Context, s any) ([]sandbox.Leftover, error) {
	cfg, err := settings(s)
	if err != nil {
		return nil, err
	}
	return Prune(ctx, Config{Address: cfg.Address, Namespace: cfg.Namespace, StateDir: cfg.StateDir})
}
