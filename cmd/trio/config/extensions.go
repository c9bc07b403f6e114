package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
)

// Hooks are the user's hook programs, in Claude Code's shape: per event, a
// list of matchers, each with the commands to run for the tools it
// matches. Hook commands run on the host, in the run's workspace; a
// relative script name is this file's folder's (see the README, "Hooks").
type Hooks struct {
	PreToolUse  []HookMatcher `yaml:"PreToolUse"`
	PostToolUse []HookMatcher `yaml:"PostToolUse"`
	Stop        []HookMatcher `yaml:"Stop"`
}

// HookMatcher selects tools by a regular expression on their name ("" or
// "*" for all) and lists the hooks to run for them.
type HookMatcher struct {
	Matcher string        `yaml:"matcher"`
	Hooks   []HookCommand `yaml:"hooks"`
}

// HookCommand is one hook: a shell command line and its time limit.
type HookCommand struct {
	// Type is "command" (the only kind; may be left out).
	Type    string `yaml:"type"`
	Command string `yaml:"command"`
	// Timeout is a duration ("10s") or, as in Claude Code, a number of
	// seconds. Default: 60s.
	Timeout Seconds `yaml:"timeout"`
}

// Seconds is a duration written as a Go duration ("90s") or a number of
// seconds (90), the form Claude Code's settings use.
type Seconds struct {
	time.Duration
	raw string
}

// UnmarshalYAML keeps the text; Parse checks it and names the line.
func (s *Seconds) UnmarshalYAML(b []byte) error {
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		return err
	}
	s.raw = strings.TrimSpace(fmt.Sprint(v))
	return nil
}

// MCP declares the MCP servers whose tools a run offers.
type MCP struct {
	Servers map[string]MCPServer `yaml:"servers"`
}

// MCPServer is one MCP server: stdio (Command) or streamable HTTP (URL).
// Its fields are a superset of Claude Code's .mcp.json entries (type,
// command, args, env, url, headers), so that such an entry pastes
// unchanged under mcpServers or mcp.servers.
type MCPServer struct {
	// Type is stdio (Command), http or streamable-http (URL), or sse (URL,
	// the older HTTP+SSE transport); "" means whichever of Command and URL
	// is set.
	Type string `yaml:"type"`
	// Command and Args start a stdio server.
	Command string   `yaml:"command"`
	Args    []string `yaml:"args"`
	// Env sets environment variables of a stdio server. Values, like
	// Command, Args, URL and Headers, may hold ${VAR} and ${VAR:-default},
	// taken from the host's environment when the server starts.
	Env map[string]string `yaml:"env"`
	// EnvVars names host environment variables passed to a stdio server
	// (nothing else of the host's environment is).
	EnvVars []string `yaml:"env_vars"`
	// Host runs a stdio server on the host, outside the sandbox: the
	// server is code, and there it runs as you; a run warns about it, and
	// an interactive run asks first. Without it a stdio server runs in the
	// run's sandbox, once the policy's command rules allow its command
	// line (see the README, "MCP servers").
	Host bool `yaml:"host"`
	// URL is a streamable HTTP endpoint.
	URL string `yaml:"url"`
	// Headers are sent with every request to URL. Their values are
	// secrets: write ${VAR} rather than the value; they are never logged.
	Headers map[string]string `yaml:"headers"`
	// EnvHeaders maps an HTTP header to the NAME of the environment
	// variable holding its value, which is never written here or logged.
	EnvHeaders map[string]string `yaml:"env_headers"`
	// Roles get the server's tools: worker (default), critic.
	Roles []string `yaml:"roles"`
	// Timeout bounds one tool call (default 60s); StartupTimeout the
	// connection and the tool listing (default 30s).
	Timeout        Duration `yaml:"timeout"`
	StartupTimeout Duration `yaml:"startup_timeout"`

	// Key is where the server was declared: "mcp.servers.<name>" or
	// "mcpServers.<name>" in this file, or "<.mcp.json path>: mcpServers.<name>".
	Key string `yaml:"-"`
}

// MCP server types (MCPServer.Type).
const (
	MCPStdio          = "stdio"
	MCPHTTP           = "http"
	MCPStreamableHTTP = "streamable-http"
	MCPSSE            = "sse"
)

// SSE reports whether the server speaks the older HTTP+SSE transport.
func (s MCPServer) SSE() bool { return s.Type == MCPSSE }

// Bounds of MCP and hook settings.
const (
	MaxHookTimeout = time.Hour
	MaxMCPTimeout  = time.Hour
)

