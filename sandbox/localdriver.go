package sandbox

import (
	"context"
	"fmt"
)

// LocalKind is the kind of [Local], which does NOT isolate.
const LocalKind = "local"

func init() { Register(LocalKind, localDriver{}) }

// localDriver opens Local: always available, it has no settings.
type localDriver struct{}

func (localDriver) Available(context.Context, any) error { return nil }

func (localDriver) Open(_ context.Context, spec RunSpec) (Sandbox, error) {
	if spec.Settings != nil {
		return nil, fmt.Errorf("%w: the local kind has no settings, got %T", ErrConfig, spec.Settings)
	}
	l, err := NewLocal(spec.Workspace, spec.Limits)
	if err != nil {
		return nil, err
	}
	return l, nil
}
