package userns_test

import (
	"context"
	"testing"
	"time"

	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/userns"
)

// BenchmarkExecRatio interleaves `true` in the userns sandbox and in the
// local one in each iteration, so that load on the machine hits both
// alike, and reports the mean of each and their ratio (userns/local). The
// userns sandbox runs with the shipped policy's rules and a disk limit, as
// a run would.
func BenchmarkExecRatio(b *testing.B) {
	requireUserns(b)
	ctx := context.Background()
	limits := sandbox.Limits{Timeout: time.Minute, Memory: 2 << 30, Pids: 512, Disk: 4 << 30}
	ws := b.TempDir()
	writeTree(b, ws, map[string]string{".env": "x\n", ".git/config": "x\n", "main.go": "package main\n"})
	sb, err := userns.New(ctx, userns.Config{Workspace: ws, Limits: limits, PathRules: rulesOf(shippedPolicy(b))})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	local, err := sandbox.NewLocal(ws, limits)
	if err != nil {
		b.Fatal(err)
	}
	defer local.Close()
	var spent [2]time.Duration
	for b.Loop() {
		for i, s := range []sandbox.Sandbox{sb, local} {
			start := time.Now()
			if res, err := s.Exec(ctx, sandbox.Command{Argv: []string{"true"}}); err != nil || res.ExitCode != 0 {
				b.Fatal(res, err)
			}
			spent[i] += time.Since(start)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(spent[0].Microseconds())/n, "userns-µs/exec")
	b.ReportMetric(float64(spent[1].Microseconds())/n, "local-µs/exec")
	b.ReportMetric(float64(spent[0])/float64(spent[1]), "userns/local")
}
