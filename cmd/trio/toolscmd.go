package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/tools"
)

func newToolsCmd(g *globals, io stdio) *cobra.Command {
	var role string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the tools of the registry with their JSON schemas",
		Long: `Tools lists the built-in tools a run offers, with the JSON schema of their
arguments, exactly as the model receives them. Without --role, and with
--role worker, the list is the Worker's default: every built-in and the
agent's finish_step; --role planner or critic shows that role's default
subset. The tools of the MCP servers trio.yaml declares are listed for the
roles they are given to (connecting to each server; a stdio server starts
on this machine). --json prints the OpenAI tool definitions.

Exit codes: 0 listed, 3 unknown --role.`,
		Example: `  trio tools
  trio tools --role critic
  trio tools --json | jq '.[].function.name'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			view, err := builtinView(role)
			if err != nil {
				return err
			}
			if view, err = withMCPTools(cmd.Context(), g, io, view, role); err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(io.out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(view.Definitions()); err != nil {
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
	Properties map[string]struct {
		Type        any    `json:"type"`
		Description string `json:"description"`
	} `json:"properties"`
	Required []string `json:"required"`
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
			fmt.Fprintf(w, "  - %s (%v%s): %s\n", p, ps.Type, req, clip(ps.Description, 120))
		}
	}
}

// withMCPTools adds the tools of the configuration's MCP servers given to
// role (the Worker's when role is "") to v.
func withMCPTools(ctx context.Context, g *globals, io stdio, v tools.View, role string) (tools.View, error) {
	f, err := loadConfig(g.config)
	if err != nil || len(f.MCP.Servers) == 0 {
		return v, err
	}
	if role == "" {
		role = agent.RoleWorker
	}
	servers, closeAll, err := connectServers(ctx, f, nil, func(s string) { fmt.Fprintln(io.err, "trio: warning: "+s) })
	defer closeAll()
	if err != nil {
		return v, err
	}
	for _, s := range servers {
		if slices.Contains(s.roles, role) {
			if v, err = v.With(s.tools...); err != nil {
				return v, failure(err)
			}
		}
	}
	return v, nil
}
