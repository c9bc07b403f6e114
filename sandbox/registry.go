package sandbox

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// RunSpec is what one run gives the sandbox it opens, the same for every
// kind: where, with which limits and path rules, and the kind's own
// settings.
type RunSpec struct {
	// Workspace is the host folder commands run in. Required.
	Workspace string
	// RunID names what the kind makes for the run (containerd's
	// container); "" lets the kind choose.
	RunID string
	// Limits bound the run's commands.
	Limits Limits
	// PathRules say which workspace paths commands may not see or change;
	// nil: all writable.
	PathRules PathRules
	// Progress, when set, is told about slow steps (an image pulled, a
	// warm cache built).
	Progress func(msg string)
	// Settings are the kind's own settings, a Config (or *Config) of its
	// package: containerd.Config, userns.Config, landlock.Config; nil:
	// its defaults. They hold nothing of the run's: that is the fields
	// above.
	Settings any
}

// Driver is a sandbox kind as the registry knows it. Each kind's package
// registers one from its init function (see [Register]); its Open calls
// the kind's New with the same RunSpec.
type Driver interface {
	// Available reports whether this machine can run the kind with
	// settings (nil: its defaults); the error wraps ErrUnavailable and
	// says what to do instead.
	Available(ctx context.Context, settings any) error
	// Open opens a sandbox for one run.
	Open(ctx context.Context, spec RunSpec) (Sandbox, error)
}

// WorkspaceChecker is a Driver that cannot run on every workspace (the
// landlock kind cannot hide a denied path inside one): CheckWorkspace's
// error wraps ErrUnavailable and names the path.
type WorkspaceChecker interface {
	CheckWorkspace(dir string, rules PathRules) error
}

// Pruner is a Driver whose sandboxes can leave state on the host when
// their process dies without Close (kill -9): Prune removes what dead
// processes of this user left and says what. An unreachable service
// (containerd not running) is an error wrapping ErrUnavailable.
type Pruner interface {
	Prune(ctx context.Context, settings any) ([]Leftover, error)
}

// Leftover is one thing a dead run's sandbox left, removed by Prune.
type Leftover struct {
	Kind      string `json:"kind"`
	Container string `json:"container"` // "": a state folder no container named
	// State is the dead run's state folder, removed.
	State string `json:"state,omitempty"`
	Run   string `json:"run,omitempty"`
	Owner string `json:"owner,omitempty"` // host/pid/start time of the dead process
	// Workspace is the folder given back to its owner, when the dead run
	// had lent it to the sandbox user.
	Workspace string `json:"workspace,omitempty"`
}

var (
	driversMu sync.RWMutex
	drivers   = map[string]Driver{}
)

// Register makes a kind available by name, as database/sql's Register
// does a driver. It panics when name is empty, d is nil or the name is
// taken: two kinds of one name are a programming error.
func Register(name string, d Driver) {
	driversMu.Lock()
	defer driversMu.Unlock()
	if name == "" || d == nil {
		panic("sandbox: Register: empty name or nil driver")
	}
	if _, dup := drivers[name]; dup {
		panic("sandbox: Register called twice for kind " + name)
	}
	drivers[name] = d
}

// Kinds lists the registered kinds, sorted.
func Kinds() []string {
	driversMu.RLock()
	defer driversMu.RUnlock()
	var out []string
	for k := range drivers {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Lookup returns the registered driver of kind.
func Lookup(kind string) (Driver, bool) {
	driversMu.RLock()
	defer driversMu.RUnlock()
	d, ok := drivers[kind]
	return d, ok
}

func lookup(kind, op string) (Driver, error) {
	d, ok := Lookup(kind)
	if !ok {
		return nil, &Error{Kind: kind, Op: op, Err: fmt.Errorf("%w: want one of %v", ErrUnknownKind, Kinds())}
	}
	return d, nil
}

// Open opens a sandbox of kind for one run. Its error is an *Error.
func Open(ctx context.Context, kind string, spec RunSpec) (Sandbox, error) {
	d, err := lookup(kind, "open")
	if err != nil {
		return nil, err
	}
	if spec.Workspace == "" {
		return nil, &Error{Kind: kind, Op: "open", Err: fmt.Errorf("%w: RunSpec.Workspace is required", ErrConfig)}
	}
	sb, err := d.Open(ctx, spec)
	if err != nil {
		return nil, &Error{Kind: kind, Op: "open", Err: err}
	}
	return sb, nil
}

// Available reports whether kind can run here with settings (nil: its
// defaults) and, when dir is not "", on the workspace dir under rules.
// Its error is an *Error; ErrUnavailable says the kind cannot run.
func Available(ctx context.Context, kind string, settings any, dir string, rules PathRules) error {
	d, err := lookup(kind, "check")
	if err != nil {
		return err
	}
	if err := d.Available(ctx, settings); err != nil {
		return &Error{Kind: kind, Op: "check", Err: err}
	}
	if wc, ok := d.(WorkspaceChecker); ok && dir != "" {
		if err := wc.CheckWorkspace(dir, rules); err != nil {
			return &Error{Kind: kind, Op: "check", Err: err}
		}
	}
	return nil
}

// Prune asks every registered kind that can leave state to remove what
// dead processes left (see Pruner), with its settings from settings (by
// kind; a missing one is the kind's defaults). It returns what was
// removed, and one *Error per kind that could not look (unreachable:
// wrapping ErrUnavailable) or could not remove something.
func Prune(ctx context.Context, settings map[string]any) ([]Leftover, []error) {
	var out []Leftover
	var errs []error
	for _, k := range Kinds() {
		d, _ := Lookup(k)
		p, ok := d.(Pruner)
		if !ok {
			continue
		}
		l, err := p.Prune(ctx, settings[k])
		for i := range l {
			l[i].Kind = k
		}
		out = append(out, l...)
		if err != nil {
			errs = append(errs, &Error{Kind: k, Op: "prune", Err: err})
		}
	}
	return out, errs
}

// SettingsOf is spec.Settings as the kind's own Config type T: a T, a *T,
// or nil for T's zero value (the kind's defaults). Anything else, such as
// another kind's Config, is an ErrConfig naming the type the kind wants.
func SettingsOf[T any](v any) (T, error) {
	var zero T
	switch c := v.(type) {
	case nil:
		return zero, nil
	case T:
		return c, nil
	case *T:
		if c != nil {
			return *c, nil
		}
		return zero, nil
	}
	return zero, fmt.Errorf("%w: settings of type %T, want %T", ErrConfig, v, zero)
}
