package tools_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/tools"
)

// envDeafServer makes the test binary (read in init, before TestMain) a
// stdio server that stops reading its stdin once its tool deafen ran.
const envDeafServer = "TRIO_REVIEW_DEAF_SERVER"

var reviewDeaf atomic.Bool

type reviewDeafReader struct{}

func (reviewDeafReader) Read(p []byte) (int, error) {
	if reviewDeaf.Load() {
		select {}
	}
	return os.Stdin.Read(p)
}

func init() {
	if os.Getenv(envDeafServer) != "1" {
		return
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "deaf", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "deafen"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		reviewDeaf.Store(true)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deaf now"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		S string `json:"s"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.S}}}, nil, nil
	})
	s.Run(context.Background(), &mcp.IOTransport{Reader: io.NopCloser(reviewDeafReader{}), Writer: os.Stdout})
	os.Exit(0)
}

// A server that is alive but no longer reads its stdin: a call whose
// request does not fit in the pipe is a tool error at the call timeout,
// on the host (host: true) as in a sandbox. The guard only keeps a hung
// call from stalling the test binary; it is not a speed assertion.
func TestReviewMCPDeafServer(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, where := range []string{"sandbox", "host"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			s := tools.MCPServer{Name: "deaf", Command: []string{self}, Env: []string{envDeafServer + "=1"}, CallTimeout: 2 * time.Second}
			if where == "sandbox" {
				l, err := sandbox.NewLocal(t.TempDir(), sandbox.Limits{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				s.Sandbox = l
			}
			c, err := tools.ConnectMCP(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			byName := map[string]tools.Tool{}
			for _, tl := range c.Tools() {
				byName[tl.Name()] = tl
			}
			invoke := func(name string, args any) chan tools.Result {
				raw, _ := json.Marshal(args)
				inv, err := byName[name].Decode(raw)
				if err != nil {
					t.Fatal(err)
				}
				out := make(chan tools.Result, 1)
				go func() {
					res, _ := inv.Run(context.Background())
					out <- res
				}()
				return out
			}
			if res := <-invoke("mcp__deaf__deafen", map[string]string{}); !res.OK {
				t.Fatalf("deafen: %+v", res)
			}
			guard := 2 * time.Minute
			if where == "host" {
				guard = 30 * time.Second // 15 times the call timeout: known to hang (see the skip)
			}
			select {
			case res := <-invoke("mcp__deaf__echo", map[string]string{"s": strings.Repeat("word ", 1<<20/5)}):
				if res.OK || !strings.Contains(res.Output, "did not read the request") {
					t.Errorf("the call to a server that does not read read %.200q, want a tool error", res.Output)
				}
			case <-time.After(guard):
				t.Fatal("the call hung past CallTimeout (2s) on a server that stopped reading its stdin")
			}
		})
	}
}
