package agent

import (
	"errors"
	"fmt"
	"slices"

	"github.com/trioagent/trio/tools"
)

// roleTool is a tool given to some roles only (WithRoleTools names a
// whole subset; this adds to whatever subset a role has).
type roleTool struct {
	tool  tools.Tool
	roles []string
}

// WithToolsFor adds ts to the run's registry and offers them to the named
// roles only (worker, critic), on top of each role's subset: the way MCP
// tools reach the roles trio.yaml names. Every call still passes the
// gate. May be given several times; a name given twice is an error when
// the run opens.
func WithToolsFor(roles []string, ts ...tools.Tool) Option {
	return func(c *config) error {
		if len(roles) == 0 {
			return errors.New("agent: WithToolsFor: no role")
		}
		for _, r := range roles {
			if r != RoleWorker && r != RoleCritic {
				return fmt.Errorf("agent: WithToolsFor: role %q: want worker or critic", r)
			}
		}
		for _, t := range ts {
			if t == nil {
				return errors.New("agent: WithToolsFor: nil tool")
			}
			c.roleExtra = append(c.roleExtra, roleTool{tool: t, roles: slices.Clone(roles)})
		}
		return nil
	}
}

// registerRoleTools adds the WithToolsFor tools to the run's registry.
func (r *run) registerRoleTools() error {
	for _, rt := range r.cfg.roleExtra {
		if err := r.reg.Register(rt.tool); err != nil {
			return fmt.Errorf("agent: tool %q: %w", rt.tool.Name(), err)
		}
	}
	return nil
}

// withRoleTools is names without the WithToolsFor tools not given to
// role, plus those that are.
func (r *run) withRoleTools(role string, names []string) []string {
	all := r.extraTools()
	if len(all) == 0 {
		return names
	}
	out := make([]string, 0, len(names))
	granted := map[string]bool{}
	extra := map[string]bool{}
	for _, rt := range all {
		extra[rt.tool.Name()] = true
		if slices.Contains(rt.roles, role) {
			granted[rt.tool.Name()] = true
		}
	}
	for _, n := range names {
		if !extra[n] || granted[n] {
			out = append(out, n)
		}
	}
	for _, rt := range all {
		if n := rt.tool.Name(); granted[n] && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// extraTools are the WithToolsFor tools and this session's MCP tools.
func (r *run) extraTools() []roleTool {
	if len(r.mcpExtra) == 0 {
		return r.cfg.roleExtra
	}
	return append(slices.Clone(r.cfg.roleExtra), r.mcpExtra...)
}

// Unwrap is the Critic's tool inside the write-ahead wrapper: the gate
// judges an MCP tool by what it is, not by its wrapper.
func (t walTool) Unwrap() tools.Tool { return t.Tool }
