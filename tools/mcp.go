package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/invopop/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trioagent/trio/internal/schema"
	"github.com/trioagent/trio/sandbox"
)

// Defaults of an MCPServer's time limits.
const (
	DefaultMCPCallTimeout  = 60 * time.Second
	DefaultMCPStartTimeout = 30 * time.Second
)

// MCPPrefix starts the name of every MCP tool: mcp__<server>__<tool>, the
// convention of Claude Code, so that policy rules such as
// tools.deny: ["mcp__github__*"] read the same.
const MCPPrefix = "mcp__"

// MCPServer declares one MCP server: a stdio command, a streamable HTTP
// URL, or (for embedders and tests) a ready transport.
type MCPServer struct {
	// Name is the server's name in tool names (letters, digits and -).
	Name string
	// Command is the argv of a stdio server. It runs on the host, as the
	// user, outside the sandbox (the sandbox cannot stream a process's
	// stdin and stdout yet): only the user's own declaration starts one.
	Command []string
	// Env adds KEY=VALUE entries to a stdio server's environment, which is
	// otherwise the sandbox's allow-listed base: no API keys.
	Env []string
	// Dir is a stdio server's working folder.
	Dir string
	// URL is a streamable HTTP endpoint; Headers are sent with every
	// request. Header values are secrets: they are never logged or put in
	// an error.
	URL     string
	Headers map[string]string
	// HTTPClient, when set, carries the HTTP requests (its Transport gets
	// the headers added).
	HTTPClient *http.Client
	// Transport, when set, is used instead of Command or URL.
	Transport mcp.Transport
	// CallTimeout bounds one tool call, StartTimeout the connection and
	// the tool listing; zero means the defaults.
	CallTimeout, StartTimeout time.Duration
}

var mcpServerName = regexp.MustCompile(`^[a-zA-Z0-9-]{1,32}$`)

// MCPConn is a connection to one MCP server and the tools it offers.
// Every call of its tools still passes the gate. A server that dies or
// hangs makes its tools' calls fail as tool errors the model reads; it
// never makes a run hang. An MCPConn is safe for concurrent use.
type MCPConn struct {
	server  MCPServer
	session *mcp.ClientSession
	tools   []Tool
	// Skipped are the server's tools left out, with why (a name too long
	// for a function name, a schema that cannot be checked).
	Skipped []string
	stderr  *limitedBuffer
	mu      sync.Mutex
	closed  bool
}

// ConnectMCP starts or dials the server, initialises the session and
// lists its tools. Any failure is an error naming the server (and, for a
// stdio server, the end of what it wrote on stderr); header values never
// appear in it.
func ConnectMCP(ctx context.Context, s MCPServer) (*MCPConn, error) {
	if !mcpServerName.MatchString(s.Name) {
		return nil, fmt.Errorf("mcp: server name %q: want letters, digits and -, at most 32", s.Name)
	}
	if s.CallTimeout <= 0 {
		s.CallTimeout = DefaultMCPCallTimeout
	}
	if s.StartTimeout <= 0 {
		s.StartTimeout = DefaultMCPStartTimeout
	}
	c := &MCPConn{server: s}
	t, err := c.transport()
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, s.StartTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "trio", Version: "v1"}, nil)
	c.session, err = client.Connect(sctx, t, nil)
	if err != nil {
		return nil, c.startError("connect", sctx, err)
	}
	for tool, err := range c.session.Tools(sctx, nil) {
		if err != nil {
			c.Close()
			return nil, c.startError("list tools", sctx, err)
		}
		mt, skip := newMCPTool(c, tool)
		if skip != "" {
			c.Skipped = append(c.Skipped, skip)
			continue
		}
		c.tools = append(c.tools, mt)
	}
	return c, nil
}

func (c *MCPConn) transport() (mcp.Transport, error) {
	s := c.server
	switch {
	case s.Transport != nil:
		return s.Transport, nil
	case len(s.Command) > 0 && s.URL != "":
		return nil, fmt.Errorf("mcp: server %s: both a command and a URL", s.Name)
	case len(s.Command) > 0:
		cmd := exec.Command(s.Command[0], s.Command[1:]...)
		home, _ := os.UserHomeDir()
		cmd.Env = sandbox.BaseEnv(os.Getenv("PATH"), home, os.TempDir(), s.Env...)
		cmd.Dir = s.Dir
		c.stderr = &limitedBuffer{max: 4 << 10}
		cmd.Stderr = c.stderr
		// Its own process group: a server's children are not the
		// terminal's, and Ctrl-C reaches them through Close.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
	case s.URL != "":
		hc := s.HTTPClient
		if hc == nil {
			hc = &http.Client{}
		}
		cp := *hc
		base := cp.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		cp.Transport = headerTransport{base: base, headers: s.Headers}
		return &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: &cp, MaxRetries: 1, DisableStandaloneSSE: true}, nil
	}
	return nil, fmt.Errorf("mcp: server %s: no command and no URL", s.Name)
}

