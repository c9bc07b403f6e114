package sandboxtest

import (
	"bufio"
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/trioagent/trio/sandbox"
)

// EchoLoop is a started process that says each line back, and runs the
// line as a shell command when it starts with "run ".
var EchoLoop = []string{"/bin/sh", "-c", `while IFS= read -r l; do
case "$l" in run\ *) eval "${l#run }" ;; esac
printf 'got:%s\n' "$l"
done`}

// Line sends l to p and reads the next line back.
func Line(t testing.TB, p sandbox.Process, r *bufio.Reader, l string) string {
	t.Helper()
	if _, err := io.WriteString(p.Stdin(), l+"\n"); err != nil {
		t.Fatalf("write %q: %v (stderr %q)", l, err, p.Stderr())
	}
	got, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("read after %q: %v (stderr %q)", l, err, p.Stderr())
	}
	return strings.TrimSuffix(got, "\n")
}

// RunIn has EchoLoop run cmd and returns what it printed.
func RunIn(t testing.TB, p sandbox.Process, r *bufio.Reader, cmd string) string {
	t.Helper()
	if _, err := io.WriteString(p.Stdin(), "run "+cmd+"\n"); err != nil {
		t.Fatalf("write %q: %v (stderr %q)", cmd, err, p.Stderr())
	}
	var out strings.Builder
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read after %q: %v (stderr %q)", cmd, err, p.Stderr())
		}
		if l == "got:run "+cmd+"\n" {
			return out.String()
		}
		out.WriteString(l)
	}
}

// Start starts argv in s, stopped when the test ends.
func Start(t testing.TB, s sandbox.Starter, argv ...string) sandbox.Process {
	t.Helper()
	p, err := s.Start(context.Background(), sandbox.Command{Argv: argv})
	if err != nil {
		t.Fatalf("Start %q: %v", argv, err)
	}
	t.Cleanup(func() { p.Stop() })
	return p
}

// HostPids lists the host's processes whose command line holds marker.
func HostPids(t testing.TB, marker string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), marker) {
			out = append(out, pid)
		}
	}
	return out
}
