package config

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
)

// Hooks are the user's hook programs, in Claude Code's shape: per event, a
// list of matchers, each with the commands to run for the tools it
// matches. Hook commands run on the host, in this file's folder (see the
// README, "Hooks").
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
type MCPServer struct {
	// Command and Args start a stdio server.
	Command string   `yaml:"command"`
	Args    []string `yaml:"args"`
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
	// EnvHeaders maps an HTTP header to the NAME of the environment
	// variable holding its value, which is never written here or logged.
	EnvHeaders map[string]string `yaml:"env_headers"`
	// Roles get the server's tools: worker (default), critic.
	Roles []string `yaml:"roles"`
	// Timeout bounds one tool call (default 60s); StartupTimeout the
	// connection and the tool listing (default 30s).
	Timeout        Duration `yaml:"timeout"`
	StartupTimeout Duration `yaml:"startup_timeout"`
}

// Bounds of MCP and hook settings.
const (
	MaxHookTimeout = time.Hour
	MaxMCPTimeout  = time.Hour
)

var serverName = regexp.MustCompile(`^[a-zA-Z0-9-]{1,32}$`)

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
	for name, s := range f.MCP.Servers {
		key := "mcp.servers." + name
		if !serverName.MatchString(name) {
			c.fail(key, "a server name is letters, digits and -, at most 32 (its tools are named mcp__<server>__<tool>), got %q", name)
		}
		switch {
		case s.Command != "" && s.URL != "":
			c.fail(key, "set command (a stdio server) or url (streamable HTTP), not both")
		case s.Command == "" && s.URL == "":
			c.fail(key, "want command (a stdio server) or url (streamable HTTP)")
		case s.URL != "":
			if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
				c.fail(key+".url", "want an http:// or https:// URL, got %q", s.URL)
			}
			if len(s.Args) > 0 || len(s.EnvVars) > 0 || s.Host {
				c.fail(key, "args, env_vars and host are for stdio servers (command), not url")
			}
		default:
			if len(s.EnvHeaders) > 0 {
				c.fail(key+".env_headers", "headers are for url servers, not command")
			}
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
		sv := f.MCP.Servers[name]
		c.duration(key+".timeout", &sv.Timeout, time.Second, MaxMCPTimeout)
		c.duration(key+".startup_timeout", &sv.StartupTimeout, time.Second, MaxMCPTimeout)
		f.MCP.Servers[name] = sv
	}
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
