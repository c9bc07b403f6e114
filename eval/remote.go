package eval

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/trioagent/trio/agent"
)

// RemoteRun is one run an eval needs: a task's sample, with the budgets
// the run gets (the eval's, overridden field by field by the task's own).
type RemoteRun struct {
	Task    Task
	Sample  int
	Budgets agent.Budgets
}

// Remote carries out an eval's runs somewhere else than in this process
// (trio eval --temporal: on a pool of workers). The eval keeps everything
// else as for its local runs: the output folder and its lock, the skip of
// finished runs, the judge (here, in a fresh sandbox of the eval's kind,
// so the hidden tests never leave this host), result.json, eval.json and
// eval.md.
type Remote interface {
	// Start is given, once and before any Wait, every run the eval still
	// needs (those without a result for this configuration) and the
	// eval's configuration hash.
	Start(ctx context.Context, config string, runs []RemoteRun) error
	// Wait waits for run to end and lays it out in dir, the sample's
	// folder: its run folder under dir/runs and its final workspace at
	// dir/workspace. It returns the run folder.
	Wait(ctx context.Context, run RemoteRun, dir string) (runDir string, err error)
}

// WithRemote runs the eval's runs through r instead of in this process.
// Parallel then bounds the runs waited for and judged at once here; how
// many run at once is the remote side's business.
func WithRemote(r Remote) Option {
	return func(c *config) error {
		if r == nil {
			return errors.New("eval: WithRemote: nil Remote")
		}
		c.remote = r
		return nil
	}
}

// startRemote hands the pending runs to the remote side.
func (e *Evaluator) startRemote(ctx context.Context, config string, tasks []Task, jobs []job, pending []int) error {
	runs := make([]RemoteRun, 0, len(pending))
	for _, i := range pending {
		t := tasks[jobs[i].task]
		runs = append(runs, RemoteRun{Task: t, Sample: jobs[i].sample, Budgets: mergeBudgets(e.cfg.budgets, t.Budgets)})
	}
	if err := e.cfg.remote.Start(ctx, config, runs); err != nil {
		return fmt.Errorf("eval: start the runs: %w", err)
	}
	return nil
}

// runRemote waits for a sample's remote run, then judges and records it
// as runTask does a local one.
func (e *Evaluator) runRemote(ctx context.Context, out string, sc agent.SandboxConfig, t Task, sample int, config string, total int) (*TaskResult, error) {
	dir := SampleDir(out, t.ID, sample)
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("eval: task %s: %w", t.ID, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("eval: task %s: %w", t.ID, err)
	}
	e.emit(Event{Kind: EventTaskStarted, Task: t.ID, Total: total}, false)
	runDir, err := e.cfg.remote.Wait(ctx, RemoteRun{Task: t, Sample: sample, Budgets: mergeBudgets(e.cfg.budgets, t.Budgets)}, dir)
	if err != nil {
		return nil, fmt.Errorf("eval: task %s (sample %d): %w", t.ID, sample, err)
	}
	disk, err := agent.LoadReport(runDir)
	if err != nil {
		return nil, fmt.Errorf("eval: task %s: %w", t.ID, err)
	}
	// The report names the folders of the host the run ended on.
	disk.RunDir, disk.Workspace = runDir, filepath.Join(dir, "workspace")
	// A remote run's id is the same in every eval that attaches to it:
	// the judge's sandbox gets a name of its own.
	return e.judgeAndRecord(ctx, t, sample, dir, disk, nil, disk.RunID+"-judge-"+randomHex(3), sc, config, total,
		!strings.Contains(disk.Sandbox, "(not isolated)"))
}
