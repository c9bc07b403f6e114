package agent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/summarizer"
)

// crashScript is the calc repair run with a summary: two Worker turns
// before the bug is written, so that the window summarizes, then the
// Critic's failing check, the repair and the passing check.
func crashScript() *fakeModel {
	return newFake().
		add(agent.RolePlanner, calcPlan()).
		add(agent.RoleTestDesigner, calcSuite()).
		add(agent.RoleSummarizer, summaryReply("go.mod written, files listed", llm.Usage{}), summaryReply("calc.go written", llm.Usage{})).
		add(agent.RoleWorker,
			calls("", write("go.mod", goMod)),
			calls("", call{"list_files", map[string]any{}}),
			calls("", write("calc.go", calcBuggy), finish("calc written")),
			calls("What failed: TestAdd (Add(2, 3) = -1, want 5). Likely cause: Add subtracts. My last change caused it: calc.go uses a - b.",
				edit("calc.go", "a - b", "a + b")),
			calls("", runTests(), finish("Add fixed")),
		).
		add(agent.RoleCritic, failing("TestAdd"))
}

// crashOpts are the options of every session of a crash test's run.
func crashOpts(dir string, extra ...agent.Option) []agent.Option {
	ws := filepath.Join(dir, "ws")
	return append([]agent.Option{agent.WithWorkspace(ws), agent.WithRunsDir(filepath.Join(dir, "runs")), agent.WithRunID("run"),
		agent.WithSandbox(&fakeGo{ws: ws}), agent.WithWindow(summarizer.Config{SummaryEvery: 2, KeepRounds: 1})}, extra...)
}

