package containerd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"

	"github.com/trioagent/trio/sandbox"
)

// BenchmarkExecTrue compares the per-command overhead of `true`: an exec in
// the run's container, a fresh container per command, and the local sandbox.
func BenchmarkExecTrue(b *testing.B) {
	ctx := context.Background()
	b.Run("exec", func(b *testing.B) {
		s := newSandbox(b, sandbox.RunSpec{})
		for b.Loop() {
			if res, err := s.Exec(ctx, sandbox.Command{Argv: []string{"true"}}); err != nil || res.ExitCode != 0 {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("fresh-container", func(b *testing.B) {
		s := newSandbox(b, sandbox.RunSpec{})
		i := 0
		for b.Loop() {
			i++
			if err := freshContainer(s, fmt.Sprintf("%s-fresh-%d", s.ID(), i), "true"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("local", func(b *testing.B) {
		l, err := sandbox.NewLocal(b.TempDir(), sandbox.Limits{Timeout: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		for b.Loop() {
			if res, err := l.Exec(ctx, sandbox.Command{Argv: []string{"true"}}); err != nil || res.ExitCode != 0 {
				b.Fatal(res, err)
			}
		}
	})
}

// BenchmarkExecRatios interleaves four ways of running `true` in each
// iteration, so that load on the machine hits them alike, and reports the
// median of each and their ratios: through the container's exec server
// (what Exec does), through runc's exec (what it did before the server,
// and still does where the server cannot run), in a fresh container, and
// in the local sandbox.
func BenchmarkExecRatios(b *testing.B) {
	ctx := context.Background()
	s := newSandbox(b, sandbox.RunSpec{})
	viaRunc := newSandbox(b, sandbox.RunSpec{Settings: Config{noExecServer: true}})
	if s.exe == "" || viaRunc.exe != "" {
		b.Fatal("the exec server is not where this benchmark expects it")
	}
	l, err := sandbox.NewLocal(b.TempDir(), sandbox.Limits{Timeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	cmd := sandbox.Command{Argv: []string{"true"}}
	var exec, runc, fresh, local []time.Duration
	i := 0
	for b.Loop() {
		i++
		t0 := time.Now()
		if res, err := s.Exec(ctx, cmd); err != nil || res.ExitCode != 0 {
			b.Fatal(res, err)
		}
		t1 := time.Now()
		if res, err := viaRunc.Exec(ctx, cmd); err != nil || res.ExitCode != 0 {
			b.Fatal(res, err)
		}
		t2 := time.Now()
		if err := freshContainer(s, fmt.Sprintf("%s-ratio-%d", s.ID(), i), "true"); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		if res, err := l.Exec(ctx, cmd); err != nil || res.ExitCode != 0 {
			b.Fatal(res, err)
		}
		t4 := time.Now()
		exec, runc = append(exec, t1.Sub(t0)), append(runc, t2.Sub(t1))
		fresh, local = append(fresh, t3.Sub(t2)), append(local, t4.Sub(t3))
	}
	e, r, f, lo := median(exec), median(runc), median(fresh), median(local)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(e), "exec-ms")
	b.ReportMetric(ms(r), "runc-exec-ms")
	b.ReportMetric(ms(f), "fresh-ms")
	b.ReportMetric(ms(lo), "local-ms")
	b.ReportMetric(float64(r)/float64(e), "runc/exec")
	b.ReportMetric(float64(f)/float64(e), "fresh/exec")
	b.ReportMetric(float64(e)/float64(lo), "exec/local")
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// freshContainer runs args as the init process of a new container with the
// sandbox's spec, waits for it and deletes it.
func freshContainer(s *Sandbox, id string, args ...string) error {
	ctx := s.ctx
	opts, err := s.containerOpts(ctx, id, args, s.partsOf(s.box))
	if err != nil {
		return err
	}
	c, err := s.client.NewContainer(ctx, id, opts...)
	if err != nil {
		return err
	}
	defer c.Delete(ctx, client.WithSnapshotCleanup)
	t, err := c.NewTask(ctx, cio.NullIO)
	if err != nil {
		return err
	}
	defer t.Delete(ctx, client.WithProcessKill)
	ch, err := t.Wait(ctx)
	if err != nil {
		return err
	}
	if err := t.Start(ctx); err != nil {
		return err
	}
	if st := <-ch; st.ExitCode() != 0 {
		return fmt.Errorf("exit %d", st.ExitCode())
	}
	return nil
}

var smallProject = map[string]string{
	"go.mod":            "module example.com/small\n\ngo 1.24\n",
	"calc/calc.go":      "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
	"calc/calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"Add\")\n\t}\n}\n",
	"text/text.go":      "package text\n\nimport \"strings\"\n\nfunc Shout(s string) string { return strings.ToUpper(s) + \"!\" }\n",
	"text/text_test.go": "package text\n\nimport \"testing\"\n\nfunc TestShout(t *testing.T) {\n\tif Shout(\"hi\") != \"HI!\" {\n\t\tt.Fatal(\"Shout\")\n\t}\n}\n",
}

func writeProject(b *testing.B, dir string) {
	for name, content := range smallProject {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGoTest is the wall time of `go test -count=1 ./...` for a small
// Go project in the containerd sandbox and in the local one, after one
// warm-up run that fills the build cache; it reports the median.
func BenchmarkGoTest(b *testing.B) {
	limits := sandbox.Limits{Timeout: 5 * time.Minute, Memory: 1 << 30, CPUs: 2, Pids: 512, Output: 64 << 10}
	bench := func(b *testing.B, sb sandbox.Sandbox) {
		cmd := sandbox.Command{Argv: []string{"go", "test", "-count=1", "./..."}}
		if res, err := sb.Exec(context.Background(), cmd); err != nil || res.ExitCode != 0 {
			b.Fatalf("warm-up: %v %+v", err, res)
		}
		var times []time.Duration
		for b.Loop() {
			res, err := sb.Exec(context.Background(), cmd)
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("%v %+v", err, res)
			}
			times = append(times, res.Duration)
		}
		slices.Sort(times)
		b.ReportMetric(float64(times[len(times)/2].Milliseconds()), "median-ms")
	}
	b.Run("containerd", func(b *testing.B) {
		ws := b.TempDir()
		writeProject(b, ws)
		bench(b, newSandbox(b, sandbox.RunSpec{Workspace: ws, Limits: limits}))
	})
	b.Run("local", func(b *testing.B) {
		ws := b.TempDir()
		writeProject(b, ws)
		l, err := sandbox.NewLocal(ws, limits)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		bench(b, l)
	})
}
