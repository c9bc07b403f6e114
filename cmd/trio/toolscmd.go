package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/cmd/trio/config"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/tools"
)

func newToolsCmd(g *globals, io stdio) *cobra.Command {
	var role, kind string
	var asJSON, trust bool
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the tools of the registry with their JSON schemas",
		Long: `Tools lists the built-in tools a run offers, with the JSON schema of their
arguments, exactly as the model receives them. Without --role, and with
--role worker, the list is the Worker's default: every built-in and the
agent's finish_step; --role planner or critic shows that role's default
subset. The tools of the MCP servers trio.yaml declares are listed for the
roles they are given to, which means connecting to each server: a stdio
server with host: true starts on this machine, as you; one without starts
in a sandbox of the kind a run would use (--sandbox, else trio.yaml's
sandbox.kind, else auto: containerd, userns or landlock, never local
unless asked for),
on an empty temporary workspace, once the policy's command rules allow
its command line. --json prints the OpenAI tool definitions.

A trio.yaml (or policy, or host server's file) lying in the workspace of an
earlier session is checked against that session's pins first, as trio run
checks it: changed since (by the Worker's code, perhaps), nothing starts
(exit 3) until --trust-config.

Exit codes: 0 listed, 3 unknown --role, a changed control file, or an MCP
server that cannot start (the message names its key in trio.yaml).`,
		Example: `  trio tools
  trio tools --role critic
  trio tools --json | jq '.[].function.name'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			view, err := builtinView(role)
			if err != nil {
				return err
			}
			if view, err = withMCPTools(cmd.Context(), g, io, view, role, kind, trust); err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(io.out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(openAITools(view.Definitions())); err != nil {
					return failure(err)
				}
				return nil
			}
			printTools(io.out, view)
			return nil
		},
	}
	cmd.Flags().StringVar(&role, "role", "", "only the tools of this role: planner, worker or critic")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the OpenAI tool definitions as JSON")
	cmd.Flags().BoolVar(&trust, "trust-config", false, "accept control files (trio.yaml, the policy, the files of host MCP servers) in a workspace of an earlier session that changed since it, and pin them as they are now")
	cmd.Flags().StringVar(&kind, "sandbox", "", "where to start the stdio MCP servers declared without host: true, to list their tools: containerd, userns, landlock, local (no isolation) or auto (default: trio.yaml's sandbox.kind, else auto)")
	return cmd
}

// builtinView builds the built-in tools and finish_step over a throwaway
// workspace (their schemas do not depend on it) and returns the view of a
// role's default tools (agent.DefaultRoleTools).
func builtinView(role string) (tools.View, error) {
	switch role {
	case "":
		role = agent.RoleWorker
	case agent.RoleWorker, agent.RolePlanner, agent.RoleCritic:
	default:
		return tools.View{}, configError(fmt.Errorf("--role %q: want planner, worker or critic", role))
	}
	dir, err := os.MkdirTemp("", "trio-tools-")
	if err != nil {
		return tools.View{}, failure(err)
	}
	defer os.RemoveAll(dir)
	// Nothing runs here: the schemas need a workspace, not limits.
	var limits sandbox.Limits
	sb, err := sandbox.NewLocal(dir, limits)
	if err != nil {
		return tools.View{}, failure(err)
	}
	defer sb.Close()
	ws, err := tools.OpenWorkspace(dir, sb, limits)
	if err != nil {
		return tools.View{}, failure(err)
	}
	defer ws.Close()
	reg, err := tools.NewRegistry(append(tools.Builtins(ws), agent.FinishStep())...)
	if err != nil {
		return tools.View{}, failure(err)
	}
	v, err := reg.View(agent.DefaultRoleTools(role)...)
	if err != nil {
		return tools.View{}, failure(err)
	}
	return v, nil
}

// schema is the part of a JSON schema printTools shows.
type schema struct {
	Properties map[string]map[string]any `json:"properties"`
	Required   []string                  `json:"required"`
}

// typeLabel says what a property's schema accepts, readably: "string",
// "array of string", "string | null" for a union (anyOf, oneOf), "one of
// a, b" for an enum, "any" for no constraint.
func typeLabel(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return "any"
	}
	alts := func(key, sep string) string {
		xs, _ := m[key].([]any)
		var labels []string
		for _, x := range xs {
			if l := typeLabel(x); !slices.Contains(labels, l) {
				labels = append(labels, l)
			}
		}
		return strings.Join(labels, sep)
	}
	var label string
	switch t := m["type"].(type) {
	case string:
		label = t
	case []any:
		var ts []string
		for _, x := range t {
			ts = append(ts, fmt.Sprint(x))
		}
		label = strings.Join(ts, " | ")
	}
	if label == "array" {
		if it, ok := m["items"]; ok {
			label = "array of " + typeLabel(it)
		}
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		var vs []string
		for _, x := range e {
			b, _ := json.Marshal(x)
			vs = append(vs, string(b))
		}
		label = strings.TrimSpace("one of " + strings.Join(vs, ", "))
	}
	if c, ok := m["const"]; ok {
		b, _ := json.Marshal(c)
		label = string(b)
	}
	for _, u := range []struct{ key, sep string }{{"anyOf", " | "}, {"oneOf", " | "}, {"allOf", " & "}} {
		if a := alts(u.key, u.sep); a != "" {
			if label != "" {
				label += ", "
			}
			label += a
		}
	}
	if label == "" {
		return "any"
	}
	return label
}

// summary is a description's first paragraph, and the next one too when
// the first announces it ("... in one of two ways:").
func summary(desc string) string {
	paras := strings.Split(strings.TrimSpace(desc), "\n\n")
	s := paras[0]
	if strings.HasSuffix(s, ":") && len(paras) > 1 {
		s += "\n" + paras[1]
	}
	return s
}

func printTools(w io.Writer, v tools.View) {
	for i, name := range v.Names() {
		t, _ := v.Tool(name)
		if i > 0 {
			fmt.Fprintln(w)
		}
		desc := summary(t.Description())
		fmt.Fprintf(w, "%s\n  %s\n", name, strings.ReplaceAll(desc, "\n", "\n  "))
		var s schema
		raw, _ := json.Marshal(t.Schema())
		if json.Unmarshal(raw, &s) != nil {
			continue
		}
		for _, p := range slices.Sorted(maps.Keys(s.Properties)) {
			ps := s.Properties[p]
			req := ""
			if slices.Contains(s.Required, p) {
				req = ", required"
			}
			desc, _ := ps["description"].(string)
			fmt.Fprintf(w, "  - %s (%s%s): %s\n", p, typeLabel(ps), req, clip(desc, 120))
		}
	}
}

// withMCPTools adds the tools of the configuration's MCP servers given to
// role (the Worker's when role is "") to v. A stdio server declared
// without host: true starts in a sandbox of the kind a run would use
// (kind, else trio.yaml's, else auto as agent.ChooseSandbox decides it
// for an unattended run: never local unless asked for) on an empty temporary workspace, once the
// policy's command rules allow its command line; one they send to a
// person is not started here (a warning says so) and one they deny is a
// configuration error, as in a run.
func withMCPTools(ctx context.Context, g *globals, io stdio, v tools.View, role, kind string, trust bool) (tools.View, error) {
	f, err := loadConfig(g.config)
	if err != nil || len(f.MCP.Servers) == 0 {
		return v, err
	}
	// A trio.yaml in the workspace of an earlier session, changed since
	// (by the Worker's code?), starts nothing until a person trusts it.
	polPath := ""
	if f.Policy != "" {
		polPath = f.Resolve(f.Policy)
	}
	if err := pinControl("", controlFiles(f, polPath, ""), trust, newProgress(io.err, io.out, false, false)); err != nil {
		return v, err
	}
	if role == "" {
		role = agent.RoleWorker
	}
	warn := func(s string) { fmt.Fprintln(io.err, "trio: warning: "+s) }
	servers, err := declaredServers(f)
	if err != nil {
		return v, err
	}
	var box *listingSandbox
	var pol *policy.Policy
	defer func() {
		if box != nil {
			box.close()
		}
	}()
	for _, d := range servers {
		if !slices.Contains(d.roles, role) {
			continue
		}
		var c *tools.MCPConn
		if d.inSandbox() {
			if box == nil {
				if box, err = openListingSandbox(ctx, f, kind, warn); err != nil {
					return v, configError(fmt.Errorf("%s: %s: to list its tools, trio tools starts it in a sandbox: %w", f.Path, d.key, err))
				}
			}
			d.srv.Sandbox = box.starter
			c, err = box.gate.ConnectMCP(ctx, d.srv)
			if err != nil && box.asks(d.srv.Command) {
				warn(fmt.Sprintf("MCP server %s: not started, so its tools are not listed: the policy asks a person before its command runs; trio run asks, trio tools does not", d.name))
				continue
			}
			if err != nil {
				return v, configError(fmt.Errorf("%s: %s: %w", f.Path, d.key, err))
			}
		} else if len(d.srv.Command) == 0 {
			// A URL server, from the host, as the run's gate judges it.
			if pol == nil {
				if pol, _, err = loadPolicy("", f, false); err != nil {
					return v, err
				}
			}
			if pol.CheckTool(tools.MCPPrefix+d.name).Verdict == policy.Ask {
				warn(fmt.Sprintf("MCP server %s: not connected, so its tools are not listed: the policy asks a person before connecting to it; trio run asks, trio tools does not", d.name))
				continue
			}
			if c, err = tools.NewGate(pol).ConnectMCP(ctx, d.srv); err != nil {
				return v, configError(fmt.Errorf("%s: %s: %w", f.Path, d.key, err))
			}
			for _, skip := range c.Skipped {
				warn(fmt.Sprintf("MCP server %s: tool left out: %s", d.name, skip))
			}
		} else if c, err = d.connectHere(ctx, f, nil, warn); err != nil {
			return v, err
		}
		defer c.Close()
		if v, err = v.With(c.Tools()...); err != nil {
			return v, failure(err)
		}
	}
	return v, nil
}

// listingSandbox is where trio tools starts in-sandbox servers.
type listingSandbox struct {
	starter sandbox.Starter
	gate    *tools.Gate
	pol     *policy.Policy
	close   func()
}

// asks reports whether the policy sends argv to a person.
func (b *listingSandbox) asks(argv []string) bool {
	return b.pol.CheckCommand(policy.Command{Argv: argv, Line: policy.QuoteArgv(argv)}, policy.Scope{}).Verdict == policy.Ask
}

// openListingSandbox opens a sandbox of the run's kind on an empty
// temporary workspace, with the policy's limits and path rules.
func openListingSandbox(ctx context.Context, f *config.File, kind string, warn func(string)) (*listingSandbox, error) {
	pol, _, err := loadPolicy("", f, false)
	if err != nil {
		return nil, err
	}
	ws, err := os.MkdirTemp("", "trio-tools-")
	if err != nil {
		return nil, err
	}
	ws, _ = filepath.EvalSymlinks(ws)
	l := pol.Limits()
	limits := sandbox.Limits{Timeout: l.Timeout, Memory: l.Memory, CPUs: l.CPUs, Pids: l.Pids, Output: l.Output, Disk: l.Disk, Network: l.Network}
	// The one rule of every run: auto is the first isolating kind that
	// runs here; local only when asked for (nobody is asked here).
	ch, err := agent.ChooseSandbox(ctx, sandboxConfig(kind, f), pol, nil)
	if err != nil {
		os.RemoveAll(ws)
		if errors.Is(err, agent.ErrNoIsolation) {
			return nil, fmt.Errorf("%w; give --sandbox local to start it without isolation", err)
		}
		return nil, err
	}
	sc := ch.Config
	if sc.Kind == agent.SandboxLocal {
		warn("trio tools starts the in-sandbox MCP servers in the local sandbox, which does NOT isolate them")
	}
	sb, err := agent.OpenSandbox(ctx, sc, sandbox.RunSpec{Workspace: ws, RunID: fmt.Sprintf("tools-%d", os.Getpid()), Limits: limits, PathRules: tools.PathRules(pol)})
	if err != nil {
		os.RemoveAll(ws)
		return nil, err
	}
	box := &listingSandbox{pol: pol, close: func() { sb.Close(); os.RemoveAll(ws) }}
	st, ok := sb.(sandbox.Starter)
	if !ok {
		box.close()
		return nil, fmt.Errorf("the %s sandbox cannot start a long-lived process, so a stdio server cannot run in it", sc.Kind)
	}
	box.starter = st
	scope := policy.Scope{Workspace: ws}
	if d := sb.Info().WorkspaceDir; d != "" && d != ws {
		scope.Aliases = []string{d}
	}
	box.gate = tools.NewGate(pol, tools.WithScope(scope))
	return box, nil
}

// openAITool is a definition in the form OpenAI's chat API takes it, which
// --json prints, as it always has (scripts read .[].function.name).
type openAITool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		// Parameters is decoded so that it prints with its keys sorted,
		// as the provider sends it.
		Parameters any `json:"parameters,omitempty"`
	} `json:"function"`
}

func openAITools(defs []llm.ToolDef) []openAITool {
	out := make([]openAITool, len(defs))
	for i, d := range defs {
		out[i].Type = "function"
		out[i].Function.Name, out[i].Function.Description = d.Name, d.Description
		if len(d.Parameters) > 0 && json.Unmarshal(d.Parameters, &out[i].Function.Parameters) != nil {
			out[i].Function.Parameters = d.Parameters // as it is: tools made it with json.Marshal
		}
	}
	return out
}
