package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/invopop/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trioagent/trio/internal/schema"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
)

// Defaults of an MCPServer's time limits. A stdio server gets longer to
// start: `npx -y` and `uvx` fetch and install its package on first use,
// which takes minutes on a slow connection.
const (
	DefaultMCPCallTimeout         = 60 * time.Second
	DefaultMCPStartTimeout        = 30 * time.Second
	DefaultMCPCommandStartTimeout = 3 * time.Minute
)

// MCPPrefix starts the name of every MCP tool: mcp__<server>__<tool>, the
// convention of Claude Code, so that policy rules such as
// tools.deny: ["mcp__github__*"] read the same.
const MCPPrefix = "mcp__"

// MCPServer declares one MCP server: a stdio command, a streamable HTTP
// URL, or (for embedders and tests) a ready transport.
type MCPServer struct {
	// Name is the server's name in tool names (letters, digits, _ and -,
	// no __, at most 32).
	Name string
	// Command is the argv of a stdio server. With Sandbox set it runs
	// there, confined as the sandbox's commands are; without, it runs on
	// the host, as the user, outside any sandbox.
	Command []string
	// Sandbox, when set, starts Command inside it (see sandbox.Starter).
	Sandbox sandbox.Starter
	// Env adds KEY=VALUE entries to a stdio server's environment, which is
	// otherwise the sandbox's allow-listed base: no API keys.
	Env []string
	// Dir is a stdio server's working folder: relative to the sandbox's
	// workspace with Sandbox set ("" is its root), a host folder without.
	Dir string
	// URL is a streamable HTTP endpoint; Headers are sent with every
	// request. Header values are secrets: they are never logged or put in
	// an error.
	URL     string
	Headers map[string]string
	// SSE speaks the older HTTP+SSE transport (MCP 2024-11-05) to URL
	// instead of streamable HTTP.
	SSE bool
	// HTTPClient, when set, carries the HTTP requests (its Transport gets
	// the headers added).
	HTTPClient *http.Client
	// Transport, when set, is used instead of Command or URL.
	Transport mcp.Transport
	// CallTimeout bounds one tool call, StartTimeout the connection and
	// the tool listing (the start of a stdio server included); zero means
	// the defaults.
	CallTimeout, StartTimeout time.Duration
}

