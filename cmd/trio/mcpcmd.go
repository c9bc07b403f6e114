package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/spf13/cobra"

	"github.com/trioagent/trio/cmd/trio/config"
	"github.com/trioagent/trio/policy"
)

func newMCPCmd(g *globals, io stdio) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Add, list and remove the MCP servers of trio.yaml",
		Long: `The mcp commands edit the mcpServers section of trio.yaml (--config, else
./trio.yaml) in the shape Claude Code's .mcp.json uses, keeping the file's
other content and comments. Every edit is checked as a run would check it
before the file is written. trio tools lists the servers' tools.

Exit codes: 0 done, 3 a bad argument, an unknown or duplicate server, or a
configuration that does not check.`,
	}
	cmd.AddCommand(newMCPAddCmd(g, io), newMCPListCmd(g, io), newMCPRemoveCmd(g, io))
	return cmd
}

func newMCPAddCmd(g *globals, io stdio) *cobra.Command {
	var transport string
	var env, headers []string
	var host bool
	cmd := &cobra.Command{
		Use:   "add NAME -- COMMAND [ARGS...] | add --transport http NAME URL",
		Short: "Add an MCP server to trio.yaml's mcpServers",
		Long: `Add writes one server into trio.yaml's mcpServers (the file is made when
there is none), as Claude Code's "claude mcp add" does:

  trio mcp add NAME -- COMMAND [ARGS...]       a stdio server
  trio mcp add --transport http NAME URL       a streamable HTTP server
  trio mcp add --transport sse NAME URL        the older HTTP+SSE transport

Values may hold ${VAR} and ${VAR:-default}, taken from the environment when
a run starts the server; write secrets that way ('Authorization: Bearer
${TOKEN}', quoted so that the shell leaves it alone), not as values, which
land in trio.yaml as they are. A stdio server runs in the run's sandbox
once the policy's command rules allow its command line; --host runs it on
this machine, as you, outside the sandbox.`,
		Example: `  trio mcp add memory -- npx -y @modelcontextprotocol/server-memory
  trio mcp add -e ROOT=/data fs -- mcp-server-filesystem /data
  trio mcp add --transport http docs https://docs.example.com/mcp -H 'Authorization: Bearer ${DOCS_TOKEN}'`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			entry := yaml.MapSlice{}
			switch transport {
			case config.MCPStdio:
				if len(headers) > 0 {
					return configError(errors.New("--header is for http and sse servers; a stdio server takes --env"))
				}
				entry = append(entry, yaml.MapItem{Key: "type", Value: config.MCPStdio},
					yaml.MapItem{Key: "command", Value: args[1]})
				if len(args) > 2 {
					entry = append(entry, yaml.MapItem{Key: "args", Value: args[2:]})
				}
				if len(env) > 0 {
					m := yaml.MapSlice{}
					for _, kv := range env {
						k, v, ok := strings.Cut(kv, "=")
						if !ok || k == "" {
							return configError(fmt.Errorf("--env %q: want KEY=VALUE", kv))
						}
						m = append(m, yaml.MapItem{Key: k, Value: v})
					}
					entry = append(entry, yaml.MapItem{Key: "env", Value: m})
				}
				if host {
					entry = append(entry, yaml.MapItem{Key: "host", Value: true})
				}
			case config.MCPHTTP, config.MCPStreamableHTTP, config.MCPSSE:
				if len(args) != 2 {
					return configError(fmt.Errorf("--transport %s: want NAME URL, got %d arguments", transport, len(args)))
				}
				if len(env) > 0 || host {
					return configError(fmt.Errorf("--env and --host are for stdio servers, not %s", transport))
				}
				entry = append(entry, yaml.MapItem{Key: "type", Value: transport}, yaml.MapItem{Key: "url", Value: args[1]})
				if len(headers) > 0 {
					m := yaml.MapSlice{}
					for _, h := range headers {
						k, v, ok := strings.Cut(h, ":")
						if k = strings.TrimSpace(k); !ok || k == "" {
							return configError(fmt.Errorf("--header %q: want 'Name: value'", h))
						}
						v = strings.TrimSpace(v)
						if !strings.Contains(v, "${") {
							fmt.Fprintf(io.err, "trio: warning: the value of header %s goes into the file as it is; write ${VAR} to keep a secret out of it\n", k)
						}
						m = append(m, yaml.MapItem{Key: k, Value: v})
					}
					entry = append(entry, yaml.MapItem{Key: "headers", Value: m})
				}
			default:
				return configError(fmt.Errorf("--transport %q: want stdio, http (or streamable-http) or sse", transport))
			}
			path := configPath(g)
			f, err := loadExisting(path)
			if err != nil {
				return err
			}
			if s, ok := f.MCP.Servers[name]; ok {
				return configError(fmt.Errorf("%s: the MCP server %s is declared already (%s); trio mcp remove %s first", path, name, s.Key, name))
			}
			if err := editConfig(path, func(file *ast.File) error { return addServer(file, name, entry) }); err != nil {
				return err
			}
			fmt.Fprintf(io.out, "%s: added the MCP server %s (mcpServers.%s)\n", path, name, name)
			return nil
		},
	}
	cmd.Flags().StringVarP(&transport, "transport", "t", config.MCPStdio, "stdio, http (streamable HTTP; also streamable-http) or sse")
	cmd.Flags().StringArrayVarP(&env, "env", "e", nil, "KEY=VALUE in a stdio server's environment (repeatable; VALUE may hold ${VAR})")
	cmd.Flags().StringArrayVarP(&headers, "header", "H", nil, "'Name: value' sent to an http or sse server (repeatable; value may hold ${VAR})")
	cmd.Flags().BoolVar(&host, "host", false, "run the stdio server on this machine, as you, outside the sandbox")
	return cmd
}

