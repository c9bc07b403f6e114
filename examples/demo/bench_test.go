package demo_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/examples/demo"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/containerd"
	"github.com/trioagent/trio/sandbox/landlock"
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
// project after each Reset. "local-clean-critic" is local-new with the
// isolating kinds' rule for the Critic (its checks get a build cache
// holding only the warm base), isolating nothing: the secure kinds' ratio
// to it is what isolation costs, the rest is the rule. All three ratios
// are reported.
func BenchmarkDemo(b *testing.B) {
	configs := map[string]agent.SandboxConfig{agent.SandboxLocal: {Kind: agent.SandboxLocal}}
	kinds := []string{agent.SandboxLocal}
	bases, _ := filepath.Glob(filepath.Join(sandbox.DefaultWarmCache(), "go-build-*[^k]"))
	if len(bases) == 1 {
		configs[localNew] = agent.SandboxConfig{Kind: agent.SandboxLocal}
		kinds = append(kinds, localNew, cleanCriticKind)
	}
	// The clean-Critic baseline hard-links its caches from a private copy
	// of the base, so that nothing it does can touch the machine's.
	var private string
	if len(bases) == 1 {
		private = filepath.Join(b.TempDir(), "base")
		if err := sandbox.CopyTree(bases[0], private); err != nil {
			b.Fatal(err)
		}
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
	if landlock.Available(context.Background()) == nil {
		configs[agent.SandboxLandlock] = agent.SandboxConfig{Kind: agent.SandboxLandlock}
		kinds = append(kinds, agent.SandboxLandlock)
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
			opts := []agent.Option{agent.WithWorkspace(filepath.Join(dir, "project")),
				agent.WithRunsDir(filepath.Join(dir, "runs"))}
			if kind == cleanCriticKind {
				sb, err := newCleanCritic(filepath.Join(dir, "project"), private, filepath.Join(dir, "caches"))
				if err != nil {
					b.Fatal(err)
				}
				opts = append(opts, agent.WithSandbox(sb))
			} else {
				opts = append(opts, agent.WithSandboxConfig(configs[kind]))
			}
			a, err := agent.New(model, nil, opts...)
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
	local, fresh, clean := total[agent.SandboxLocal], total[localNew], total[cleanCriticKind]
	for _, kind := range kinds {
		b.ReportMetric(float64(total[kind].Milliseconds())/float64(n), kind+"-ms")
		if kind != agent.SandboxLocal {
			b.ReportMetric(float64(total[kind])/float64(local), kind+"/local")
		}
		secure := kind != agent.SandboxLocal && kind != localNew && kind != cleanCriticKind
		if fresh > 0 && (secure || kind == cleanCriticKind) {
			b.ReportMetric(float64(total[kind])/float64(fresh), kind+"/local-new")
		}
		if clean > 0 && secure {
			b.ReportMetric(float64(total[kind])/float64(clean), kind+"/"+cleanCriticKind)
		}
	}
}

// cleanCriticKind is the local kind with a clean build cache for the
// Critic's checks (see cleanCritic).
const cleanCriticKind = "local-clean-critic"

// cleanCritic is the local sandbox with the isolating kinds' rule for the
// Critic's checks: every command's GOCACHE is a cache that started as the
// warm base, and Reset (which the agent calls before each check) starts a
// new one, so the Critic rebuilds the project as it does in containerd and
// userns. A cache is a tree of hard links to a private copy of the base,
// made in a few milliseconds, as the secure kinds' Reset is.
type cleanCritic struct {
	*sandbox.Local
	base, dir, cache string
	n                int
}

func newCleanCritic(workspace, base, dir string) (*cleanCritic, error) {
	if err := os.MkdirAll(workspace, 0o755); err != nil {
		return nil, err
	}
	l, err := sandbox.NewLocal(workspace, sandbox.Limits{Timeout: 2 * time.Minute})
	if err != nil {
		return nil, err
	}
	c := &cleanCritic{Local: l, base: base, dir: dir}
	return c, c.Reset(context.Background())
}

func (c *cleanCritic) Exec(ctx context.Context, cmd sandbox.Command) (sandbox.Result, error) {
	cmd.Env = append(append([]string(nil), cmd.Env...), "GOCACHE="+c.cache)
	return c.Local.Exec(ctx, cmd)
}

func (c *cleanCritic) Reset(context.Context) error {
	c.n++
	c.cache = filepath.Join(c.dir, strconv.Itoa(c.n))
	return filepath.WalkDir(c.base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(c.base, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(c.cache, rel), 0o755)
		}
		return os.Link(p, filepath.Join(c.cache, rel))
	})
}

// localNew is the local kind on a build cache that has not seen the project.
const localNew = "local-new"