var mcpServerName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,32}$`)

// ValidMCPServerName reports whether name can name a server: letters,
// digits, _ and -, at most 32, and no __ (which separates the server from
// the tool in mcp__<server>__<tool>).
func ValidMCPServerName(name string) bool {
	return mcpServerName.MatchString(name) && !strings.Contains(name, "__")
}

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
	proc    sandbox.Process    // a server started in a sandbox
	stdin   *watchedWriter     // proc's stdin
	exited  chan struct{}      // closed when proc ended
	exit    sandbox.Result     // how proc ended, once exited is closed
	cancel  context.CancelFunc // ends an SSE session's stream
	mu      sync.Mutex
	closed  bool
}

// ConnectMCP starts or dials the server, initialises the session and
// lists its tools. Any failure is an error naming the server (and, for a
// stdio server, the end of what it wrote on stderr); header values never
// appear in it.
func ConnectMCP(ctx context.Context, s MCPServer) (*MCPConn, error) {
	if !ValidMCPServerName(s.Name) {
		return nil, fmt.Errorf("mcp: server name %q: want letters, digits, _ and -, at most 32, without __", s.Name)
	}
	if s.CallTimeout <= 0 {
		s.CallTimeout = DefaultMCPCallTimeout
	}
	if s.StartTimeout <= 0 {
		s.StartTimeout = DefaultMCPStartTimeout
		if len(s.Command) > 0 {
			s.StartTimeout = DefaultMCPCommandStartTimeout
		}
	}
	c := &MCPConn{server: s}
	sctx, cancel := context.WithTimeout(ctx, s.StartTimeout)
	defer cancel()
	t, err := c.transport(sctx)
	if err != nil {
		return nil, err
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "trio", Version: "v1"}, nil)
	cctx := sctx
	if s.SSE {
		// The SSE transport's event stream lives as long as the context
		// it was opened with: the session's, ended by Close, and by the
		// start timeout only while starting.
		var lcancel context.CancelFunc
		cctx, lcancel = context.WithCancel(context.WithoutCancel(ctx))
		c.cancel = lcancel
		stop := context.AfterFunc(sctx, lcancel)
		defer stop()
	}
	c.session, err = client.Connect(cctx, t, nil)
	if err != nil {
		err = c.startError("connect", sctx, err)
		c.Close()
		return nil, err
	}
	var listed []*mcp.Tool
	for tool, err := range c.session.Tools(sctx, nil) {
		if err != nil {
			err = c.startError("list tools", sctx, err)
			c.Close()
			return nil, err
		}
		listed = append(listed, tool)
	}
	remote := make([]string, len(listed))
	for i, t := range listed {
		remote[i] = t.Name
	}
	names, clashes := functionNames(s.Name, remote)
	for _, tool := range listed {
		name, ok := names[tool.Name]
		if !ok {
			c.Skipped = append(c.Skipped, fmt.Sprintf("%s: %s", tool.Name, clashes[tool.Name]))
			continue
		}
		mt, skip := newMCPTool(c, tool, name)
		if skip != "" {
			c.Skipped = append(c.Skipped, skip)
			continue
		}
		c.tools = append(c.tools, mt)
	}
	return c, nil
}

func (c *MCPConn) transport(ctx context.Context) (mcp.Transport, error) {
	s := c.server
	switch {
	case s.Transport != nil:
		return s.Transport, nil
	case len(s.Command) > 0 && s.URL != "":
		return nil, fmt.Errorf("mcp: server %s: both a command and a URL", s.Name)
	case len(s.Command) > 0:
		// In the given sandbox, or (host: true) on this machine as the
		// user, in its own process group: the same Process either way, so
		// a crash, a call timeout and a server that stops reading its
		// stdin end alike.
		var p sandbox.Process
		var err error
		if s.Sandbox != nil {
			p, err = s.Sandbox.Start(ctx, sandbox.Command{Argv: s.Command, Env: s.Env, Dir: s.Dir})
			if err != nil {
				return nil, fmt.Errorf("mcp: server %s: start %s in the sandbox: %w", s.Name, policy.QuoteArgv(s.Command), err)
			}
		} else {
			home, _ := os.UserHomeDir()
			env := sandbox.BaseEnv(os.Getenv("PATH"), home, os.TempDir(), s.Env...)
			if p, err = sandbox.StartHost(s.Command, s.Dir, env, 4<<10); err != nil {
				return nil, fmt.Errorf("mcp: server %s: %w", s.Name, err)
			}
		}
		c.proc, c.exited = p, make(chan struct{})
		go func() {
			c.exit, _ = p.Wait()
			close(c.exited)
		}()
		c.stdin = &watchedWriter{w: p.Stdin()}
		return &mcp.IOTransport{Reader: p.Stdout(), Writer: c.stdin}, nil
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
		if s.SSE {
			return &mcp.SSEClientTransport{Endpoint: s.URL, HTTPClient: &cp}, nil
		}
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
	c.settle()
	msg += c.exitNote(4 << 10)
	return fmt.Errorf("mcp: server %s: %s: %s", c.server.Name, what, msg)
}

// settle gives a sandboxed server whose connection broke (most likely it
// died) a moment to be reaped, so that the error says how it ended.
func (c *MCPConn) settle() {
	if c.proc == nil {
		return
	}
	select {
	case <-c.exited:
	case <-time.After(time.Second):
	}
}

// exitNote says how a stdio server ended, when it did, and the end of
// what it wrote on stderr (at most max bytes), for an error message.
func (c *MCPConn) exitNote(max int) string {
	var note, tail string
	switch {
	case c.proc != nil:
		select {
		case <-c.exited:
			note = fmt.Sprintf("; it exited with code %d", c.exit.ExitCode)
			if c.exit.ExitCode == -1 {
				note = "; a signal ended it"
			}
			if c.exit.OOMKilled {
				note += " (out of memory)"
			}
		default:
		}
		tail = c.proc.Stderr()
	}
	tail = strings.TrimSpace(tail)
	if len(tail) > max {
		tail = "..." + tail[len(tail)-max:]
	}
	if tail != "" {
		note += "; its stderr: " + c.redact(tail)
	}
	return note
}

// ConnectMCP connects to s as the package's ConnectMCP does, once the
// policy has judged a stdio server's command line as it judges
// run_command's (the command rules, path arguments against the
// workspace): deny is an error naming the rule; ask goes to g's
// confirmer, so it is denied when the policy is unattended or no one can
// answer. g's observers get one Record of the start, for the tool
// mcp__<server>, with the decision, the answer and how the start ended.
// Hooks do not run: starting a server is not a model's call. A URL
// server is reached from the host (the sandbox has no network): the
// policy's tools rules decide whether to connect to it, by the name
// mcp__<server> (tools.deny: ["mcp__docs"] refuses it, tools.ask asks
// first; no rule naming it connects, and each of its tools is still judged
// call by call), and the Record says which host it is. A transport server
// is connected without a Record.
func (g *Gate) ConnectMCP(ctx context.Context, s MCPServer) (*MCPConn, error) {
	if len(s.Command) == 0 && s.URL != "" && s.Transport == nil {
		return g.connectURL(ctx, s)
	}
	if len(s.Command) == 0 {
		return ConnectMCP(ctx, s)
	}
	e := Effect{Kind: EffectExec, Command: policy.Command{Argv: s.Command, Line: policy.QuoteArgv(s.Command)}}
	if s.Sandbox != nil {
		e.Dir = s.Dir
	}
	rec := Record{Time: time.Now(), CallID: "start-" + s.Name, Role: CallerRole(ctx), Tool: MCPPrefix + s.Name, Effects: []Effect{e}}
	observe := func() {
		for _, o := range g.observers {
			o.Observe(rec)
		}
	}
	sc := g.scope
	sc.Dir = e.Dir
	checks := []check{{d: g.policy.CheckCommand(e.Command, sc), effect: &rec.Effects[0]}}
	rec.Decision = checks[0].d
	d := rec.Decision
	if d.Verdict == policy.Ask {
		var err error
		if d, err = g.confirm(ctx, rec.Tool, checks, &rec); err != nil {
			rec.Outcome, rec.Error = OutcomeError, err.Error()
			observe()
			return nil, fmt.Errorf("mcp: server %s: %w", s.Name, err)
		}
	}
	if d.Verdict != policy.Allow {
		rec.Decision, rec.Outcome = d, OutcomeDenied
		observe()
		return nil, fmt.Errorf("mcp: server %s: not started: the policy denies its command %s: %s (rule: %s)", s.Name, e.Command.Line, d.Reason, d.Rule)
	}
	start := time.Now()
	c, err := ConnectMCP(ctx, s)
	rec.Duration = time.Since(start)
	rec.Outcome = OutcomeOK
	if err != nil {
		rec.Outcome, rec.Error = OutcomeError, err.Error()
	}
	observe()
	return c, err
}

// connectURL judges and records the connection to a URL server.
func (g *Gate) connectURL(ctx context.Context, s MCPServer) (*MCPConn, error) {
	tool := MCPPrefix + s.Name
	host := s.URL
	if u, err := url.Parse(s.URL); err == nil {
		host = u.Scheme + "://" + u.Host // no path, query or user: they may hold secrets
	}
	rec := Record{Time: time.Now(), CallID: "connect-" + s.Name, Role: CallerRole(ctx), Tool: tool}
	observe := func() {
		for _, o := range g.observers {
			o.Observe(rec)
		}
	}
	d := g.policy.CheckTool(tool)
	if d.Rule == "tools-default-allow" {
		d.Reason = fmt.Sprintf("no tools rule names %s: connecting to %s from the host; each of its tools is judged when called", tool, host)
	} else {
		d.Reason += fmt.Sprintf(" (connecting to %s from the host)", host)
	}
	rec.Decision = d
	if d.Verdict == policy.Ask {
		var err error
		if d, err = g.confirm(ctx, tool, []check{{d: d}}, &rec); err != nil {
			rec.Outcome, rec.Error = OutcomeError, err.Error()
			observe()
			return nil, fmt.Errorf("mcp: server %s: %w", s.Name, err)
		}
	}
	if d.Verdict != policy.Allow {
		rec.Decision, rec.Outcome = d, OutcomeDenied
		observe()
		return nil, fmt.Errorf("mcp: server %s: not connected: the policy denies %s: %s (rule: %s)", s.Name, tool, d.Reason, d.Rule)
	}
	start := time.Now()
	c, err := ConnectMCP(ctx, s)
	rec.Duration = time.Since(start)
	rec.Outcome = OutcomeOK
	if err != nil {
		rec.Outcome, rec.Error = OutcomeError, err.Error()
	}
	observe()
	return c, err
}

// Name is the server's name.
func (c *MCPConn) Name() string { return c.server.Name }

// Tools are the server's tools, named mcp__<server>__<tool>.
func (c *MCPConn) Tools() []Tool { return append([]Tool(nil), c.tools...) }

// Close ends the session and stops a stdio server (a server in a sandbox
// with Process.Stop: it and everything it started). It may be called more
// than once.
func (c *MCPConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var err error
	if c.session != nil {
		err = c.session.Close()
	}
	if c.cancel != nil {
		c.cancel()
	}
	if c.proc != nil {
		if serr := c.proc.Stop(); serr != nil {
			err = fmt.Errorf("mcp: server %s: stop: %w", c.server.Name, serr)
		}
	}
	return err
}

// watchedWriter is a stdio server's stdin that knows whether a write is
// in progress (blocked, when the server does not read).
type watchedWriter struct {
	w    io.WriteCloser
	busy atomic.Int32
}

func (w *watchedWriter) Write(p []byte) (int, error) {
	w.busy.Add(1)
	defer w.busy.Add(-1)
	return w.w.Write(p)
}

func (w *watchedWriter) Close() error { return w.w.Close() }

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
	name, remote      string // the function name; the server's name for it
	description       string
	schema            *mcpSchema
	readOnly, destroy bool
}

// newMCPTool converts a listed tool, offered as name (functionNames);
// skip says why it cannot be offered.
func newMCPTool(c *MCPConn, t *mcp.Tool, name string) (*mcpTool, string) {
	if !validName.MatchString(name) {
		return nil, fmt.Sprintf("%s: the name %q is not a valid function name ([a-zA-Z0-9_-]{1,64})", t.Name, name)
	}
	raw, err := json.Marshal(t.InputSchema)
	if err != nil {
		raw = nil
	}
	s, err := prepareMCPSchema(raw)
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", t.Name, err)
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	named := ""
	if name != MCPPrefix+c.server.Name+"__"+t.Name {
		named = fmt.Sprintf(", named %q there", t.Name)
	}
	desc = fmt.Sprintf("%s\n\n(A tool of the MCP server %q%s. Its effects are not known to the policy.)", strings.TrimSpace(desc), c.server.Name, named)
	mt := &mcpTool{conn: c, name: name, remote: t.Name, description: desc, schema: s}
	if a := t.Annotations; a != nil {
		mt.readOnly = a.ReadOnlyHint
		mt.destroy = a.DestructiveHint != nil && *a.DestructiveHint
	}
	return mt, ""
}

func (t *mcpTool) Name() string               { return t.name }
func (t *mcpTool) Description() string        { return t.description }
func (t *mcpTool) Schema() *jsonschema.Schema { return t.schema.model }

// RemoteName is the name the server gave the tool: what a call sends.
func (t *mcpTool) RemoteName() string { return t.remote }

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
	if err := t.schema.check.Validate(args); err != nil {
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
	if full := t.schema.full; full != nil {
		// What the gate's own check does not know: unions, references,
		// bounds. The library's message names the schema's keyword.
		var inst any
		_ = json.Unmarshal(args, &inst)
		if err := full.Validate(inst); err != nil {
			return Invocation{}, &ArgumentError{Problem: "do not match the tool's schema: " + err.Error()}
		}
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
	// The SDK's write of a request ignores the context: a server that
	// stopped reading its stdin would hold the call, and the run, forever.
	// When the call's time is up with a write still blocked, the server's
	// stdin is closed, which ends that write (and every later one).
	var stuck atomic.Bool
	if c.stdin != nil {
		stop := context.AfterFunc(cctx, func() {
			if c.stdin.busy.Load() > 0 {
				stuck.Store(true)
				c.stdin.Close()
			}
		})
		defer stop()
	}
	res, err := c.session.CallTool(cctx, &mcp.CallToolParams{Name: t.remote, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		if stuck.Load() {
			return errorResult("the MCP server %s did not read the request for %s within %s (it no longer reads its input); the call was abandoned and the server's input closed, so its tools cannot be called again", c.server.Name, t.remote, c.server.CallTimeout), nil
		}
		if errors.Is(cctx.Err(), context.DeadlineExceeded) {
			return errorResult("the MCP server %s did not answer %s within %s; the call was abandoned", c.server.Name, t.remote, c.server.CallTimeout), nil
		}
		c.settle()
		return errorResult("the MCP server %s failed on %s: %s%s", c.server.Name, t.remote, c.redact(err.Error()), c.exitNote(1<<10)), nil
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
	// Values passed to a stdio server (env_vars) may be tokens too; a
	// server that dies printing its environment must not put them in an
	// error. Short values ("1", "info") would only mangle the message.
	for _, kv := range c.server.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && len(v) >= minRedacted {
			s = strings.ReplaceAll(s, v, "[$"+k+"]")
		}
	}
	return s
}

// minRedacted is the shortest environment value redact hides.
const minRedacted = 8

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