func newMCPListCmd(g *globals, io stdio) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the MCP servers of trio.yaml (mcp.servers, mcpServers and mcp_json's file)",
		Long: `List prints each MCP server the configuration declares: its name, type,
command line or URL (${VAR} references as written; header values never),
and where it is declared. It starts nothing; trio tools lists their tools.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := loadConfig(g.config)
			if err != nil {
				return err
			}
			if len(f.MCP.Servers) == 0 {
				fmt.Fprintln(io.out, "no MCP servers (add one with trio mcp add)")
				return nil
			}
			w := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tTYPE\tSERVER\tDECLARED")
			for _, name := range f.MCP.ServerNames() {
				s := f.MCP.Servers[name]
				target := s.URL
				if s.Command != "" {
					target = policy.QuoteArgv(append([]string{s.Command}, s.Args...))
					if s.Host {
						target += "  (host: true)"
					} else {
						target += "  (in the sandbox)"
					}
				}
				if hs := mapsKeys(s.Headers, s.EnvHeaders); len(hs) > 0 {
					slices.Sort(hs)
					target += "  headers: " + strings.Join(hs, ", ")
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", name, s.Type, target, s.Key)
			}
			if err := w.Flush(); err != nil {
				return failure(err)
			}
			return nil
		},
	}
}

func newMCPRemoveCmd(g *globals, io stdio) *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove an MCP server from trio.yaml",
		Long: `Remove deletes the server NAME from trio.yaml's mcpServers or mcp.servers,
keeping the rest of the file and its comments. A server imported from the
.mcp.json file that mcp_json names is removed from that file by hand.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			path := configPath(g)
			f, err := loadExisting(path)
			if err != nil {
				return err
			}
			s, ok := f.MCP.Servers[name]
			if !ok {
				return configError(fmt.Errorf("%s: no MCP server %s; declared: %s", path, name, strings.Join(f.MCP.ServerNames(), ", ")))
			}
			section := "mcpServers"
			switch {
			case s.Key == "mcp.servers."+name:
				section = "mcp.servers"
			case s.Key != "mcpServers."+name:
				return configError(fmt.Errorf("%s: the MCP server %s is declared in %s; remove it there", path, name, s.Key))
			}
			if err := editConfig(path, func(file *ast.File) error { return removeServer(file, section, name) }); err != nil {
				return err
			}
			fmt.Fprintf(io.out, "%s: removed the MCP server %s (%s.%s)\n", path, name, section, name)
			return nil
		},
	}
}

// configPath is the file the mcp commands edit: --config, else ./trio.yaml.
func configPath(g *globals) string {
	if g.config != "" {
		return g.config
	}
	return "trio.yaml"
}

// loadExisting loads path, or is an empty configuration when there is
// no file there yet.
func loadExisting(path string) (*config.File, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return &config.File{}, nil
	}
	return loadConfig(path)
}

func mapsKeys(ms ...map[string]string) []string {
	var out []string
	for _, m := range ms {
		for k := range m {
			out = append(out, k)
		}
	}
	return out
}

