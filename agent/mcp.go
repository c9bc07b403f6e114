package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/tools"
)

// ErrMCPStart is wrapped (by an *MCPStartError) when an MCP server given
// with WithMCPServers did not start: the policy denied its command, a
// person refused it, the sandbox cannot start processes, or the server
// failed to connect. The run stops before any step.
var ErrMCPStart = errors.New("MCP server did not start")

// MCPStartError says which server did not start, and why.
type MCPStartError struct {
	Server string
	Err    error
}

func (e *MCPStartError) Error() string   { return "agent: " + e.Err.Error() }
func (e *MCPStartError) Unwrap() []error { return []error{e.Err, ErrMCPStart} }

// roleServer is an MCP server and the roles its tools are for.
type roleServer struct {
	server tools.MCPServer
	roles  []string
}

// WithMCPServers has the run connect to servers right after it opens its
// sandbox (in every session: Resume connects again) and offer their
// tools, mcp__<server>__<tool>, to the named roles (worker, critic) on
// top of each role's subset; the run closes them when it ends.
//
// A stdio server (Command) starts inside the run's sandbox, which must
// then be a sandbox.Starter (or inside MCPServer.Sandbox when set), with
// Dir relative to the workspace; it never runs on the host this way (for
// that, connect it yourself with tools.ConnectMCP and give its tools with
// WithToolsFor). Before it starts, its command line passes the policy's
// command rules as a run_command would: deny, or an ask that is refused
// (always, when the policy is unattended), stops the run before any step
// with an error wrapping ErrMCPStart; the decision goes to the audit log
// as a record of the tool mcp__<server> (the run folder stays, with that
// record, and Resume tries again). A URL or transport server is
// connected as is.
func WithMCPServers(roles []string, servers ...tools.MCPServer) Option {
	return func(c *config) error {
		if len(roles) == 0 {
			return errors.New("agent: WithMCPServers: no role")
		}
		for _, r := range roles {
			if r != RoleWorker && r != RoleCritic {
				return fmt.Errorf("agent: WithMCPServers: role %q: want worker or critic", r)
			}
		}
		for _, s := range servers {
			if len(s.Command) == 0 && s.URL == "" && s.Transport == nil {
				return fmt.Errorf("agent: WithMCPServers: server %q: no command, URL or transport", s.Name)
			}
			for _, o := range c.mcpServers {
				if o.server.Name == s.Name {
					return fmt.Errorf("agent: WithMCPServers: server %q given twice", s.Name)
				}
			}
			c.mcpServers = append(c.mcpServers, roleServer{server: s, roles: slices.Clone(roles)})
		}
		return nil
	}
}

// connectMCP connects the WithMCPServers servers, starting stdio servers
// in the run's sandbox, and registers their tools for their roles.
func (r *run) connectMCP(ctx context.Context) error {
	if len(r.cfg.mcpServers) == 0 {
		return nil
	}
	g := r.startGate()
	for _, rs := range r.cfg.mcpServers {
		s := rs.server
		if len(s.Command) > 0 && s.Sandbox == nil && s.URL == "" && s.Transport == nil {
			st, ok := r.sb.Sandbox.(sandbox.Starter)
			if !ok {
				return &MCPStartError{Server: s.Name, Err: fmt.Errorf("mcp: server %s: the %s sandbox cannot start a long-lived process, so a stdio server cannot run in it; use another sandbox kind, or a URL server", s.Name, r.sb.Info().Kind)}
			}
			s.Sandbox = st
		}
		c, err := g.ConnectMCP(ctx, s)
		if err != nil {
			return &MCPStartError{Server: s.Name, Err: err}
		}
		r.mcpConns = append(r.mcpConns, c)
		where := "over its URL"
		if s.Sandbox != nil {
			where = "in the " + r.sb.Info().Kind + " sandbox"
			if !r.sb.Info().Isolated {
				where += ", which does NOT isolate it"
			}
		}
		r.emit(Event{Kind: EventSandbox, Message: fmt.Sprintf("MCP server %s connected %s: %d tools", s.Name, where, len(c.Tools()))})
		for _, skip := range c.Skipped {
			r.emit(Event{Kind: EventWarning, Message: fmt.Sprintf("MCP server %s: tool left out: %s", s.Name, skip)})
		}
		for _, t := range c.Tools() {
			if err := r.reg.Register(t); err != nil {
				return &MCPStartError{Server: s.Name, Err: fmt.Errorf("mcp: server %s: tool %q: %w", s.Name, t.Name(), err)}
			}
			r.mcpExtra = append(r.mcpExtra, roleTool{tool: t, roles: rs.roles})
		}
	}
	return nil
}

// startGate judges the servers' command lines: the run's policy, scope and
// confirmer, no hooks (a start is not a model's call), and an observer
// that writes the audit log only (a start is not a tool call of a role).
func (r *run) startGate() *tools.Gate {
	opts := []tools.GateOption{tools.WithScope(r.scope()), tools.WithObserver(tools.ObserverFunc(func(rec tools.Record) {
		_ = r.auditOut.write(auditLine(rec, nil), false)
		if rec.Outcome == tools.OutcomeDenied {
			r.emit(Event{Kind: EventWarning, Message: fmt.Sprintf("MCP server %s not started: %s", rec.Tool, rec.Decision.Reason)})
		}
	}))}
	if r.cfg.confirmer != nil {
		opts = append(opts, tools.WithConfirmer(r.cfg.confirmer))
	}
	return tools.NewGate(r.cfg.policy, opts...)
}

// closeMCP closes the servers, before the sandbox they run in closes.
func (r *run) closeMCP() {
	for _, c := range r.mcpConns {
		c.Close()
	}
	r.mcpConns = nil
}