var serverName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,32}$`)

// validServerName: letters, digits, _ and -, at most 32, no __ (which
// separates server and tool in mcp__<server>__<tool>).
func validServerName(n string) bool { return serverName.MatchString(n) && !strings.Contains(n, "__") }

// checkExtensions checks the hooks and mcp sections.
func (c *checker) checkExtensions(f *File) {
	for _, ev := range []struct {
		name string
		ms   []HookMatcher
	}{{"PreToolUse", f.Hooks.PreToolUse}, {"PostToolUse", f.Hooks.PostToolUse}, {"Stop", f.Hooks.Stop}} {
		for i, m := range ev.ms {
			key := fmt.Sprintf("hooks.%s[%d]", ev.name, i)
			if m.Matcher != "" && m.Matcher != "*" {
				if _, err := regexp.Compile(m.Matcher); err != nil {
					c.fail(key+".matcher", "want a regular expression matched against the tool name, got %q: %v", m.Matcher, err)
				}
			}
			if len(m.Hooks) == 0 {
				c.fail(key+".hooks", "want at least one hook: {type: command, command: ...}")
			}
			for j := range m.Hooks {
				h := &ev.ms[i].Hooks[j]
				hk := fmt.Sprintf("%s.hooks[%d]", key, j)
				if h.Type != "" && h.Type != "command" {
					c.fail(hk+".type", "want command, got %q", h.Type)
				}
				if strings.TrimSpace(h.Command) == "" {
					c.fail(hk+".command", "want a command line")
				}
				c.seconds(hk+".timeout", &h.Timeout, MaxHookTimeout)
			}
		}
	}
	for name := range f.MCP.Servers {
		c.mcpServer(f.MCP.Servers, "mcp.servers", name)
	}
	// mcp_json's servers first, then mcpServers, then mcp.servers: a
	// server this file declares replaces an imported one of its name
	// whole (to give it host: true or roles, which .mcp.json has not).
	servers := map[string]MCPServer{}
	if f.MCPJSON != "" {
		for name, s := range c.importMCPJSON(f.MCPJSON) {
			servers[name] = s
		}
	}
	for _, name := range slices.Sorted(maps.Keys(f.MCPServers)) {
		c.mcpServer(f.MCPServers, "mcpServers", name)
		if _, ok := f.MCP.Servers[name]; ok {
			c.fail("mcpServers."+name, "the server %s is declared in mcp.servers too; keep one", name)
		}
		servers[name] = f.MCPServers[name]
	}
	for name, s := range f.MCP.Servers {
		servers[name] = s
	}
	if len(servers) > 0 {
		f.MCP.Servers = servers
	}
}

// mcpServer checks the server name of servers (declared under section)
// and fills in its Key, parsed durations and type.
func (c *checker) mcpServer(servers map[string]MCPServer, section, name string) {
	s := servers[name]
	key := section + "." + name
	if s.Key == "" {
		s.Key = key
	}
	if !validServerName(name) {
		c.fail(key, "a server name is letters, digits, _ and -, at most 32, without __ (its tools are named mcp__<server>__<tool>), got %q", name)
	}
	switch s.Type {
	case "":
	case MCPStdio:
		if s.Command == "" {
			c.fail(key+".type", "type stdio wants command (the server's program)")
		}
	case MCPHTTP, MCPStreamableHTTP, MCPSSE:
		if s.URL == "" {
			c.fail(key+".type", "type %s wants url (the server's endpoint)", s.Type)
		}
	default:
		c.fail(key+".type", "want stdio, http (or streamable-http) or sse, got %q", s.Type)
	}
	switch {
	case s.Command != "" && s.URL != "":
		c.fail(key, "set command (a stdio server) or url (streamable HTTP), not both")
	case s.Command == "" && s.URL == "":
		c.fail(key, "want command (a stdio server) or url (streamable HTTP)")
	case s.URL != "":
		if u := s.URL; !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "${") {
			c.fail(key+".url", "want an http:// or https:// URL, got %q", s.URL)
		}
		if len(s.Args) > 0 || len(s.EnvVars) > 0 || len(s.Env) > 0 || s.Host {
			c.fail(key, "args, env, env_vars and host are for stdio servers (command), not url")
		}
	default:
		if len(s.EnvHeaders) > 0 || len(s.Headers) > 0 {
			c.fail(key+".headers", "headers are for url servers, not command")
		}
	}
	c.expansions(key+".command", s.Command)
	c.expansions(key+".url", s.URL)
	for i, a := range s.Args {
		c.expansions(fmt.Sprintf("%s.args[%d]", key, i), a)
	}
	for k, v := range s.Env {
		if !envName(k) {
			c.fail(key+".env", "want environment variable names as keys, got %q", k)
		}
		c.expansions(key+".env."+k, v)
	}
	for h, v := range s.Headers {
		c.expansions(key+".headers."+h, v)
	}
	for _, v := range s.EnvVars {
		if !envName(v) {
			c.fail(key+".env_vars", "want environment variable NAMES, got %q", v)
		}
	}
	for h, v := range s.EnvHeaders {
		if !envName(v) {
			c.fail(key+".env_headers."+h, "want the NAME of the environment variable holding the header's value, got %q; never put the value itself here", v)
		}
	}
	for _, r := range s.Roles {
		if r != "worker" && r != "critic" {
			c.fail(key+".roles", "want worker or critic, got %q", r)
		}
	}
	c.duration(key+".timeout", &s.Timeout, time.Second, MaxMCPTimeout)
	c.duration(key+".startup_timeout", &s.StartupTimeout, time.Second, MaxMCPTimeout)
	if s.Type == "" {
		s.Type = MCPStdio
		if s.URL != "" {
			s.Type = MCPHTTP
		}
	}
	servers[name] = s
}

// expansions checks the ${VAR} and ${VAR:-default} references of v.
func (c *checker) expansions(key, v string) {
	if _, err := Expand(v, func(string) (string, bool) { return "x", true }); err != nil {
		c.fail(key, "%v", err)
	}
}

// Expand replaces ${VAR} and ${VAR:-default} in v with VAR's value from
// lookup (the default when VAR is unset or empty), as Claude Code does in
// .mcp.json. An unset VAR without a default is an error naming it; a $
// not followed by { is kept as it is.
func Expand(v string, lookup func(string) (string, bool)) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(v, "${")
		if i < 0 {
			b.WriteString(v)
			return b.String(), nil
		}
		b.WriteString(v[:i])
		end := strings.IndexByte(v[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("%q: ${ without a closing }", v)
		}
		ref := v[i+2 : i+end]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !envName(name) {
			return "", fmt.Errorf("%q: ${%s}: want ${NAME} or ${NAME:-default}", v, ref)
		}
		val, ok := lookup(name)
		switch {
		case ok && val != "":
		case hasDef:
			val = def
		case !ok:
			return "", fmt.Errorf("$%s is not set (named in %q; write ${%s:-default} for a default)", name, v, name)
		}
		b.WriteString(val)
		v = v[i+end+1:]
	}
}

// Expanded is s with every ${VAR} reference of its command, args, env,
// url and headers replaced from lookup (the host's environment: Expand).
func (s MCPServer) Expanded(lookup func(string) (string, bool)) (MCPServer, error) {
	var err error
	x := func(field, v string) string {
		if err != nil {
			return v
		}
		out, e := Expand(v, lookup)
		if e != nil {
			err = fmt.Errorf("%s.%s: %w", s.Key, field, e)
		}
		return out
	}
	out := s
	out.Command = x("command", s.Command)
	out.URL = x("url", s.URL)
	out.Args = make([]string, len(s.Args))
	for i, a := range s.Args {
		out.Args[i] = x(fmt.Sprintf("args[%d]", i), a)
	}
	out.Env = map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		out.Env[k] = x("env."+k, s.Env[k])
	}
	out.Headers = map[string]string{}
	for _, h := range slices.Sorted(maps.Keys(s.Headers)) {
		out.Headers[h] = x("headers."+h, s.Headers[h])
	}
	return out, err
}

// seconds parses a Seconds within (0, hi].
func (c *checker) seconds(key string, s *Seconds, hi time.Duration) {
	if s.raw == "" {
		return
	}
	v, err := time.ParseDuration(s.raw)
	if n, nerr := strconv.ParseFloat(s.raw, 64); nerr == nil {
		v, err = time.Duration(n*float64(time.Second)), nil
	}
	if err != nil || v <= 0 || v > hi {
		c.fail(key, "want a duration such as 10s, or a number of seconds, up to %s; got %q", hi, s.raw)
		return
	}
	s.Duration = v
}

// ServerNames are the declared MCP servers, sorted.
func (m MCP) ServerNames() []string {
	names := make([]string, 0, len(m.Servers))
	for n := range m.Servers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