// editConfig applies edit to the YAML of path (an empty document when the
// file does not exist), checks the result as a run would and writes it in
// place of the old one. Comments and the other keys stay.
func editConfig(path string, edit func(*ast.File) error) error {
	data, err := os.ReadFile(path)
	mode := fs.FileMode(0o644)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return failure(err)
	}
	if st, serr := os.Stat(path); serr == nil {
		mode = st.Mode().Perm()
	}
	file, err := parser.ParseBytes(data, parser.ParseComments)
	if err != nil {
		_, cerr := config.Parse(path, data)
		return configError(cerr)
	}
	if err := edit(file); err != nil {
		return configError(fmt.Errorf("%s: %w", path, err))
	}
	out := []byte(file.String())
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	if _, err := config.Parse(path, out); err != nil {
		return configError(fmt.Errorf("not written, the edited file would not check: %w", err))
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".trio-yaml-*")
	if err != nil {
		return failure(err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return failure(err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return failure(err)
	}
	if err := tmp.Close(); err != nil {
		return failure(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return failure(err)
	}
	return nil
}

// rootMapping is the document's top mapping; nil for an empty document.
func rootMapping(file *ast.File) (*ast.MappingNode, error) {
	if len(file.Docs) == 0 || file.Docs[0].Body == nil {
		return nil, nil
	}
	m, ok := file.Docs[0].Body.(*ast.MappingNode)
	if !ok {
		return nil, errors.New("want a mapping of keys at the top")
	}
	return m, nil
}

// addServer adds name: entry to the top-level mcpServers, made when
// missing.
func addServer(file *ast.File, name string, entry yaml.MapSlice) error {
	item := yaml.MapSlice{{Key: name, Value: entry}}
	root, err := rootMapping(file)
	if err != nil {
		return err
	}
	if root == nil {
		n, err := yaml.ValueToNode(yaml.MapSlice{{Key: "mcpServers", Value: item}})
		if err != nil {
			return err
		}
		file.Docs = []*ast.DocumentNode{ast.Document(nil, n)}
		return nil
	}
	p, err := yaml.PathString("$.mcpServers")
	if err != nil {
		return err
	}
	cur, ferr := p.FilterFile(file)
	if ferr != nil || cur == nil {
		n, err := yaml.ValueToNode(yaml.MapSlice{{Key: "mcpServers", Value: item}})
		if err != nil {
			return err
		}
		rp, _ := yaml.PathString("$")
		return rp.MergeFromNode(file, n)
	}
	if m, ok := cur.(*ast.MappingNode); ok && !m.IsFlowStyle {
		n, err := yaml.ValueToNode(item)
		if err != nil {
			return err
		}
		return p.MergeFromNode(file, n)
	}
	// A flow mapping ({} or {a: {...}}) or null: rewritten in block style
	// with the new server after the others.
	var servers yaml.MapSlice
	if err := yaml.NodeToValue(cur, &servers, yaml.UseOrderedMap()); err != nil {
		return fmt.Errorf("mcpServers: %w", err)
	}
	root.Values = slices.DeleteFunc(root.Values, func(v *ast.MappingValueNode) bool { return keyText(v.Key) == "mcpServers" })
	n, err := yaml.ValueToNode(yaml.MapSlice{{Key: "mcpServers", Value: append(servers, item...)}})
	if err != nil {
		return err
	}
	if len(root.Values) == 0 {
		file.Docs = []*ast.DocumentNode{ast.Document(nil, n)}
		return nil
	}
	rp, _ := yaml.PathString("$")
	return rp.MergeFromNode(file, n)
}

// removeServer deletes name from section (mcpServers or mcp.servers); an
// mcpServers left empty goes too.
func removeServer(file *ast.File, section, name string) error {
	root, err := rootMapping(file)
	if err != nil {
		return err
	}
	p, err := yaml.PathString("$." + section)
	if err != nil {
		return err
	}
	cur, err := p.FilterFile(file)
	if err != nil || root == nil {
		return fmt.Errorf("no %s section", section)
	}
	m, ok := cur.(*ast.MappingNode)
	if !ok {
		return fmt.Errorf("%s: want a mapping of servers", section)
	}
	i := slices.IndexFunc(m.Values, func(v *ast.MappingValueNode) bool { return keyText(v.Key) == name })
	if i < 0 {
		return fmt.Errorf("%s: no server %s", section, name)
	}
	m.Values = slices.Delete(m.Values, i, i+1)
	if len(m.Values) == 0 && section == "mcpServers" {
		root.Values = slices.DeleteFunc(root.Values, func(v *ast.MappingValueNode) bool { return keyText(v.Key) == "mcpServers" })
	}
	return nil
}

// keyText is a mapping key's text without quotes.
func keyText(n ast.MapKeyNode) string {
	if s, ok := n.(*ast.StringNode); ok {
		return s.Value
	}
	return n.String()
}
