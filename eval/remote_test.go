package eval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/eval"
	"github.com/trioagent/trio/sandbox"
)

// elsewhere is a Remote that runs each task in folders of its own (as a
// worker on another host would), then lays the finished run out in the
// sample's folder, as a restore from the store does.
type elsewhere struct {
	host string

	mu      sync.Mutex
	config  string
	started []string
	starts  int
}

func (r *elsewhere) Start(_ context.Context, config string, runs []eval.RemoteRun) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.config, r.starts = config, r.starts+1
	for _, x := range runs {
		r.started = append(r.started, fmt.Sprintf("%s#%d", x.Task.ID, x.Sample))
	}
	return nil
}

func (r *elsewhere) Wait(ctx context.Context, run eval.RemoteRun, dir string) (string, error) {
	t := run.Task
	host := filepath.Join(r.host, fmt.Sprintf("%s-%d", t.ID, run.Sample))
	ws := filepath.Join(host, "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return "", err
	}
	if seed := t.SeedPath(); seed != "" {
		if err := sandbox.CopyTree(seed, ws); err != nil {
			return "", err
		}
	}
	model, _, err := replay(ctx, t)
	if err != nil {
		return "", err
	}
	id := "remote-" + t.ID
	a, err := agent.New(model, nil, agent.WithRunsDir(filepath.Join(host, "runs")), agent.WithRunID(id), agent.WithWorkspace(ws),
		agent.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxLocal}), agent.WithBudgets(run.Budgets))
	if err != nil {
		return "", err
	}
	if _, err := a.Run(ctx, t.Goal); err != nil {
		return "", err
	}
	for _, sub := range []string{"runs", "workspace"} {
		if err := sandbox.CopyTree(filepath.Join(host, sub), filepath.Join(dir, sub)); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "runs", id), nil
}

// TestRemoteSameResults runs tasks through a Remote (each run in folders
// of its own, then laid out in the eval's folder): the results and totals
// equal those of the local eval of the same replays; the judge ran on the
// laid-out workspace; a second eval in the same folder starts nothing.
func TestRemoteSameResults(t *testing.T) {
	s := shipped(t)
	// A seeded task, the disagreement, the stuck run and a Go task.
	tasks, err := s.Select([]string{"py-inventory-seed", "py-intervals", "py-median-stuck", "go-reverse"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	r := &elsewhere{host: t.TempDir()}
	opts := []eval.Option{eval.WithOut(out), eval.WithParallel(2), eval.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxLocal}), eval.WithRemote(r)}
	e, err := eval.New(replay, opts...)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := e.Run(t.Context(), s, tasks)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(r.started)
	if r.starts != 1 || len(r.started) != 4 || r.config != rep.Provenance.ConfigHash {
		t.Errorf("Start called %d times with %v (config %s), want once with the 4 runs and config %s", r.starts, r.started, r.config, rep.Provenance.ConfigHash)
	}
	local, _, _ := runParallel4(t)
	var want []eval.TaskResult
	for _, x := range local.Tasks {
		if slices.ContainsFunc(tasks, func(t eval.Task) bool { return t.ID == x.ID }) {
			want = append(want, x)
		}
	}
	got, w := rep.Totals, eval.Total(want)
	got.RunWallTime, w.RunWallTime = 0, 0
	if got != w {
		t.Errorf("totals through the Remote %+v, local %+v", got, w)
	}
	for i, x := range rep.Tasks {
		a, b := x.Outcome(), want[i].Outcome()
		a.RunID, b.RunID = "", ""
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Errorf("task %s through the Remote:\n%s\nlocal:\n%s", x.ID, ja, jb)
		}
		if rel, err := filepath.Rel(out, x.RunDir); err != nil || !filepath.IsLocal(rel) {
			t.Errorf("task %s: run folder %s is not in the eval's folder %s", x.ID, x.RunDir, out)
		}
		if _, err := os.Stat(filepath.Join(eval.SampleDir(out, x.ID, 1), "judge")); err != nil {
			t.Errorf("task %s: no judged copy: %v", x.ID, err)
		}
	}
	// A second eval in the same folder finds every result: nothing starts.
	again := &elsewhere{host: t.TempDir()}
	e, err = eval.New(replay, append(opts[:3:3], eval.WithRemote(again))...)
	if err != nil {
		t.Fatal(err)
	}
	rep2, err := e.Run(t.Context(), s, tasks)
	if err != nil {
		t.Fatal(err)
	}
	if again.starts != 0 || len(rep2.Skipped) != 4 || rep2.Totals != rep.Totals {
		t.Errorf("second eval: %d starts, skipped %v, totals %+v (first %+v)", again.starts, rep2.Skipped, rep2.Totals, rep.Totals)
	}
}
