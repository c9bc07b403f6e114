package agent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/trioagent/trio/agent"
)

// TestKilledHelper is the process TestKillAndResume kills: it runs the calc
// repair run and sends itself SIGKILL at the Nth event of a kind.
func TestKilledHelper(t *testing.T) {
	dir := os.Getenv("TRIO_KILL_DIR")
	if dir == "" {
		t.Skip("helper process of TestKillAndResume")
	}
	kind := agent.EventKind(os.Getenv("TRIO_KILL_KIND"))
	n, _ := strconv.Atoi(os.Getenv("TRIO_KILL_AT"))
	e := env{runs: filepath.Join(dir, "runs"), ws: filepath.Join(dir, "ws")}
	seen := 0
	a, err := agent.New(buggyThenFixed(), nil, e.opts(agent.WithObserver(func(ev agent.Event) {
		if ev.Kind == kind {
			if seen++; seen == n {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}
	}))...)
	if err != nil {
		t.Fatal(err)
	}
	a.Run(context.Background(), "Build package calc with Add(a, b int) int.")
	t.Fatal("not killed")
}

// A run killed with SIGKILL at several points (after a tool call ran but
// before its checkpoint, right after a model reply) and resumed in a new
// model ends with the same workspace and the same metrics as a run never
// interrupted.
func TestKillAndResume(t *testing.T) {
	t.Parallel()
	ref := newEnv(t)
	want := run(t, buggyThenFixed(), nil, ref.opts()...)
	if want.Reason != agent.StopCompleted {
		t.Fatalf("reference run: %s (%s)", want.Reason, want.Detail)
	}
	wantFiles := snapshot(t, ref.ws)
	tests := []struct {
		kind agent.EventKind
		at   int
	}{
		{agent.EventToolCall, 1},
		{agent.EventToolCall, 3},
		{agent.EventToolCall, 5},
		{agent.EventModelCall, 4},
		{agent.EventCriticVerdict, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s_%d", tt.kind, tt.at), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			e := env{runs: filepath.Join(dir, "runs"), ws: filepath.Join(dir, "ws")}
			os.MkdirAll(e.ws, 0o755)
			cmd := exec.Command(os.Args[0], "-test.run=^TestKilledHelper$")
			cmd.Env = append(os.Environ(), "TRIO_KILL_DIR="+dir, "TRIO_KILL_KIND="+string(tt.kind), "TRIO_KILL_AT="+strconv.Itoa(tt.at))
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("helper was not killed: %v\n%s", err, out)
			}
			// What `trio inspect` shows of a killed run.
			ins, err := agent.Inspect(filepath.Join(e.runs, "run"))
			if err != nil || ins.Status != "running or killed" || ins.Plan == nil {
				t.Errorf("inspect a killed run: %v %+v", err, ins)
			}
			if _, err := agent.ReadTrace(filepath.Join(e.runs, "run")); err != nil {
				t.Errorf("read the trace of a killed run: %v", err)
			}
			var untargeted []string // calls replayed or run again still say what they acted on
			got, err := agent.Resume(context.Background(), filepath.Join(e.runs, "run"), buggyThenFixed(), nil, local,
				agent.WithObserver(func(ev agent.Event) {
					if ev.Kind == agent.EventToolCall && ev.Tool != agent.FinishStepName && ev.Target == "" {
						untargeted = append(untargeted, ev.Tool)
					}
				}))
			if err != nil {
				t.Fatal(err)
			}
			if len(untargeted) > 0 {
				t.Errorf("tool_call events without a target after resume: %v", untargeted)
			}
			if got.Reason != agent.StopCompleted {
				t.Fatalf("resumed run: %s (%s)", got.Reason, got.Detail)
			}
			gm, wm := got.Metrics, want.Metrics
			type numbers struct{ firstPass, repairs, checks, steps, turns, calls, toolCalls, failures int }
			b := func(v bool) int {
				if v {
					return 1
				}
				return 0
			}
			g := numbers{b(gm.FirstPass), gm.RepairRounds, gm.Checks, gm.StepsDone, gm.WorkerTurns, gm.ModelCalls, gm.ToolCalls, gm.ToolFailures}
			w := numbers{b(wm.FirstPass), wm.RepairRounds, wm.Checks, wm.StepsDone, wm.WorkerTurns, wm.ModelCalls, wm.ToolCalls, wm.ToolFailures}
			if g != w {
				t.Errorf("metrics after resume %+v, uninterrupted %+v", g, w)
			}
			if gm.Sessions != 2 {
				t.Errorf("sessions %d, want 2", gm.Sessions)
			}
			gotFiles := snapshot(t, e.ws)
			if len(gotFiles) != len(wantFiles) {
				t.Errorf("files %v, want %v", keys(gotFiles), keys(wantFiles))
			}
			for p, c := range wantFiles {
				if gotFiles[p] != c {
					t.Errorf("%s differs from the uninterrupted run's", p)
				}
			}
		})
	}
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, err := snapshotFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// snapshotFiles maps each file under dir to its content.
func snapshotFiles(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		files[rel] = string(b)
		return err
	})
	return files, err
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
