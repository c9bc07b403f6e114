package userns_test

import (
	"context"
	"fmt"
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
	sb, err := userns.New(ctx, sandbox.RunSpec{Workspace: ws, Limits: limits, PathRules: rulesOf(shippedPolicy(b))})
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

// BenchmarkTrustedGoTest interleaves a trusted build (go test ./... as its
// own argv) of a small module in the userns sandbox and in the local one:
// each iteration changes the package (so that it compiles and its test
// runs), then runs the same go test again (all cached). It reports the
// mean of each per go test and their ratios (userns/local), compiling and
// cached. The userns sandbox uses the machine's warm base.
func BenchmarkTrustedGoTest(b *testing.B) {
	requireUserns(b)
	ctx := context.Background()
	files := func(n int) map[string]string {
		return map[string]string{
			"go.mod":      "module m\n\ngo 1.21\n",
			"p/p.go":      fmt.Sprintf("package p\n\nimport \"strings\"\n\nconst N = %d\n\nfunc Up(s string) string { return strings.ToUpper(s) }\n", n),
			"p/p_test.go": "package p\n\nimport \"testing\"\n\nfunc TestUp(t *testing.T) {\n\tif Up(\"a\") != \"A\" || N < 0 {\n\t\tt.Fatal(Up(\"a\"))\n\t}\n}\n",
		}
	}
	limits := sandbox.Limits{Timeout: 5 * time.Minute, Memory: 2 << 30, Pids: 512, Disk: 4 << 30}
	wsU, wsL := b.TempDir(), b.TempDir()
	writeTree(b, wsU, files(0))
	writeTree(b, wsL, files(0))
	sb, err := userns.New(ctx, sandbox.RunSpec{Workspace: wsU, Limits: limits})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	local, err := sandbox.NewLocal(wsL, limits)
	if err != nil {
		b.Fatal(err)
	}
	defer local.Close()
	goTest := func(s sandbox.Sandbox) time.Duration {
		start := time.Now()
		if res, err := s.Exec(ctx, sandbox.Command{Argv: []string{"go", "test", "./..."}}); err != nil || res.ExitCode != 0 {
			b.Fatal(res, err)
		}
		return time.Since(start)
	}
	goTest(sb)
	goTest(local)
	var compile, cached [2]time.Duration
	n := 0
	for b.Loop() {
		n++
		writeTree(b, wsU, files(n))
		writeTree(b, wsL, files(n))
		for i, s := range []sandbox.Sandbox{sb, local} {
			compile[i] += goTest(s)
			cached[i] += goTest(s)
		}
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
	b.ReportMetric(per(compile[0]), "userns-compile-ms")
	b.ReportMetric(per(compile[1]), "local-compile-ms")
	b.ReportMetric(float64(compile[0])/float64(compile[1]), "compile-userns/local")
	b.ReportMetric(per(cached[0]), "userns-cached-ms")
	b.ReportMetric(per(cached[1]), "local-cached-ms")
	b.ReportMetric(float64(cached[0])/float64(cached[1]), "cached-userns/local")
}
