package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/containerd"
	"github.com/trioagent/trio/sandbox/landlock"
	"github.com/trioagent/trio/sandbox/userns"
	"github.com/trioagent/trio/tools"
)

// Sandbox kinds for SandboxConfig.Kind.
const (
	// SandboxAuto is containerd when it answers, else userns when this
	// machine can run it, else landlock when this kernel has it and the
	// workspace holds no denied path, else local only after a person confirmed it
	// (never for an unattended policy: the run fails with ErrNoIsolation).
	// The default.
	SandboxAuto = "auto"
	// SandboxContainerd is containerd or nothing: the run fails with the
	// sandbox's guidance when containerd is unreachable.
	SandboxContainerd = "containerd"
	// SandboxLocal runs commands on this machine without isolation (a
	// warning event says so).
	SandboxLocal = "local"
	// SandboxUserns is the unprivileged sandbox (bubblewrap, Landlock,
	// seccomp; see sandbox/userns) or nothing.
	SandboxUserns = userns.Kind
	// SandboxLandlock is the sandbox with nothing to install and no
	// namespaces (Landlock and seccomp in Trio's helper; see
	// sandbox/landlock) or nothing.
	SandboxLandlock = landlock.Kind
)

// SandboxConfig describes the sandbox a run opens once its run id and
// workspace are known. The run closes it when it ends; Resume opens a new
// one.
type SandboxConfig struct {
	// Kind is SandboxAuto (also when empty), SandboxContainerd,
	// SandboxUserns or SandboxLocal.
	Kind string
	// Containerd configures the containerd sandbox (address, namespace,
	// root file system, user...). Its Workspace, RunID and Limits are the
	// run's: the workspace, the run id and the policy's limits. An empty
	// Address is $TRIO_CONTAINERD_ADDRESS, else containerd.DefaultAddress;
	// auto asks containerd.Available there.
	Containerd containerd.Config
	// Userns configures the userns sandbox (bwrap, DenyTCP...); its
	// Workspace, Limits and PathRules are the run's.
	Userns userns.Config
	// Landlock configures the landlock sandbox; its Workspace, Limits and
	// PathRules are the run's.
	Landlock landlock.Config
}

// WithSandboxConfig describes where commands run; the run opens that
// sandbox itself (see SandboxConfig). Without this option or WithSandbox,
// a run uses SandboxConfig{Kind: SandboxAuto}.
func WithSandboxConfig(sc SandboxConfig) Option {
	return func(c *config) error {
		switch sc.Kind {
		case "":
			sc.Kind = SandboxAuto
		case SandboxAuto, SandboxContainerd, SandboxUserns, SandboxLandlock, SandboxLocal:
		default:
			return fmt.Errorf("agent: WithSandboxConfig: kind %q: want %s, %s, %s, %s or %s", sc.Kind, SandboxAuto, SandboxContainerd, SandboxUserns, SandboxLandlock, SandboxLocal)
		}
		c.sandboxCfg = &sc
		return nil
	}
}

// sandboxChoice is what a run will open, decided before the run folder is
// made so that an unreachable containerd leaves nothing behind.
type sandboxChoice struct {
	given    sandbox.Sandbox // WithSandbox: used as is, never closed
	kind     string          // SandboxContainerd, SandboxUserns, SandboxLandlock or SandboxLocal
	cfg      containerd.Config
	userns   userns.Config
	landlock landlock.Config
	// fallback is why auto fell back to local.
	fallback error
}

// SandboxChoice is what a SandboxConfig comes to on this machine.
type SandboxChoice struct {
	// Config is the configuration given, its Kind decided:
	// SandboxContainerd, SandboxUserns or SandboxLocal.
	Config SandboxConfig
	// Fallback is why auto came to local after a person confirmed it; nil
	// when local was asked for or an isolating kind was chosen.
	Fallback error
}

// ChooseSandbox decides what sc means here, by the rule every run follows
// (see SandboxAuto): containerd when it answers, else userns when this
// machine can run it, else local only when c confirms it and pol is not
// unattended; otherwise an error wrapping ErrNoIsolation that lists the
// ways forward. A named kind that cannot run here is an error wrapping
// that kind's ErrUnavailable; SandboxLocal is taken as asked. Callers that
// open sandboxes themselves (trio eval and its judge) use it so that they
// isolate exactly as a run does.
func ChooseSandbox(ctx context.Context, sc SandboxConfig, pol *policy.Policy, c policy.Confirmer) (SandboxChoice, error) {
	if sc.Kind == "" {
		sc.Kind = SandboxAuto
	}
	ch := SandboxChoice{Config: sc}
	switch sc.Kind {
	case SandboxLocal:
		return ch, nil
	case SandboxUserns:
		if err := userns.Available(ctx, sc.Userns.Bwrap); err != nil {
			return ch, fmt.Errorf("agent: %w", err)
		}
		return ch, nil
	case SandboxLandlock:
		if err := landlock.Available(ctx); err != nil {
			return ch, fmt.Errorf("agent: %w", err)
		}
		return ch, nil
	case SandboxContainerd, SandboxAuto:
	default:
		return ch, fmt.Errorf("agent: %w: sandbox kind %q: want %s, %s, %s, %s or %s", ErrInvalidOption, sc.Kind, SandboxAuto, SandboxContainerd, SandboxUserns, SandboxLandlock, SandboxLocal)
	}
	if err := containerd.Available(ctx, sc.Containerd.Address); err != nil {
		if sc.Kind == SandboxContainerd {
			return ch, fmt.Errorf("agent: %w", err) // err says "containerd unavailable at ..."
		}
		return chooseIsolated(ctx, sc, pol, c, err)
	}
	ch.Config.Kind = SandboxContainerd
	return ch, nil
}

