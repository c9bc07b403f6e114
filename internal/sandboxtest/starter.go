package sandboxtest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trioagent/trio/sandbox"
)

// StarterOptions say how a kind runs RunStarterWith.
type StarterOptions struct {
	// Skip names rows this kind cannot enforce, each with the reason.
	Skip map[string]string
	// MCPServer is a server BuildMCPServer built, for a run that cannot
	// build one (a re-run as an ordinary user, without the module
	// cache); "": the suite builds it.
	MCPServer string
	// WithoutDenied plants no file the rules hide, for a kind that
	// refuses a workspace holding one (landlock).
	WithoutDenied bool
}

// RunStarter runs the conformance rows for started processes
// (sandbox.Starter) against open: each opens a sandbox on a fresh
// workspace, starts processes in it and checks the effect on the host.
// The sandbox open returns must be a sandbox.Starter.
func RunStarter(t *testing.T, open Opener) {
	RunStarterWith(t, open, StarterOptions{})
}

// StartEnv is one started-process row's workspace and sandbox.
type StartEnv struct {
	Dir     string // the workspace on the host
	WS      string // the workspace as processes in the sandbox see it
	Sandbox sandbox.Sandbox
	Starter sandbox.Starter
}

type startRow struct {
	name   string
	threat string
	// setup prepares the workspace (dir) before the sandbox opens.
	setup func(t *testing.T, dir string)
	// denied are files the rules hide, planted unless WithoutDenied.
	denied map[string]string
	rules  sandbox.PathRules
	limits func(*sandbox.Limits)
	run    func(t *testing.T, e *StartEnv)
}

// RunStarterWith is RunStarter with options.
func RunStarterWith(t *testing.T, open Opener, o StarterOptions) {
	var build sync.Once
	// Built once, into a folder that outlives every row.
	outer := t
	server := func(t *testing.T) string {
		build.Do(func() {
			if o.MCPServer == "" {
				o.MCPServer = filepath.Join(outer.TempDir(), "mcpserver")
				BuildMCPServer(t, o.MCPServer)
			}
		})
		if _, err := os.Stat(o.MCPServer); err != nil {
			t.Fatalf("the MCP server: %v", err)
		}
		return o.MCPServer
	}
	for _, row := range startRows(server) {
		t.Run(row.name, func(t *testing.T) {
			if why, ok := o.Skip[row.name]; ok {
				t.Skipf("not enforced by this kind: %s", why)
			}
			t.Log(row.threat)
			dir := Workspace(t)
			if row.setup != nil {
				row.setup(t, dir)
			}
			if row.denied != nil && !o.WithoutDenied {
				WriteFiles(t, dir, row.denied)
			}
			lim := sandbox.Limits{Timeout: time.Minute, Memory: 512 << 20, Pids: 256, Output: 64 << 10}
			if row.limits != nil {
				row.limits(&lim)
			}
			sb := open(t, dir, row.rules, lim)
			st, ok := sb.(sandbox.Starter)
			if !ok {
				t.Fatalf("the %s sandbox is not a sandbox.Starter", sb.Info().Kind)
			}
			row.run(t, &StartEnv{Dir: dir, WS: sb.Info().WorkspaceDir, Sandbox: sb, Starter: st})
		})
	}
}

// secretBeside writes a secret into the folder that holds the workspace,
// and returns its host path.
func secretBeside(t *testing.T, dir, word string) string {
	t.Helper()
	secret := filepath.Join(filepath.Dir(dir), "secret")
	if err := os.WriteFile(secret, []byte(word), 0o644); err != nil {
		t.Fatal(err)
	}
	return secret
}

func execIn(t *testing.T, sb sandbox.Sandbox, argv ...string) sandbox.Result {
	t.Helper()
	res, err := sb.Exec(context.Background(), sandbox.Command{Argv: argv})
	if err != nil {
		t.Fatalf("Exec %q: %v", argv, err)
	}
	return res
}

// marker is a word unique to this test, for finding its processes on the
// host.
func marker(prefix string) string {
	return fmt.Sprintf("%s.%d%d", prefix, os.Getpid(), time.Now().UnixNano()%1e9)
}

// sleeps counts the host's processes that are `sleep m`.
func sleeps(t testing.TB, m string) int {
	n := 0
	for _, pid := range HostPids(t, m) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err == nil && bytes.Equal(b, []byte("sleep\x00"+m+"\x00")) {
			n++
		}
	}
	return n
}

