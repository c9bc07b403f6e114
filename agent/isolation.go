package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/tools"
)

// ErrNoIsolation is wrapped when a run would have to run commands without
// isolation and nobody said yes: no isolating kind (containerd, userns,
// landlock) can run here, and the policy is unattended or there is no Confirmer (or
// the person said no). The message lists the ways forward.
var ErrNoIsolation = errors.New("no isolating sandbox")

// chooseIsolated decides auto: the first of sc.Auto (default autoKinds)
// that can run here
// (a kind that checks workspaces, landlock, on the policy's workspace
// when it names one that exists); else local, but only after a person
// confirmed it through c.
func chooseIsolated(ctx context.Context, sc SandboxConfig, pol *policy.Policy, c policy.Confirmer) (SandboxChoice, error) {
	ch := SandboxChoice{Config: sc}
	var ws string
	var rules sandbox.PathRules
	if pol != nil && pol.Workspace() != "" {
		if _, err := os.Stat(pol.Workspace()); err == nil {
			ws, rules = pol.Workspace(), tools.PathRules(pol)
		}
	}
	var whys []error
	kinds := autoKinds
	if sc.Auto != nil {
		kinds = sc.Auto
	}
	for _, kind := range kinds {
		k := sc
		k.Kind = kind
		err := sandbox.Available(ctx, kind, k.Settings(), ws, rules)
		if err == nil {
			ch.Config.Kind = kind
			return ch, nil
		}
		whys = append(whys, err)
	}
	why := errors.New("SandboxConfig.Auto names no kind")
	if len(whys) > 0 {
		why = fmt.Errorf(strings.Repeat("%w; ", len(whys)-1)+"%w", anys(whys)...)
	}
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

func anys(errs []error) []any {
	out := make([]any, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return out
}
