package tools_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trioagent/trio/tools"
)

// envMCPServer makes the test binary an MCP stdio server (TestMain).
const envMCPServer = "TRIO_TEST_MCP_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(envMCPServer) == "1" {
		if err := testServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

// testServer is an MCP server built with the go-sdk's server API: echo,
// a tool that fails, one that hangs and one that kills the server.
func testServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text."}, func(_ context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		out := "echo: " + in.Text
		if req.Extra != nil && req.Extra.Header != nil {
			out += " auth=" + req.Extra.Header.Get("Authorization")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Fail."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such ticket"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Hang."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		select {
		case <-ctx.Done():
		case <-time.After(time.Minute):
		}
		return &mcp.CallToolResult{}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		os.Exit(3)
		return nil, nil, nil
	})
	return s
}

const mcpPolicy = `
version: 1
mode: unattended
tools:
  allow: ["mcp__test__echo", "mcp__test__fail", "mcp__test__slow", "mcp__test__crash", "mcp__web__*"]
`

func stdioServer(t *testing.T, timeout time.Duration) *tools.MCPConn {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c, err := tools.ConnectMCP(context.Background(), tools.MCPServer{Name: "test", Command: []string{self},
		Env: []string{envMCPServer + "=1"}, CallTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func mcpView(t *testing.T, c *tools.MCPConn) tools.View {
	t.Helper()
	reg, err := tools.NewRegistry(c.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	v, err := reg.View()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A stdio server's tools enter the registry under mcp__<server>__<tool>
// with its schema, are validated like typed tools, pass the gate, and
// every failure of the server is a tool error: a failed tool, a slow one
// (the timeout), a crash, and calls after the crash.
func TestMCPStdio(t *testing.T) {
	t.Parallel()
	// The calls that answer have all the time they need, however busy the
	// machine; the slow tool never answers, on a connection of its own
	// whose short timeout is what it tests.
	c := stdioServer(t, time.Hour)
	v := mcpView(t, c)
	if got := strings.Join(v.Names(), ","); got != "mcp__test__crash,mcp__test__echo,mcp__test__fail,mcp__test__slow" {
		t.Fatalf("tools %s", got)
	}
	echo, _ := v.Tool("mcp__test__echo")
	if p := echo.Schema().Properties; p == nil {
		t.Fatalf("echo has no properties in its schema: %+v", echo.Schema())
	} else if _, ok := p.Get("text"); !ok {
		t.Errorf("echo's schema lacks the server's text property")
	}
	rec := &recorder{}
	g := tools.NewGate(parsePolicy(t, mcpPolicy), tools.WithObserver(rec))
	ctx := context.Background()

	res, err := g.Call(ctx, v, call("mcp__test__echo", `{"text":"hi"}`))
	if err != nil || !res.OK || !strings.HasPrefix(res.Output, "echo: hi") {
		t.Fatalf("echo: %v %+v", err, res)
	}
	if r := rec.take(); len(r) != 1 || r[0].Decision.Verdict.String() != "allow" || !strings.Contains(r[0].Decision.Rule, "mcp__test__echo") {
		t.Errorf("records %+v, want the allow rule that names the tool", r)
	}
	res, _ = g.Call(ctx, v, call("mcp__test__echo", `{"text":3}`))
	if res.OK || !strings.Contains(res.Output, `argument "text": expected string`) {
		t.Errorf("bad arguments: %+v", res)
	}
	res, _ = g.Call(ctx, v, call("mcp__test__fail", `{}`))
	if res.OK || !strings.Contains(res.Output, "no such ticket") {
		t.Errorf("fail: %+v", res)
	}
	res, err = g.Call(ctx, mcpView(t, stdioServer(t, 500*time.Millisecond)), call("mcp__test__slow", `{}`))
	if err != nil || res.OK || !strings.Contains(res.Output, "did not answer") {
		t.Errorf("slow: %v %+v", err, res)
	}
	// A call to a dead server that hung would end in the test binary's
	// own timeout, with every goroutine's stack.
	for _, c := range []tools.Call{call("mcp__test__crash", `{}`), call("mcp__test__echo", `{"text":"again"}`)} {
		res, err = g.Call(ctx, v, c)
		if err != nil || res.OK || !strings.Contains(res.Output, "MCP server test") {
			t.Errorf("call %s to a crashed server: %v %+v", c.Name, err, res)
		}
	}
}

// An MCP tool that no tools rule names is "ask": denied when the policy
// is unattended, asked when a person can answer.
func TestMCPUnnamedToolAsks(t *testing.T) {
	t.Parallel()
	c := stdioServer(t, 0)
	v := mcpView(t, c)
	unattended := parsePolicy(t, "version: 1\nmode: unattended\n")
	res, err := tools.NewGate(unattended).Call(context.Background(), v, call("mcp__test__echo", `{"text":"x"}`))
	if err != nil || res.OK || !res.Denied || !strings.Contains(res.Output, tools.RuleUnnamedOpaqueTool) {
		t.Errorf("unattended: %v %+v, want a denial by %s", err, res, tools.RuleUnnamedOpaqueTool)
	}
	conf := &confirmer{answer: 1} // yes
	res, err = tools.NewGate(parsePolicy(t, "version: 1\nmode: interactive\n"), tools.WithConfirmer(conf)).
		Call(context.Background(), v, call("mcp__test__echo", `{"text":"x"}`))
	if err != nil || !res.OK || conf.calls.Load() != 1 || conf.last.Tool != "mcp__test__echo" {
		t.Errorf("interactive: %v %+v, asked %d (%+v)", err, res, conf.calls.Load(), conf.last)
	}
	denied := parsePolicy(t, "version: 1\nmode: interactive\ntools:\n  deny: [\"mcp__test__*\"]\n")
	res, _ = tools.NewGate(denied, tools.WithConfirmer(conf)).Call(context.Background(), v, call("mcp__test__echo", `{"text":"x"}`))
	if !res.Denied || conf.calls.Load() != 1 {
		t.Errorf("tools.deny: %+v, want denied without asking", res)
	}
}

// A streamable HTTP server on loopback: its tools work, the configured
// header reaches it, and the header's value appears in no error.
func TestMCPStreamableHTTP(t *testing.T) {
	t.Parallel()
	var sawAuth atomic.Bool
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return testServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		sawAuth.Store(true)
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c, err := tools.ConnectMCP(context.Background(), tools.MCPServer{Name: "web", URL: srv.URL,
		Headers: map[string]string{"Authorization": "Bearer s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v := mcpView(t, c)
	res, err := tools.NewGate(parsePolicy(t, mcpPolicy)).Call(context.Background(), v, call("mcp__web__echo", `{"text":"over http"}`))
	if err != nil || !res.OK || !strings.HasPrefix(res.Output, "echo: over http") {
		t.Fatalf("echo: %v %+v", err, res)
	}
	if !sawAuth.Load() {
		t.Error("the header never reached the server")
	}
	_, err = tools.ConnectMCP(context.Background(), tools.MCPServer{Name: "web", URL: srv.URL,
		Headers: map[string]string{"Authorization": "Bearer wrong-s3cret"}, StartTimeout: 5 * time.Second})
	if err == nil || strings.Contains(err.Error(), "wrong-s3cret") || !strings.Contains(err.Error(), "mcp: server web") {
		t.Errorf("bad header: error %v, want one naming the server and not the header value", err)
	}
}

// A server that does not start is an error naming it, with its stderr;
// one that never answers is an error after the start timeout, not a hang.
func TestMCPStartFailures(t *testing.T) {
	t.Parallel()
	_, err := tools.ConnectMCP(context.Background(), tools.MCPServer{Name: "gone", Command: []string{"/bin/sh", "-c", "echo boom >&2; exit 1"}})
	if err == nil || !strings.Contains(err.Error(), "mcp: server gone") || !strings.Contains(err.Error(), "boom") {
		t.Errorf("dying server: %v", err)
	}
	// A server that dies printing a value it was given (env_vars) leaves
	// the value out of the error, which is shown and logged.
	_, err = tools.ConnectMCP(context.Background(), tools.MCPServer{Name: "leaky", Env: []string{"MY_TOKEN=tok-7f3a9c1e5b", "V=1"},
		Command: []string{"/bin/sh", "-c", "echo token=$MY_TOKEN v=$V >&2; exit 1"}})
	if err == nil || strings.Contains(err.Error(), "tok-7f3a9c1e5b") || !strings.Contains(err.Error(), "token=[$MY_TOKEN] v=1") {
		t.Errorf("a dying server's stderr in the error: %v", err)
	}
	start := time.Now()
	_, err = tools.ConnectMCP(context.Background(), tools.MCPServer{Name: "mute", Command: []string{"/bin/sh", "-c", "exec sleep 60"}, StartTimeout: 500 * time.Millisecond})
	if err == nil || time.Since(start) > 15*time.Second {
		t.Errorf("mute server: %v after %s", err, time.Since(start))
	}
}

// schemaServer is an MCP server built with the go-sdk whose tools have
// what real servers emit and model APIs refuse: a dotted name, a name
// that the dotted one maps onto, a name too long for a function name,
// and schemas with $ref/$defs (Pydantic's shape), a union and recursion.
// Each tool answers with the name it was called by and its arguments.
func schemaServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "schemas", Version: "v1"}, nil)
	answer := func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Params.Name + " " + string(req.Params.Arguments)}}}, nil
	}
	path := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)
	s.AddTool(&mcp.Tool{Name: "files.read", Description: "Read a file.", InputSchema: path}, answer)
	s.AddTool(&mcp.Tool{Name: "files_read", Description: "Read a file too.", InputSchema: path}, answer)
	s.AddTool(&mcp.Tool{Name: strings.Repeat("long", 20), Description: "Long.", InputSchema: path}, answer)
	s.AddTool(&mcp.Tool{Name: "create_item", Description: "Create an item.", InputSchema: json.RawMessage(`{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type": "object",
		"$defs": {"Item": {"type": "object", "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["name"]}},
		"properties": {
			"item": {"$ref": "#/$defs/Item", "description": "the item"},
			"mode": {"anyOf": [{"type": "string", "enum": ["fast", "slow"]}, {"type": "null"}], "default": null}
		},
		"required": ["item"]}`)}, answer)
	s.AddTool(&mcp.Tool{Name: "tree", Description: "Take a tree.", InputSchema: json.RawMessage(`{
		"type": "object",
		"definitions": {"Node": {"type": "object", "properties": {"label": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/definitions/Node"}}}}},
		"properties": {"root": {"$ref": "#/definitions/Node"}}}`)}, answer)
	s.AddTool(&mcp.Tool{Name: "remote", Description: "A remote reference.", InputSchema: json.RawMessage(`{
		"type": "object", "properties": {"x": {"$ref": "https://example.com/x.json"}}}`)}, answer)
	return s
}

