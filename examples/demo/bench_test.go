package demo_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/examples/demo"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/containerd"
	"github.com/trioagent/trio/sandbox/userns"
)

// BenchmarkDemo runs the demo through the library in each sandbox kind this
// machine has, interleaved in every iteration so that load hits them alike,
// and reports each kind's mean wall time and its ratio to local.
// "containerd-cold" is containerd without the warm build cache, as every
// containerd run was before it; userns is measured where bwrap works. The first containerd run of a toolchain
// builds the warm cache; run the benchmark once before reading its figures.
// -short leaves containerd-cold out (it takes minutes per run).
//
// "local" uses this machine's Go build cache, where earlier iterations
// left the demo project compiled and its test results cached: a second
// run of the same project. "local-new" is local with a build cache that
// holds only what the warm base holds (the standard library as small
// projects use it), as for a project this machine has not built; the
// secure kinds start every run that way, and their Critic rebuilds the
// project after each Reset. Both ratios are reported.
func BenchmarkDemo(b *testing.B) {
	configs := map[string]agent.SandboxConfig{agent.SandboxLocal: {Kind: agent.SandboxLocal}}
	kinds := []string{agent.SandboxLocal}
	bases, _ := filepath.Glob(filepath.Join(sandbox.DefaultWarmCache(), "go-build-*[^k]"))
	if len(bases) == 1 {
		configs[localNew] = agent.SandboxConfig{Kind: agent.SandboxLocal}
		kinds = append(kinds, localNew)
	}
	if containerd.Available(context.Background(), "") == nil {
		configs[agent.SandboxContainerd] = agent.SandboxConfig{Kind: agent.SandboxContainerd}
		kinds = append(kinds, agent.SandboxContainerd)
		if !testing.Short() {
			configs["containerd-cold"] = agent.SandboxConfig{Kind: agent.SandboxContainerd, Containerd: containerd.Config{WarmCache: "none"}}
			kinds = append(kinds, "containerd-cold")
		}
	}
	if userns.Available(context.Background(), "") == nil {
		configs[agent.SandboxUserns] = agent.SandboxConfig{Kind: agent.SandboxUserns}
		kinds = append(kinds, agent.SandboxUserns)
	}
	total := make(map[string]time.Duration)
	n := 0
	for b.Loop() {
		n++
		for _, kind := range kinds {
			dir := b.TempDir()
			if kind == localNew {
				cache := filepath.Join(dir, "gocache")
				if err := sandbox.CopyTree(bases[0], cache); err != nil {
					b.Fatal(err)
				}
				b.Setenv("GOCACHE", cache)
			}
			model, err := demo.Model()
			if err != nil {
				b.Fatal(err)
			}
			a, err := agent.New(model, nil,
				agent.WithWorkspace(filepath.Join(dir, "project")),
				agent.WithRunsDir(filepath.Join(dir, "runs")),
				agent.WithSandboxConfig(configs[kind]))
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			rep, err := a.Run(context.Background(), demo.Goal())
			if err != nil {
				b.Fatal(err)
			}
			if rep.Reason != agent.StopCompleted {
				b.Fatalf("%s: %s: %s", kind, rep.Reason, rep.Detail)
			}
			total[kind] += time.Since(start)
			os.Unsetenv("GOCACHE")
			os.RemoveAll(dir)
		}
	}
	local, fresh := total[agent.SandboxLocal], total[localNew]
	for _, kind := range kinds {
		b.ReportMetric(float64(total[kind].Milliseconds())/float64(n), kind+"-ms")
		if kind != agent.SandboxLocal {
			b.ReportMetric(float64(total[kind])/float64(local), kind+"/local")
		}
		if fresh > 0 && kind != agent.SandboxLocal && kind != localNew {
			b.ReportMetric(float64(total[kind])/float64(fresh), kind+"/local-new")
		}
	}
}

// localNew is the local kind on a build cache that has not seen the project.
const localNew = "local-new"