// startError says why a server did not start, without header values.
func (c *MCPConn) startError(what string, ctx context.Context, err error) error {
	msg := err.Error()
	for _, v := range c.server.Headers {
		if v != "" {
			msg = strings.ReplaceAll(msg, v, "[header value]")
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		msg = fmt.Sprintf("no answer within %s (%s)", c.server.StartTimeout, msg)
	}
	if c.stderr != nil {
		if tail := strings.TrimSpace(c.stderr.String()); tail != "" {
			msg += "; its stderr: " + tail
		}
	}
	return fmt.Errorf("mcp: server %s: %s: %s", c.server.Name, what, msg)
}

// Name is the server's name.
func (c *MCPConn) Name() string { return c.server.Name }

// Tools are the server's tools, named mcp__<server>__<tool>.
func (c *MCPConn) Tools() []Tool { return append([]Tool(nil), c.tools...) }

// Close ends the session (and stops a stdio server). It may be called
// more than once.
func (c *MCPConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.session == nil {
		return nil
	}
	c.closed = true
	return c.session.Close()
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range h.headers {
		req.Header.Set(k, v)
	}
	return h.base.RoundTrip(req)
}

// mcpTool is one tool of an MCP server in the registry.
type mcpTool struct {
	conn              *MCPConn
	name, remote      string
	description       string
	schema            *jsonschema.Schema
	check             *schema.Validator
	readOnly, destroy bool
}

// newMCPTool converts a listed tool; skip says why it cannot be offered.
func newMCPTool(c *MCPConn, t *mcp.Tool) (*mcpTool, string) {
	name := MCPPrefix + c.server.Name + "__" + t.Name
	if !validName.MatchString(name) {
		return nil, fmt.Sprintf("%s: the name %q is not a valid function name ([a-zA-Z0-9_-]{1,64})", t.Name, name)
	}
	raw, err := json.Marshal(t.InputSchema)
	if err != nil || string(raw) == "null" {
		raw = []byte(`{"type":"object"}`)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Sprintf("%s: input schema: %v", t.Name, err)
	}
	v, err := schema.Compile(&s)
	if err != nil {
		return nil, fmt.Sprintf("%s: input schema: %v", t.Name, err)
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	desc = fmt.Sprintf("%s\n\n(A tool of the MCP server %q. Its effects are not known to the policy.)", strings.TrimSpace(desc), c.server.Name)
	mt := &mcpTool{conn: c, name: name, remote: t.Name, description: desc, schema: &s, check: v}
	if a := t.Annotations; a != nil {
		mt.readOnly = a.ReadOnlyHint
		mt.destroy = a.DestructiveHint != nil && *a.DestructiveHint
	}
	return mt, ""
}

func (t *mcpTool) Name() string               { return t.name }
func (t *mcpTool) Description() string        { return t.description }
func (t *mcpTool) Schema() *jsonschema.Schema { return t.schema }

// opaqueEffects marks MCP tools for the gate: a server declares no
// effects the policy can judge, only hints it cannot verify.
func (t *mcpTool) opaqueEffects() string {
	hint := "the server's hints: none"
	switch {
	case t.destroy:
		hint = "the server hints it is destructive"
	case t.readOnly:
		hint = "the server hints read-only, which the policy cannot verify"
	}
	return "an MCP tool of server " + t.conn.server.Name + "; " + hint
}

// Decode checks the arguments against the server's schema, the check
// typed tools get from their struct.
func (t *mcpTool) Decode(raw json.RawMessage) (Invocation, error) {
	args := normalizeArgs(raw)
	if err := t.check.Validate(args); err != nil {
		var se *schema.Error
		if errors.As(err, &se) {
			return Invocation{}, argumentError(se)
		}
		return Invocation{}, err
	}
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil {
		return Invocation{}, &ArgumentError{Problem: "must be a JSON object"}
	}
	return Invocation{Run: func(ctx context.Context) (Result, error) { return t.call(ctx, m) }}, nil
}

// call runs the tool on the server. Everything the server does wrong (it
// died, it is slow, its reply is malformed, the tool failed) is a result
// the model reads; only the caller's own cancellation is an error.
func (t *mcpTool) call(ctx context.Context, args map[string]any) (Result, error) {
	c := t.conn
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return errorResult("the MCP server %s is closed; its tools cannot be called", c.server.Name), nil
	}
	cctx, cancel := context.WithTimeout(ctx, c.server.CallTimeout)
	defer cancel()
	res, err := c.session.CallTool(cctx, &mcp.CallToolParams{Name: t.remote, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		if errors.Is(cctx.Err(), context.DeadlineExceeded) {
			return errorResult("the MCP server %s did not answer %s within %s; the call was abandoned", c.server.Name, t.remote, c.server.CallTimeout), nil
		}
		return errorResult("the MCP server %s failed on %s: %s", c.server.Name, t.remote, c.redact(err.Error())), nil
	}
	out := contentText(res)
	if res.IsError {
		return Result{OK: false, Output: out, ExitCode: 1}, nil
	}
	return Result{OK: true, Output: out}, nil
}

func (c *MCPConn) redact(s string) string {
	for _, v := range c.server.Headers {
		if v != "" {
			s = strings.ReplaceAll(s, v, "[header value]")
		}
	}
	return s
}

// contentText is a tool result as text for the model: text content as
// is, structured content as JSON, other content named by its kind.
func contentText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch v := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, v.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes, not shown]", v.MIMEType, len(v.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes, not shown]", v.MIMEType, len(v.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s]", v.URI))
		case *mcp.EmbeddedResource:
			if r := v.Resource; r != nil && r.Text != "" {
				parts = append(parts, r.Text)
			} else if r != nil {
				parts = append(parts, fmt.Sprintf("[resource %s]", r.URI))
			}
		default:
			parts = append(parts, fmt.Sprintf("[%T content, not shown]", c))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}