// waitFile waits until the command of another goroutine has made path.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for i := 0; ; i++ {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if i == 12000 {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func startRows(server func(*testing.T) string) []startRow {
	return []startRow{
		{
			name:   "echo-over-stdio",
			threat: "a stdio server's lines are lost, cut or mixed up on the way through the sandbox",
			run: func(t *testing.T, e *StartEnv) {
				p := Start(t, e.Starter, EchoLoop...)
				r := bufio.NewReader(p.Stdout())
				for _, l := range []string{"one", "two words", strings.Repeat("x", 100<<10)} {
					if got := Line(t, p, r, l); got != "got:"+l {
						t.Fatalf("sent %.40q, got back %.40q", l, got)
					}
				}
				// Closing stdin ends it: the read loop sees end of file.
				p.Stdin().Close()
				res, err := p.Wait()
				if err != nil || res.ExitCode != 0 {
					t.Fatalf("Wait after closing stdin: %+v, %v (stderr %q)", res, err, p.Stderr())
				}
				if rest, _ := io.ReadAll(p.Stdout()); len(rest) != 0 {
					t.Errorf("output after the last line: %q", rest)
				}
			},
		},
		{
			name:   "host-secret-unreadable",
			threat: "a started process reads a secret next to the workspace, by relative, absolute or /proc path",
			run: func(t *testing.T, e *StartEnv) {
				const word = "hunter2-started"
				secret := secretBeside(t, e.Dir, word)
				p := Start(t, e.Starter, "/bin/sh", "-c", "cat ../secret "+secret+" /proc/1/root"+secret+" 2>&1; echo end")
				out, _ := io.ReadAll(p.Stdout())
				if !strings.Contains(string(out), "end") {
					t.Fatalf("the process did not run to its end: %q (stderr %q)", out, p.Stderr())
				}
				if strings.Contains(string(out), word) {
					t.Errorf("the started process read the host's secret: %q", out)
				}
			},
		},
		{
			name:   "stop-kills-every-process",
			threat: "a started process's children (in the background, in a session of their own) outlive Stop",
			run: func(t *testing.T, e *StartEnv) {
				m := marker("4242")
				p := Start(t, e.Starter, "/bin/sh", "-c", "sleep "+m+" & (setsid sleep "+m+" &) ; echo ready; exec sleep "+m)
				r := bufio.NewReader(p.Stdout())
				if l, err := r.ReadString('\n'); err != nil || l != "ready\n" {
					t.Fatalf("got %q, %v (stderr %q)", l, err, p.Stderr())
				}
				// The subshell's setsid may exec after the echo.
				n := sleeps(t, m)
				for i := 0; n < 3 && i < 500; i++ {
					time.Sleep(20 * time.Millisecond)
					n = sleeps(t, m)
				}
				if n < 3 {
					t.Fatalf("found %d of the 3 sleeps on the host: the test shows nothing", n)
				}
				if err := p.Stop(); err != nil {
					t.Fatal(err)
				}
				if left := HostPids(t, m); len(left) > 0 {
					t.Errorf("after Stop, processes it started still exist on the host: %v", left)
				}
				res, err := p.Wait()
				if err != nil || res.ExitCode != -1 {
					t.Errorf("Wait after Stop: %+v, %v; want exit -1 (killed)", res, err)
				}
				if err := p.Stop(); err != nil {
					t.Errorf("second Stop: %v", err)
				}
				if res := execIn(t, e.Sandbox, "echo", "still"); res.Stdout != "still\n" {
					t.Errorf("a command after Stop: %+v", res)
				}
			},
		},
		{
			name:   "close-stops-started",
			threat: "started processes outlive the sandbox's Close",
			run: func(t *testing.T, e *StartEnv) {
				m := marker("4343")
				p1 := Start(t, e.Starter, "sleep", m)
				Start(t, e.Starter, "/bin/sh", "-c", "(setsid sleep "+m+" &); exec sleep "+m)
				for i := 0; sleeps(t, m) < 3 && i < 500; i++ {
					time.Sleep(20 * time.Millisecond)
				}
				if n := sleeps(t, m); n < 3 {
					t.Fatalf("before Close: %d of the 3 sleeps on the host", n)
				}
				if err := e.Sandbox.Close(); err != nil {
					t.Fatal(err)
				}
				if left := HostPids(t, m); len(left) > 0 {
					t.Errorf("after Close, started processes exist on the host: %v", left)
				}
				if res, _ := p1.Wait(); res.ExitCode != -1 {
					t.Errorf("Wait after Close: %+v", res)
				}
				if _, err := e.Starter.Start(context.Background(), sandbox.Command{Argv: []string{"true"}}); err == nil {
					t.Error("Start after Close succeeded")
				}
			},
		},
		{
			name:   "commands-and-started-cannot-kill-each-other",
			threat: "a command kills the run's MCP server, or the server a command (the Critic's check), by pid",
			run: func(t *testing.T, e *StartEnv) {
				m := marker("started")
				p := Start(t, e.Starter, append(slices.Clone(EchoLoop), m)...)
				r := bufio.NewReader(p.Stdout())
				if got := Line(t, p, r, "a"); got != "got:a" {
					t.Fatalf("got %q", got)
				}
				pids := HostPids(t, m)
				if len(pids) == 0 {
					t.Fatal("the started process is not on the host: the test shows nothing")
				}
				res := execIn(t, e.Sandbox, "/bin/sh", "-c", "kill -9 "+joinPids(pids)+" 2>&1; echo after")
				t.Logf("a command's kill -9 of the started process's host pids: exit %d %q", res.ExitCode, res.Stdout)
				if got := Line(t, p, r, "b"); got != "got:b" {
					t.Fatalf("after a command's kill -9 the started process answers %q", got)
				}

				cm := marker("command")
				done := make(chan sandbox.Result, 1)
				go func() {
					res, err := e.Sandbox.Exec(context.Background(), sandbox.Command{Argv: []string{"/bin/sh", "-c",
						"touch waiting; i=0; while [ ! -e killed ] && [ $i -lt 3000 ]; do sleep 0.1; i=$((i+1)); done; echo alive", cm}})
					if err != nil {
						t.Error(err)
					}
					done <- res
				}()
				waitFile(t, filepath.Join(e.Dir, "waiting"))
				cpids := HostPids(t, cm)
				if len(cpids) == 0 {
					t.Fatal("the command is not on the host: the test shows nothing")
				}
				RunIn(t, p, r, "kill -9 "+joinPids(cpids)+" 2>/dev/null; touch killed")
				res = <-done
				if res.ExitCode != 0 || !strings.Contains(res.Stdout, "alive") {
					t.Errorf("a command was ended by the started process's kill -9: %+v", res)
				}
			},
		},
		{
			name:   "mcp-server",
			threat: "an MCP server cannot run in the sandbox, or reads the host beyond the sandbox's view",
			setup: func(t *testing.T, dir string) {
				copyExecutable(t, server(t), filepath.Join(dir, "mcpserver"))
				WriteFiles(t, dir, map[string]string{"notes.txt": "in the workspace"})
			},
			run: func(t *testing.T, e *StartEnv) {
				secret := secretBeside(t, e.Dir, "hunter2-mcp")
				p := Start(t, e.Starter, e.WS+"/mcpserver")
				call := mcpSession(t, p)
				if got, _ := call("echo", map[string]any{"text": "hi"}); got != "echo: hi" {
					t.Errorf("echo: %q", got)
				}
				if got, isErr := call("read", map[string]any{"path": e.WS + "/notes.txt"}); isErr || got != "in the workspace" {
					t.Errorf("read of a workspace file: %q (error %v)", got, isErr)
				}
				if got, _ := call("read", map[string]any{"path": secret}); strings.Contains(got, "hunter2") {
					t.Errorf("the sandboxed MCP server read the host's secret: %q", got)
				}
				if err := p.Stop(); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name:   "mcp-server-from-anywhere",
			threat: "an MCP server installed outside the system folders (nvm's node, /opt) cannot run sandboxed, or changes its own program",
			run: func(t *testing.T, e *StartEnv) {
				// Installed as a package manager would: a bin folder with a
				// symlink into the package's own folder, outside the
				// workspace and the toolchain folders.
				base, err := os.MkdirTemp("", "trio-mcp-install-")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.RemoveAll(base) })
				pkg, bin := filepath.Join(base, "lib", "mcpserver"), filepath.Join(base, "bin")
				for _, d := range []string{base, filepath.Join(base, "lib"), pkg, bin} {
					if err := os.MkdirAll(d, 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.Chmod(d, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				copyExecutable(t, server(t), filepath.Join(pkg, "server"))
				if err := os.Symlink("../lib/mcpserver/server", filepath.Join(bin, "mcpserver")); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(base, "secret"), []byte("hunter2-install"), 0o644); err != nil {
					t.Fatal(err)
				}
				p := Start(t, e.Starter, filepath.Join(bin, "mcpserver"))
				call := mcpSession(t, p)
				if got, _ := call("echo", map[string]any{"text": "hi"}); got != "echo: hi" {
					t.Errorf("echo: %q", got)
				}
				for _, f := range []string{filepath.Join(pkg, "server"), filepath.Join(pkg, "planted"), filepath.Join(bin, "planted")} {
					if got, isErr := call("write", map[string]any{"path": f, "text": "changed"}); !isErr {
						t.Errorf("the server wrote %s in its own folder: %q", f, got)
					}
				}
				if b, err := os.ReadFile(filepath.Join(pkg, "server")); err != nil || string(b) == "changed" {
					t.Errorf("the server's program changed: %v", err)
				}
				for _, f := range []string{filepath.Join(pkg, "planted"), filepath.Join(bin, "planted")} {
					if _, err := os.Stat(f); err == nil {
						t.Errorf("%s appeared on the host", f)
					}
				}
				if got, _ := call("read", map[string]any{"path": filepath.Join(base, "secret")}); strings.Contains(got, "hunter2") {
					t.Errorf("the server read a file beside its install folders: %q", got)
				}
				if got, isErr := call("write", map[string]any{"path": e.WS + "/made", "text": "ok"}); isErr {
					t.Errorf("the server could not write the workspace: %q", got)
				}
				if err := p.Stop(); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name:   "hidden-paths",
			threat: "a started process reads a hidden .env, or makes a .git whose hostile config acts on the host's git after it stops",
			denied: map[string]string{".env": "KEY=hunter2-env"},
			rules: func(rel string) sandbox.Access {
				if rel == ".env" || rel == ".git" || strings.HasPrefix(rel, ".git/") {
					return sandbox.Hidden
				}
				return sandbox.Writable
			},
			run: func(t *testing.T, e *StartEnv) {
				p := Start(t, e.Starter, EchoLoop...)
				r := bufio.NewReader(p.Stdout())
				if got := RunIn(t, p, r, "cat .env 2>&1"); strings.Contains(got, "hunter2") {
					t.Errorf("the started process read the hidden .env: %q", got)
				}
				RunIn(t, p, r, `mkdir -p .git && printf '[core]\n\tfsmonitor = touch /tmp/pwned\n' > .git/config`)
				if _, err := os.Stat(filepath.Join(e.Dir, ".git", "config")); err != nil {
					t.Fatalf("the process could not write .git/config, so this test shows nothing: %v (stderr %q)", err, p.Stderr())
				}
				if err := p.Stop(); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(filepath.Join(e.Dir, ".git")); err == nil {
					t.Error("the .git the started process made is still on the host after Stop")
				}
				if b, err := os.ReadFile(filepath.Join(e.Dir, ".env")); !os.IsNotExist(err) && string(b) != "KEY=hunter2-env" {
					t.Errorf("the user's .env changed: %q, %v", b, err)
				}
			},
		},
		{
			name:   "disk-limit",
			threat: "a started process, which has no timeout, fills the disk past the run's limit",
			limits: func(l *sandbox.Limits) { l.Disk = 16 << 20 },
			run: func(t *testing.T, e *StartEnv) {
				p := Start(t, e.Starter, "/bin/sh", "-c", `i=0; while [ $i -lt 200 ]; do head -c 1048576 /dev/zero > f$i || exit 9; i=$((i+1)); sleep 0.05; done; echo wrote-all`)
				out, _ := io.ReadAll(p.Stdout())
				res, err := p.Wait()
				if err != nil {
					t.Fatal(err)
				}
				if !res.DiskExceeded || strings.Contains(string(out), "wrote-all") {
					t.Errorf("a started process wrote 200 MiB past a 16 MiB disk limit: %+v, %q (stderr %q)", res, out, p.Stderr())
				}
			},
		},
	}
}

// mcpSession connects an MCP client to the started server p, checks its
// tools/list, and returns a caller of its tools: the text of the result,
// and whether it is an error.
func mcpSession(t *testing.T, p sandbox.Process) func(tool string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	client := mcp.NewClient(&mcp.Implementation{Name: "trio-test", Version: "v1"}, nil)
	session, err := client.Connect(ctx, &mcp.IOTransport{Reader: p.Stdout(), Writer: p.Stdin()}, nil)
	if err != nil {
		t.Fatalf("connect: %v (stderr %q)", err, p.Stderr())
	}
	t.Cleanup(func() { session.Close() })
	list, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v (stderr %q)", err, p.Stderr())
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"echo", "read", "write"}) {
		t.Errorf("tools/list: %v, want [echo read write]", names)
	}
	return func(tool string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v (stderr %q)", tool, err, p.Stderr())
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String(), res.IsError
	}
}

func joinPids(pids []int) string {
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, " ")
}

// copyExecutable copies the program src to dst, mode 0755.
func copyExecutable(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
