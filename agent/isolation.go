package agent

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/landlock"
	"github.com/trioagent/trio/sandbox/userns"
	"github.com/trioagent/trio/tools"
)

// ErrNoIsolation is wrapped when a run would have to run commands without
// isolation and nobody said yes: neither containerd nor the userns sandbox
// can run here, and the policy is unattended or there is no Confirmer (or
// the person said no). The message lists the ways forward.
var ErrNoIsolation = errors.New("no isolating sandbox")

// chooseIsolated picks what auto falls back to once containerd is
// unreachable (cdErr): the userns sandbox when this machine can run it;
// else the landlock sandbox when this kernel has Landlock and the
// policy's workspace (when it names one) holds no denied path; else
// local, but only after a person confirmed it through c.
func chooseIsolated(ctx context.Context, sc SandboxConfig, pol *policy.Policy, c policy.Confirmer, cdErr error) (SandboxChoice, error) {
	ch := SandboxChoice{Config: sc}
	ch.Config.Kind = SandboxUserns
	usErr := userns.Available(ctx, sc.Userns.Bwrap)
	if usErr == nil {
		return ch, nil
	}
	llErr := landlock.Available(ctx)
	if llErr == nil && pol != nil && pol.Workspace() != "" {
		if _, err := os.Stat(pol.Workspace()); err == nil {
			llErr = landlock.CheckWorkspace(pol.Workspace(), tools.PathRules(pol))
		}
	}
	if llErr == nil {
		ch.Config.Kind = SandboxLandlock
		return ch, nil
	}
	why := fmt.Errorf("containerd: %w; userns: %w; landlock: %w", cdErr, usErr, llErr)
	refuse := func(because string) error {
		return fmt.Errorf("agent: %w (%s). Four ways forward: start containerd (`sudo systemctl start containerd`); "+
			"install bubblewrap and enable unprivileged user namespaces, for the userns sandbox; use a kernel with Landlock (5.13+), for the landlock sandbox; or choose the local kind "+
			"(SandboxConfig{Kind: SandboxLocal}), which runs every command WITHOUT isolation. Why: %w", ErrNoIsolation, because, why)
	}
	if pol == nil {
		pol = policy.Default()
	}
	switch {
	case pol.Unattended():
		return ch, refuse("an unattended run never falls back to running commands without isolation")
	case c == nil:
		return ch, refuse("nobody can confirm running commands without isolation")
	}
	req := policy.ConfirmRequest{Tool: "sandbox", Action: "exec",
		Command: "run every command of this run WITHOUT isolation (the local sandbox), as this user, with its files and network",
		Decision: policy.Decision{Verdict: policy.Ask, Rule: "sandbox: auto",
			Reason: fmt.Sprintf("no isolating sandbox can run here (%v)", why)},
		Timeout: pol.ConfirmTimeout()}
	cctx := ctx
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	ans, err := c.Confirm(cctx, req)
	if err != nil && ctx.Err() != nil {
		return ch, fmt.Errorf("agent: confirm the local sandbox: %w", ctx.Err())
	}
	if ans == policy.AnswerNo {
		return ch, refuse("running commands without isolation was not confirmed")
	}
	ch.Config.Kind, ch.Fallback = SandboxLocal, why
	return ch, nil
}

// openUserns opens the userns sandbox on the run's workspace with the
// run's limits and path rules.
func (r *run) openUserns(ctx context.Context, limits sandbox.Limits) (sandbox.Sandbox, error) {
	cfg := r.choice.userns
	cfg.Workspace, cfg.Limits, cfg.PathRules = r.st.Workspace, limits, r.sandboxRules()
	cfg.Progress = func(msg string) { r.emit(Event{Kind: EventSandbox, Message: msg}) }
	s, err := userns.New(ctx, cfg)
	if errors.Is(err, userns.ErrUnavailable) {
		return nil, fmt.Errorf("agent: %w", err) // it names the sandbox already
	}
	if err != nil {
		return nil, fmt.Errorf("agent: userns sandbox: %w", err)
	}
	return s, nil
}
