package userns

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/trioagent/trio/sandbox"
)

func TestZZScratch(t *testing.T) {
	src := os.Getenv("ZZ_PROJECT")
	if src == "" {
		t.Skip()
	}
	ws := t.TempDir()
	if err := sandbox.CopyTree(src, filepath.Join(ws, "p")); err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), Config{Workspace: filepath.Join(ws, "p"), Limits: sandbox.Limits{Disk: 4 << 30, Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Exec(context.Background(), sandbox.Command{Argv: []string{"sh", "-c", "go test ./... >/dev/null"}})
	for _, c := range [][]string{{"true"}, {"go", "version"}, {"go", "list", "-f", "{{.Stale}}", "fmt"}, {"sh", "-c", "GOCACHEPROG= go list -f {{.Stale}} fmt"}, {"go", "test", "./..."}, {"sh", "-c", "/.trio/init --trio-gocacheprog /cache/go-build /.trio/go-build </dev/null"}} {
		var d []time.Duration
		var out string
		for i := 0; i < 7; i++ {
			t0 := time.Now()
			res, _ := s.Exec(context.Background(), sandbox.Command{Argv: c})
			d = append(d, time.Since(t0))
			out = res.Stdout + res.Stderr
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		t.Logf("%v: median %v  %.60q", c, d[3], out)
	}
}
