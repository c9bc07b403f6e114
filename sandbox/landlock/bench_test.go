package landlock_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/landlock"
	"github.com/trioagent/trio/tools"
)

// BenchmarkExecRatios interleaves `true` in the landlock sandbox and in
// the local one in each iteration, so that load on the machine hits both
// alike, and reports the median of each and their ratio
// (landlock/local); the goal is at most 3 ms, or 3× local. The landlock
// sandbox runs with the shipped policy's rules and limits, as a run
// would (the workspace holds no denied path: this kind refuses one).
// back-to-back runs the commands one after the other: each landlock
// command's helper, started when the previous command ended, is still
// starting, and its start competes with the local command. after-pause
// waits 100 ms before each command, as an agent's commands come (a
// model's turn between two): the helper waits ready.
func BenchmarkExecRatios(b *testing.B) {
	requireLandlock(b)
	for _, bc := range []struct {
		name  string
		pause time.Duration
	}{{"back-to-back", 0}, {"after-pause", 100 * time.Millisecond}} {
		b.Run(bc.name, func(b *testing.B) { benchExecRatios(b, bc.pause) })
	}
}

func benchExecRatios(b *testing.B, pause time.Duration) {
	ctx := context.Background()
	pol := sandboxtest.ShippedPolicy(b)
	limits := sandbox.Limits{Timeout: time.Minute, Memory: 2 << 30, Pids: 512, Disk: 4 << 30}
	ws := b.TempDir()
	sb, err := sandbox.Open(ctx, landlock.Kind, sandbox.RunSpec{Workspace: ws, Limits: limits, PathRules: tools.PathRules(pol), Settings: landlock.Config{WarmCache: "none"}})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	local, err := sandbox.Open(ctx, sandbox.LocalKind, sandbox.RunSpec{Workspace: ws, Limits: limits})
	if err != nil {
		b.Fatal(err)
	}
	defer local.Close()
	cmd := sandbox.Command{Argv: []string{"true"}}
	var spent [2][]time.Duration
	for b.Loop() {
		for i, s := range []sandbox.Sandbox{sb, local} {
			time.Sleep(pause)
			start := time.Now()
			if res, err := s.Exec(ctx, cmd); err != nil || res.ExitCode != 0 {
				b.Fatal(res, err)
			}
			spent[i] = append(spent[i], time.Since(start))
		}
	}
	ll, lo := median(spent[0]), median(spent[1])
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(ll), "landlock-ms")
	b.ReportMetric(ms(lo), "local-ms")
	b.ReportMetric(float64(ll)/float64(lo), "landlock/local")
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
