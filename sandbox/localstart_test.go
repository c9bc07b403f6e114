package sandbox

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
)

// A started process talks over stdin and stdout, keeps the end of its
// stderr, and Wait reports how it exited.
func TestLocalStartEcho(t *testing.T) {
	t.Parallel()
	l, _ := newLocal(t, Limits{Output: 16})
	p, err := l.Start(context.Background(), Command{Argv: []string{"sh", "-c", `echo 0123456789abcdef-the-end >&2; while read line; do echo "got $line $FOO"; done; exit 7`}, Env: []string{"FOO=bar"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	r := bufio.NewReader(p.Stdout())
	for _, in := range []string{"one", "two"} {
		if _, err := io.WriteString(p.Stdin(), in+"\n"); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadString('\n')
		if err != nil || line != "got "+in+" bar\n" {
			t.Fatalf("read %q, %v", line, err)
		}
	}
	p.Stdin().Close()
	res, err := p.Wait()
	if err != nil || res.ExitCode != 7 {
		t.Errorf("wait: %+v %v, want exit 7", res, err)
	}
	if got := p.Stderr(); got != "9abcdef-the-end\n" {
		t.Errorf("stderr tail %q, want the last 16 bytes", got)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("Stop after Wait: %v", err)
	}
}

// Stop kills the process and the children it started, and Wait then says
// a signal ended it; Close of the sandbox stops what is still running.
func TestLocalStartStopKillsChildren(t *testing.T) {
	t.Parallel()
	for _, viaClose := range []bool{false, true} {
		l, _ := newLocal(t, Limits{})
		p, err := l.Start(context.Background(), Command{Argv: []string{"sh", "-c", "sleep 1000 & echo $!; cat"}})
		if err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(p.Stdout()).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		child, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil {
			t.Fatalf("child pid %q", line)
		}
		if !running(child) {
			t.Fatalf("child %d is not running before Stop", child)
		}
		if viaClose {
			err = l.Close()
		} else {
			err = p.Stop()
		}
		if err != nil {
			t.Fatal(err)
		}
		if running(child) {
			t.Errorf("close=%v: child %d still runs after Stop", viaClose, child)
		}
		if res, err := p.Wait(); err != nil || res.ExitCode != -1 {
			t.Errorf("close=%v: wait %+v %v, want -1 (a signal)", viaClose, res, err)
		}
		if _, err := l.Start(context.Background(), Command{Argv: []string{"true"}}); viaClose && !errors.Is(err, ErrClosed) {
			t.Errorf("Start after Close: %v, want ErrClosed", err)
		}
	}
}

// A program that cannot start, a folder outside the workspace and an
// empty command are errors from Start.
func TestLocalStartErrors(t *testing.T) {
	t.Parallel()
	l, _ := newLocal(t, Limits{})
	for _, tt := range []struct {
		cmd  Command
		want string
	}{
		{Command{Argv: []string{"no-such-program-trio"}}, "no-such-program-trio"},
		{Command{Argv: []string{"true"}, Dir: "../x"}, ErrOutsideWorkspace.Error()},
		{Command{}, ErrEmptyCommand.Error()},
	} {
		if p, err := l.Start(context.Background(), tt.cmd); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want an error naming %q", tt.cmd.Argv, err, tt.want)
			if p != nil {
				p.Stop()
			}
		}
	}
}

// running reports whether pid is a live process (not gone, not a zombie).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}
