package agent

import (
	"context"
	"fmt"
	"strings"

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
	SandboxContainerd = containerd.Kind
	// SandboxLocal runs commands on this machine without isolation (a
	// warning event says so).
	SandboxLocal = sandbox.LocalKind
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
	// root file system, user...). An empty Address is
	// $TRIO_CONTAINERD_ADDRESS, else containerd.DefaultAddress; auto asks
	// containerd.Available there. The workspace, run id, limits and path
	// rules are the run's (see OpenSandbox).
	Containerd containerd.Config
	// Userns configures the userns sandbox (bwrap, DenyTCP...).
	Userns userns.Config
	// Landlock configures the landlock sandbox.
	Landlock landlock.Config
	// Auto lists the isolating kinds auto tries, in order; nil means
	// containerd, userns, landlock. Leaving one out (landlock hides no
	// denied path and has no cgroup) makes auto ask for local sooner,
	// never pick it unasked.
	Auto []string
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
		for _, k := range sc.Auto {
			if _, ok := sandbox.Lookup(k); !ok || k == SandboxLocal {
				return fmt.Errorf("agent: WithSandboxConfig: Auto: kind %q: want isolating kinds (%s, %s, %s)", k, SandboxContainerd, SandboxUserns, SandboxLandlock)
			}
		}
		c.sandboxCfg = &sc
		return nil
	}
}

// sandboxChoice is what a run will open, decided before the run folder is
// made so that an unreachable containerd leaves nothing behind.
type sandboxChoice struct {
	given sandbox.Sandbox // WithSandbox: used as is, never closed
	sc    SandboxConfig   // its Kind decided: never SandboxAuto
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

// Settings is the kind's own settings for Kind (sc.Containerd,
// sc.Userns or sc.Landlock), nil for local: what sandbox.Open takes as
// RunSpec.Settings.
func (sc SandboxConfig) Settings() any {
	switch sc.Kind {
	case SandboxContainerd:
		return sc.Containerd
	case SandboxUserns:
		return sc.Userns
	case SandboxLandlock:
		return sc.Landlock
	}
	return nil
}

// autoKinds are the isolating kinds auto tries by default, in order;
// local comes after them only when a person says so.
var autoKinds = []string{SandboxContainerd, SandboxUserns, SandboxLandlock}

// ChooseSandbox decides what sc means here, by the one rule every caller
// follows (see SandboxAuto): the first of containerd, userns and landlock
// that can run here (landlock also on the policy's workspace, when it
// names one), else local only when c confirms it and pol is not
// unattended; otherwise an error wrapping ErrNoIsolation that lists the
// ways forward. A named kind that cannot run here is a *sandbox.Error
// wrapping sandbox.ErrUnavailable; SandboxLocal is taken as asked. trio
// run and resume, trio tools, trio eval and its judge all come here, and
// then open the kind with OpenSandbox.
func ChooseSandbox(ctx context.Context, sc SandboxConfig, pol *policy.Policy, c policy.Confirmer) (SandboxChoice, error) {
	if sc.Kind == "" {
		sc.Kind = SandboxAuto
	}
	ch := SandboxChoice{Config: sc}
	switch sc.Kind {
	case SandboxLocal:
		return ch, nil
	case SandboxAuto:
		return chooseIsolated(ctx, sc, pol, c)
	}
	if _, ok := sandbox.Lookup(sc.Kind); !ok {
		return ch, fmt.Errorf("agent: %w: sandbox kind %q: want %s, %s, %s, %s or %s", ErrInvalidOption, sc.Kind, SandboxAuto, SandboxContainerd, SandboxUserns, SandboxLandlock, SandboxLocal)
	}
	if err := sandbox.Available(ctx, sc.Kind, sc.Settings(), "", nil); err != nil {
		return ch, fmt.Errorf("agent: %w", err)
	}
	return ch, nil
}

// OpenSandbox opens the sandbox sc names (a decided kind: see
// ChooseSandbox) with the kind's settings from sc and the per-run part
// from spec. Its error is a *sandbox.Error.
func OpenSandbox(ctx context.Context, sc SandboxConfig, spec sandbox.RunSpec) (sandbox.Sandbox, error) {
	spec.Settings = sc.Settings()
	return sandbox.Open(ctx, sc.Kind, spec)
}

// chooseSandbox resolves the configured kind; SandboxContainerd with
// containerd unreachable is an error wrapping sandbox.ErrUnavailable.
func (a *Agent) chooseSandbox(ctx context.Context) (sandboxChoice, error) {
	if a.cfg.sandbox != nil {
		return sandboxChoice{given: a.cfg.sandbox}, nil
	}
	sc := SandboxConfig{Kind: SandboxAuto}
	if a.cfg.sandboxCfg != nil {
		sc = *a.cfg.sandboxCfg
	}
	c, err := ChooseSandbox(ctx, sc, a.cfg.policy, a.cfg.confirmer)
	return sandboxChoice{sc: c.Config, fallback: c.Fallback}, err
}

// openSandbox opens the chosen sandbox for this run's workspace. The
// sandbox it returns as owned is closed when the run ends.
func (r *run) openSandbox(ctx context.Context, limits sandbox.Limits) (sb, owned sandbox.Sandbox, err error) {
	if r.choice.given != nil {
		return r.choice.given, nil, nil
	}
	s, err := OpenSandbox(ctx, r.choice.sc, sandbox.RunSpec{
		Workspace: r.st.Workspace, RunID: r.st.RunID, Limits: limits, PathRules: r.sandboxRules(),
		Progress: func(msg string) { r.emit(Event{Kind: EventSandbox, Message: msg}) },
	})
	if err != nil {
		return nil, nil, fmt.Errorf("agent: %w", err) // it names the kind
	}
	return s, s, nil
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

// sandboxWarning is the one warning event for a sandbox that does not
// isolate, or that does not enforce a limit the policy sets (cpus in a
// kind without a cgroup, pids for root in landlock): "" when neither.
func (r *run) sandboxWarning() string {
	info := r.sb.Info()
	var un string
	if u := info.Unenforced(policyLimits(r.cfg.policy.Limits())); len(u) > 0 {
		un = "; limits the policy sets that it does not enforce: " + strings.Join(u, "; ")
	}
	switch {
	case info.Isolated && un == "":
		return ""
	case info.Isolated:
		return fmt.Sprintf("the %s sandbox isolates, but not every limit holds%s", info.Kind, un)
	case r.choice.fallback != nil:
		return fmt.Sprintf("no isolating sandbox can run here, and running without one was confirmed: commands run with the LOCAL sandbox, which does NOT isolate them (%v)%s", r.choice.fallback, un)
	}
	return fmt.Sprintf("the %s sandbox does not isolate: commands run on this machine as this user, limited only by the policy%s", info.Kind, un)
}