// Tools whose names or schemas the model APIs refuse are offered anyway:
// names mapped into the function-name alphabet (a collision and an
// overlong name told apart by a hash), every call sent to the server's
// own name; $ref/$defs inlined and $schema dropped from what the model
// sees, and the arguments still checked against the server's schema
// (a union too). Over streamable HTTP and over SSE.
func TestMCPNamesAndSchemas(t *testing.T) {
	t.Parallel()
	for _, sse := range []bool{false, true} {
		var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return schemaServer() }, nil)
		if sse {
			h = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return schemaServer() }, nil)
		}
		srv := httptest.NewServer(h)
		defer srv.Close()
		c, err := tools.ConnectMCP(context.Background(), tools.MCPServer{Name: "my_srv-1", URL: srv.URL, SSE: sse})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if len(c.Skipped) != 1 || !strings.Contains(c.Skipped[0], "remote") || !strings.Contains(c.Skipped[0], "https://example.com/x.json") {
			t.Errorf("sse=%v skipped %q, want only the tool with a remote $ref, naming it", sse, c.Skipped)
		}
		v := mcpView(t, c)
		names := v.Names()
		var dotted, long string
		for _, n := range names {
			if !regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`).MatchString(n) {
				t.Errorf("function name %q", n)
			}
			switch {
			case strings.HasPrefix(n, "mcp__my_srv-1__files_read_"):
				dotted = n
			case strings.HasPrefix(n, "mcp__my_srv-1__longlong"):
				long = n
			}
		}
		if dotted == "" || long == "" || !slices.Contains(names, "mcp__my_srv-1__files_read") || len(names) != 5 {
			t.Fatalf("sse=%v names %v", sse, names)
		}
		g := tools.NewGate(parsePolicy(t, "version: 1\nmode: unattended\ntools:\n  allow: [\"mcp__my_srv-1__*\"]\n"))
		ctx := context.Background()
		for fn, remote := range map[string]string{dotted: "files.read", "mcp__my_srv-1__files_read": "files_read", long: strings.Repeat("long", 20)} {
			res, err := g.Call(ctx, v, call(fn, `{"path":"a.txt"}`))
			if err != nil || !res.OK || !strings.HasPrefix(res.Output, remote+" ") {
				t.Errorf("sse=%v %s: %v %+v, want the call sent to %q", sse, fn, err, res, remote)
			}
		}
		if tl, _ := v.Tool(dotted); !strings.Contains(tl.Description(), `named "files.read" there`) {
			t.Errorf("description of %s: %q", dotted, tl.Description())
		}

		item, _ := v.Tool("mcp__my_srv-1__create_item")
		b, _ := json.Marshal(item.Schema())
		js := string(b)
		if strings.Contains(js, "$ref") || strings.Contains(js, "$defs") || strings.Contains(js, "$schema") ||
			!strings.Contains(js, `"item":{`) || !strings.Contains(js, `"the item"`) || !strings.Contains(js, `"tags"`) {
			t.Errorf("create_item's schema as the model sees it: %s", js)
		}
		res, err := g.Call(ctx, v, call("mcp__my_srv-1__create_item", `{"item":{"name":"x","tags":["a"]},"mode":"fast"}`))
		if err != nil || !res.OK || !strings.Contains(res.Output, `"name":"x"`) {
			t.Errorf("create_item: %v %+v", err, res)
		}
		for args, want := range map[string]string{
			`{"item":{"tags":["a"]}}`:          "item.name", // the $ref's required field
			`{"item":{"name":"x"},"mode":3}`:   "anyOf",     // the union
			`{"item":{"name":"x","tags":[1]}}`: "tags",
		} {
			res, _ := g.Call(ctx, v, call("mcp__my_srv-1__create_item", args))
			if res.OK || !strings.Contains(res.Output, want) {
				t.Errorf("create_item %s: %+v, want an argument error about %s", args, res, want)
			}
		}
		res, err = g.Call(ctx, v, call("mcp__my_srv-1__tree", `{"root":{"label":"a","children":[{"label":"b","children":[{"label":"c"}]}]}}`))
		if err != nil || !res.OK {
			t.Errorf("tree: %v %+v", err, res)
		}
		res, _ = g.Call(ctx, v, call("mcp__my_srv-1__tree", `{"root":{"label":"a","children":[{"label":"b","children":[{"label":7}]}]}}`))
		if res.OK || !strings.Contains(res.Output, "label") {
			t.Errorf("tree with a bad label deep down: %+v, want an argument error", res)
		}
	}
}

// A URL server is reached from the host: the gate connects to it when no
// tools rule refuses mcp__<server>, records the host (not the path, which
// may hold a token), and refuses it when tools.deny names it or tools.ask
// does and no one can answer.
func TestGateConnectURL(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return testServer() }, nil))
	defer srv.Close()
	s := tools.MCPServer{Name: "web", URL: srv.URL + "/mcp/tok-31c7"}
	rec := &recorder{}
	c, err := tools.NewGate(parsePolicy(t, "version: 1\nmode: unattended\n"), tools.WithObserver(rec)).ConnectMCP(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	r := rec.take()
	if len(r) != 1 || r[0].Tool != "mcp__web" || r[0].Outcome != tools.OutcomeOK || !strings.Contains(r[0].Decision.Reason, srv.URL+" from the host") ||
		strings.Contains(r[0].Decision.Reason, "tok-31c7") {
		t.Errorf("records %+v", r)
	}
	for _, pol := range []string{"tools:\n  deny: [\"mcp__web\"]\n", "tools:\n  ask: [\"mcp__w*\"]\n"} {
		_, err := tools.NewGate(parsePolicy(t, "version: 1\nmode: unattended\n"+pol), tools.WithObserver(rec)).ConnectMCP(context.Background(), s)
		if err == nil || !strings.Contains(err.Error(), "mcp: server web: not connected: the policy denies mcp__web") {
			t.Errorf("%s: %v", pol, err)
		}
		if r := rec.take(); len(r) != 1 || r[0].Outcome != tools.OutcomeDenied {
			t.Errorf("%s: records %+v", pol, r)
		}
	}
}