// TestCrashHelper is the process the crash tests kill: it runs (or, with
// TRIO_CRASH_RESUME, resumes) the crash script and sends itself SIGKILL at
// its TRIO_CRASH_AT-th event, of kind TRIO_CRASH_KIND (any when empty)
// and role TRIO_CRASH_ROLE (any when empty).
func TestCrashHelper(t *testing.T) {
	dir := os.Getenv("TRIO_CRASH_DIR")
	if dir == "" {
		t.Skip("helper process of the crash tests")
	}
	at, _ := strconv.Atoi(os.Getenv("TRIO_CRASH_AT"))
	kind, role := agent.EventKind(os.Getenv("TRIO_CRASH_KIND")), os.Getenv("TRIO_CRASH_ROLE")
	seen := 0
	opts := crashOpts(dir, agent.WithObserver(func(ev agent.Event) {
		if (kind == "" || ev.Kind == kind) && (role == "" || ev.Role == role) {
			if seen++; seen == at {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}
	}))
	if os.Getenv("TRIO_CRASH_RESUME") != "" {
		agent.Resume(context.Background(), filepath.Join(dir, "runs", "run"), crashScript(), nil, opts...)
	} else {
		a, err := agent.New(crashScript(), nil, opts...)
		if err != nil {
			t.Fatal(err)
		}
		a.Run(context.Background(), "Build package calc with Add(a, b int) int.")
	}
	fmt.Println("TRIO_CRASH_NOT_KILLED")
}

// crash runs the helper; it reports whether the helper was killed (false:
// it ran to the end first).
func crash(dir string, resume bool, at int, kind agent.EventKind, role string) (bool, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$")
	cmd.Env = append(os.Environ(), "TRIO_CRASH_DIR="+dir, "TRIO_CRASH_AT="+strconv.Itoa(at),
		"TRIO_CRASH_KIND="+string(kind), "TRIO_CRASH_ROLE="+role)
	if resume {
		cmd.Env = append(cmd.Env, "TRIO_CRASH_RESUME=1")
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL {
		return true, nil
	}
	if !strings.Contains(string(out), "TRIO_CRASH_NOT_KILLED") {
		return false, fmt.Errorf("helper: %v\n%s", err, out)
	}
	return false, nil
}

// auditRecord is what the crash tests read of an audit line.
type auditRecord struct {
	CallID   string `json:"call_id"`
	Role     string `json:"role"`
	Tool     string `json:"tool"`
	Outcome  string `json:"outcome"`
	Key      string `json:"wal_key"`
	Replayed bool   `json:"replayed"`
	Rerun    bool   `json:"rerun"`
	Effects  []struct {
		Path    string `json:"path"`
		Command struct {
			Line string `json:"line"`
		} `json:"command"`
	} `json:"effects"`
}

func readAudit(runDir string) ([]auditRecord, error) {
	f, err := os.Open(filepath.Join(runDir, agent.AuditFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []auditRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var r auditRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("audit.jsonl:%d: %v", n, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// unrecordedReruns lists the calls that the audit shows as run more than
// once without saying so: a Worker call (by tool and target) executed
// twice, or a Critic call (by its calls.jsonl key) executed again without
// the rerun mark. A replayed call ran nothing. Audit call ids must be
// unique.
func unrecordedReruns(audit []auditRecord) []string {
	var bad []string
	ids := map[string]bool{}
	ran := map[string]int{}
	for _, r := range audit {
		if ids[r.CallID] && r.Role == agent.RoleCritic {
			bad = append(bad, "critic call id "+r.CallID+" used twice")
		}
		ids[r.CallID] = true
		switch {
		case r.Role == agent.RoleCritic && r.Key == "":
			bad = append(bad, "critic call "+r.CallID+" has no calls.jsonl key")
		case r.Role == agent.RoleCritic && !r.Replayed:
			if ran[r.Key]++; ran[r.Key] > 1 && !r.Rerun {
				bad = append(bad, "critic call "+r.Key+" ran again without the rerun mark")
			}
		case r.Role == agent.RoleWorker && r.Tool != agent.FinishStepName:
			target := r.Tool
			for _, e := range r.Effects {
				target += " " + e.Path + e.Command.Line
			}
			if ran[target]++; ran[target] > 1 {
				bad = append(bad, "worker call "+target+" ran twice")
			}
		}
	}
	return bad
}

// crashNumbers are the metrics a run killed and resumed must share with a
// run never interrupted.
type crashNumbers struct{ firstPass, repairs, checks, steps, turns, calls, toolCalls, failures, summaries int }

func numbersOf(r *agent.Report) crashNumbers {
	m := r.Metrics
	fp := 0
	if m.FirstPass {
		fp = 1
	}
	return crashNumbers{fp, m.RepairRounds, m.Checks, m.StepsDone, m.WorkerTurns, m.ModelCalls, m.ToolCalls, m.ToolFailures, m.Summaries}
}

// The crash test: the run is killed with SIGKILL at a random event
// (Planner, test designer, Worker, Critic, summarizer: any moment the run
// tells about), the resume is killed again at a random event every other
// time, and the last resume ends like a run never killed: the same
// metrics, the same files, no run folder without a checkpoint and no call
// run twice without a record. TRIO_CRASH_SEED replays a failure.
func TestCrashLoop(t *testing.T) {
	t.Parallel()
	ref := t.TempDir()
	var events []agent.Event
	a, err := agent.New(crashScript(), nil, crashOpts(ref, agent.WithObserver(func(ev agent.Event) { events = append(events, ev) }))...)
	if err != nil {
		t.Fatal(err)
	}
	want, err := a.Run(context.Background(), "Build package calc with Add(a, b int) int.")
	if err != nil || want.Reason != agent.StopCompleted || want.Metrics.Summaries == 0 || want.Metrics.RepairRounds != 1 {
		t.Fatalf("reference run: %v %+v", err, want)
	}
	wantFiles := snapshot(t, filepath.Join(ref, "ws"))
	roles := map[string]bool{}
	for _, ev := range events {
		roles[ev.Role] = true
	}
	for _, r := range []string{agent.RolePlanner, agent.RoleTestDesigner, agent.RoleWorker, agent.RoleCritic, agent.RoleSummarizer} {
		if !roles[r] {
			t.Fatalf("the reference run has no %s event to be killed at", r)
		}
	}

	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("TRIO_CRASH_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	const rounds = 30
	type round struct{ at, again int }
	plan := make([]round, rounds)
	for i := range plan {
		plan[i] = round{at: 1 + rng.IntN(len(events))}
		if i%2 == 1 {
			plan[i].again = 1 + rng.IntN(len(events))
		}
	}
	// The sessions wait on fsync more than they compute: a few at once.
	results := make([]error, rounds)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, p := range plan {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = crashRound(t.TempDir(), p.at, p.again, want, wantFiles)
		})
	}
	wg.Wait()
	passed := 0
	for i, err := range results {
		ev := events[plan[i].at-1]
		if err != nil {
			t.Errorf("round %d, killed at event %d (%s %s), then at event %d of the resume: %v", i, plan[i].at, ev.Kind, ev.Role, plan[i].again, err)
			continue
		}
		passed++
	}
	t.Logf("seed %d: %d of %d killed runs resumed like the uninterrupted one", seed, passed, rounds)
	if passed != rounds {
		t.Errorf("seed %d: %d of %d passed (TRIO_CRASH_SEED=%d replays it)", seed, passed, rounds, seed)
	}
}

// crashRound kills a run at its at-th event, its resume at the again-th
// (none when 0), resumes it to the end and compares it with want.
func crashRound(dir string, at, again int, want *agent.Report, wantFiles map[string]string) error {
	killed, err := crash(dir, false, at, "", "")
	if err != nil || !killed {
		return fmt.Errorf("not killed at event %d: %v", at, err)
	}
	runDir := filepath.Join(dir, "runs", "run")
	if _, err := os.Stat(runDir); errors.Is(err, fs.ErrNotExist) {
		// Killed at the start's first step, before the run folder was
		// made: there is nothing to resume, nothing may be left behind,
		// and the person starts the run again.
		if entries, _ := os.ReadDir(filepath.Join(dir, "runs")); len(entries) > 0 {
			return fmt.Errorf("killed before its run folder was made, the run left %d entries in the runs folder", len(entries))
		}
		if _, err := crash(dir, false, 0, "", ""); err != nil {
			return fmt.Errorf("started again: %v", err)
		}
		again = 0
	}
	if _, err := os.Stat(filepath.Join(runDir, agent.StateFile)); err != nil {
		return fmt.Errorf("a run folder without a checkpoint: %v", err)
	}
	if again > 0 {
		if _, err := crash(dir, true, again, "", ""); err != nil { // the resume may finish before that event
			return err
		}
	}
	got, err := agent.Resume(context.Background(), runDir, crashScript(), nil, crashOpts(dir)...)
	if errors.Is(err, agent.ErrRunFinished) {
		got, err = agent.LoadReport(runDir)
	}
	if err != nil || got.Reason != agent.StopCompleted {
		return fmt.Errorf("resumed: %v %+v", err, got)
	}
	var problems []string
	if g, w := numbersOf(got), numbersOf(want); g != w {
		problems = append(problems, fmt.Sprintf("metrics after the kills %+v, never killed %+v", g, w))
	}
	gotFiles, err := snapshotFiles(filepath.Join(dir, "ws"))
	if err != nil {
		return err
	}
	for p, c := range wantFiles {
		if gotFiles[p] != c {
			problems = append(problems, p+" differs from the uninterrupted run's")
		}
	}
	if len(gotFiles) != len(wantFiles) {
		problems = append(problems, fmt.Sprintf("files %v, want %v", keys(gotFiles), keys(wantFiles)))
	}
	audit, err := readAudit(runDir)
	if err != nil {
		return err
	}
	if bad := unrecordedReruns(audit); len(bad) > 0 {
		problems = append(problems, fmt.Sprintf("the audit shows calls run again without a record: %v", bad))
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "runs")); len(entries) != 1 {
		problems = append(problems, fmt.Sprintf("the runs folder holds %d entries, want the run only", len(entries)))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// Killed right after the Critic's tests ran, before its verdict was
// checkpointed: the resumed check takes the recorded result (replayed in
// the audit) instead of running the tests again. Killed with the tests in
// flight (their record has a begin and no end), they run again, marked
// rerun. Either way the audit shows no unrecorded re-run.
func TestKilledDuringCriticCheck(t *testing.T) {
	t.Parallel()
	for _, inFlight := range []bool{false, true} {
		t.Run(fmt.Sprintf("in_flight=%v", inFlight), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if killed, err := crash(dir, false, 1, agent.EventToolCall, agent.RoleCritic); !killed {
				t.Fatalf("not killed: %v", err)
			}
			runDir := filepath.Join(dir, "runs", "run")
			if inFlight {
				// Drop the record's last line, the run_tests "end".
				p := filepath.Join(runDir, agent.CallsFile)
				b, _ := os.ReadFile(p)
				if !strings.Contains(string(b[lastRecordStart(b):]), `"phase":"end","key":"check1.1"`) {
					t.Fatalf("calls.jsonl does not end with the Critic's run_tests:\n%s", b[lastRecordStart(b):])
				}
				os.WriteFile(p, b[:lastRecordStart(b)], 0o644)
			}
			sb := &fakeGo{ws: filepath.Join(dir, "ws")}
			opts := append(crashOpts(dir), agent.WithSandbox(sb))
			got, err := agent.Resume(context.Background(), runDir, crashScript(), nil, opts...)
			if err != nil || got.Reason != agent.StopCompleted || got.Metrics.Checks != 2 {
				t.Fatalf("resumed: %v %+v", err, got)
			}
			audit, err := readAudit(runDir)
			if err != nil {
				t.Fatal(err)
			}
			if bad := unrecordedReruns(audit); len(bad) > 0 {
				t.Errorf("unrecorded re-runs: %v", bad)
			}
			var first []auditRecord
			for _, r := range audit {
				if r.Key == "check1.1" {
					first = append(first, r)
				}
			}
			if len(first) != 2 || first[0].Replayed || first[0].CallID == first[1].CallID {
				t.Fatalf("check1.1 in the audit: %+v, want the killed session's and the resumed session's, with distinct ids", first)
			}
			if inFlight != first[1].Rerun || inFlight == first[1].Replayed {
				t.Errorf("the resumed check1.1: %+v, want rerun %v, replayed %v", first[1], inFlight, !inFlight)
			}
			// The resumed session ran go test for the Worker's run_tests
			// and the second check, and again for the first check only when
			// its result was lost.
			if want := map[bool]int{false: 2, true: 3}[inFlight]; sb.runs() != want {
				t.Errorf("the resumed session ran go test %d times, want %d", sb.runs(), want)
			}
			if got.Metrics.Replayed < map[bool]int{false: 1, true: 0}[inFlight] {
				t.Errorf("replayed %d", got.Metrics.Replayed)
			}
		})
	}
}