// chooseSandbox resolves the configured kind; SandboxContainerd with
// containerd unreachable is an error wrapping containerd.ErrUnavailable.
func (a *Agent) chooseSandbox(ctx context.Context) (sandboxChoice, error) {
	if a.cfg.sandbox != nil {
		return sandboxChoice{given: a.cfg.sandbox}, nil
	}
	sc := SandboxConfig{Kind: SandboxAuto}
	if a.cfg.sandboxCfg != nil {
		sc = *a.cfg.sandboxCfg
	}
	c, err := ChooseSandbox(ctx, sc, a.cfg.policy, a.cfg.confirmer)
	return sandboxChoice{kind: c.Config.Kind, cfg: sc.Containerd, userns: sc.Userns, landlock: sc.Landlock, fallback: c.Fallback}, err
}

// openSandbox opens the chosen sandbox for this run's workspace. The
// sandbox it returns as owned is closed when the run ends.
func (r *run) openSandbox(ctx context.Context, limits sandbox.Limits) (sb, owned sandbox.Sandbox, err error) {
	ch := r.choice
	switch {
	case ch.given != nil:
		return ch.given, nil, nil
	case ch.kind == SandboxContainerd:
		cfg := ch.cfg
		cfg.Workspace, cfg.RunID, cfg.Limits = r.st.Workspace, r.st.RunID, limits
		cfg.Rules = r.sandboxRules()
		cfg.Progress = func(msg string) { r.emit(Event{Kind: EventSandbox, Message: msg}) }
		c, err := containerd.New(ctx, cfg)
		if errors.Is(err, containerd.ErrUnavailable) {
			return nil, nil, fmt.Errorf("agent: %w", err) // it names containerd already
		}
		if err != nil {
			return nil, nil, fmt.Errorf("agent: containerd sandbox: %w", err)
		}
		return c, c, nil
	case ch.kind == SandboxUserns:
		u, err := r.openUserns(ctx, limits)
		if err != nil {
			return nil, nil, err
		}
		return u, u, nil
	case ch.kind == SandboxLandlock:
		cfg := ch.landlock
		cfg.Workspace, cfg.Limits, cfg.PathRules = r.st.Workspace, limits, r.sandboxRules()
		cfg.Progress = func(msg string) { r.emit(Event{Kind: EventSandbox, Message: msg}) }
		l, err := landlock.New(ctx, cfg)
		if errors.Is(err, landlock.ErrUnavailable) || errors.Is(err, landlock.ErrDeniedPath) {
			return nil, nil, fmt.Errorf("agent: %w", err) // it names the sandbox already
		}
		if err != nil {
			return nil, nil, fmt.Errorf("agent: landlock sandbox: %w", err)
		}
		return l, l, nil
	}
	l, err := sandbox.NewLocal(r.st.Workspace, limits)
	if err != nil {
		return nil, nil, fmt.Errorf("agent: local sandbox: %w", err)
	}
	return l, l, nil
}

// sandboxRules are the path rules the sandbox lays out as mounts: those of
// the policy in r.pathRules when it is asked, so the Worker's tests folder
// becomes read-only for commands once the plan names it.
func (r *run) sandboxRules() sandbox.PathRules {
	if r.pathRules.Load() == nil {
		r.pathRules.Store(r.cfg.policy)
	}
	return func(rel string) sandbox.Access {
		return tools.PathRules(r.pathRules.Load())(rel)
	}
}

// sandboxWarning is the warning event for a sandbox that does not isolate.
func (r *run) sandboxWarning() string {
	info := r.sb.Info()
	if info.Isolated {
		return ""
	}
	if r.choice.fallback != nil {
		return fmt.Sprintf("no isolating sandbox can run here, and running without one was confirmed: commands run with the LOCAL sandbox, which does NOT isolate them (%v)", r.choice.fallback)
	}
	return fmt.Sprintf("the %s sandbox does not isolate: commands run on this machine as this user, limited only by the policy", info.Kind)
}
