package config

import (
	"os"
	"path/filepath"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/trioagent/trio/internal/yamldecode"
)

// claudeServer is one entry of a .mcp.json file's mcpServers, as Claude
// Code, Claude Desktop and Cursor write it. Nothing else is read from such
// a file: host: true, roles and the time limits are Trio's, and a file
// that is also Claude Code's (and may be in the workspace, where the
// Worker writes) gives them only through trio.yaml.
type claudeServer struct {
	Type    string            `yaml:"type"`
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers"`
}

// importMCPJSON reads the mcpServers of the file mcp_json names (relative
// to this configuration's folder) and checks them; problems name that
// file and line.
func (c *checker) importMCPJSON(rel string) map[string]MCPServer {
	path := rel
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(c.name), rel)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		c.fail("mcp_json", "want a .mcp.json file (its mcpServers are imported): %v", err)
		return nil
	}
	astf, err := parser.ParseBytes(data, 0)
	if err != nil {
		c.errs = append(c.errs, yamlError(path, err))
		return nil
	}
	jc := checker{name: path, file: astf}
	var node ast.Node
	if p, err := yaml.PathString("$.mcpServers"); err == nil {
		node, _ = p.FilterFile(astf)
	}
	if node == nil {
		jc.fail("mcpServers", "want a mcpServers object (named in %s: mcp_json)", c.name)
		c.errs = append(c.errs, jc.errs...)
		return nil
	}
	m, ok := node.(*ast.MappingNode)
	if !ok {
		jc.fail("mcpServers", "want an object: server name to {command, args, env} or {type, url, headers}")
		c.errs = append(c.errs, jc.errs...)
		return nil
	}
	out := make(map[string]MCPServer, len(m.Values))
	for _, kv := range m.Values {
		name := kv.Key.String()
		if sk, ok := kv.Key.(*ast.StringNode); ok {
			name = sk.Value
		}
		var e claudeServer
		errs := yamldecode.All(kv.Value, &e)
		for _, err := range errs {
			jc.errs = append(jc.errs, yamlError(path, err))
		}
		if len(errs) > 0 {
			continue
		}
		out[name] = MCPServer{Type: e.Type, Command: e.Command, Args: e.Args, Env: e.Env, URL: e.URL, Headers: e.Headers,
			Key: path + ": mcpServers." + name}
		jc.mcpServer(out, "mcpServers", name)
	}
	c.errs = append(c.errs, jc.errs...)
	return out
}
