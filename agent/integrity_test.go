package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/tools/testreport"
)

// fakeGo is a sandbox that answers `go test -json` for the calc project
// from calc.go's text, in microseconds: for tests that resume a run many
// times and are about the run folder, not the toolchain.
type fakeGo struct {
	ws string
	mu sync.Mutex
	n  int // go test runs
}

func (s *fakeGo) Exec(ctx context.Context, cmd sandbox.Command) (sandbox.Result, error) {
	if err := ctx.Err(); err != nil {
		return sandbox.Result{}, err
	}
	if len(cmd.Argv) < 2 || cmd.Argv[0] != "go" || cmd.Argv[1] != "test" {
		return sandbox.Result{ExitCode: 127, Stderr: "fakeGo runs only go test"}, nil
	}
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
	src, _ := os.ReadFile(filepath.Join(s.ws, "calc.go"))
	ev := func(action, test, out string) string {
		b, _ := json.Marshal(map[string]any{"Action": action, "Package": "calc/acceptance", "Test": test, "Output": out})
		return string(b) + "\n"
	}
	// The Critic's sentinel tests run beside TestAdd as a real go test
	// would run them: one that logs its nonce passes, one that reports it
	// with Errorf fails.
	others, failed := "", false
	files, _ := filepath.Glob(filepath.Join(s.ws, "acceptance", "*_test.go"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, fn := range strings.Split(string(b), "\nfunc ")[1:] {
			name, _, _ := strings.Cut(fn, "(")
			nonce := sentinelNonce.FindString(fn)
			if name == "TestAdd" || nonce == "" {
				continue
			}
			others += ev("run", name, "") + ev("output", name, "    x_test.go:1: "+nonce+"\n")
			if strings.Contains(fn, "Errorf") {
				others += ev("fail", name, "")
				failed = true
			} else {
				others += ev("pass", name, "")
			}
		}
	}
	if strings.Contains(string(src), "a + b") {
		if failed {
			return sandbox.Result{ExitCode: 1, Stdout: ev("run", "TestAdd", "") + ev("pass", "TestAdd", "") + others + ev("fail", "", "")}, nil
		}
		return sandbox.Result{Stdout: ev("run", "TestAdd", "") + ev("pass", "TestAdd", "") + others + ev("pass", "", "")}, nil
	}
	out := ev("run", "TestAdd", "") + ev("output", "TestAdd", "    calc_test.go:12: Add(2, 3) = -1, want 5\n") +
		ev("fail", "TestAdd", "") + others + ev("fail", "", "")
	return sandbox.Result{ExitCode: 1, Stdout: out}, nil
}

var sentinelNonce = regexp.MustCompile(testreport.NoncePattern)

func (s *fakeGo) Info() sandbox.Info {
	return sandbox.Info{Kind: "fake-go", Isolated: true, WorkspaceDir: s.ws}
}

func (s *fakeGo) Close() error { return nil }

func (s *fakeGo) runs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// copyTree copies the files of src into dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
}

// comparable is a report without what differs between two folders and two
// moments: paths and times.
func comparable(r *agent.Report) agent.Report {
	c := *r
	c.RunDir, c.Workspace = "", ""
	c.Started, c.Finished, c.Updated = time.Time{}, time.Time{}, time.Time{}
	m := &c.Metrics
	m.WallTime, m.ModelTime, m.ToolTime, m.SandboxTime, m.StartTime, m.OtherTime = 0, 0, 0, 0, 0, 0
	roles := map[string]agent.RoleUsage{}
	for k, u := range m.Roles {
		u.Duration = 0
		roles[k] = u
	}
	m.Roles = roles
	return c
}

// lastRecordStart is the offset where the last line of b starts.
func lastRecordStart(b []byte) int {
	body := strings.TrimSuffix(string(b), "\n")
	return strings.LastIndexByte(body, '\n') + 1
}

// A run folder whose JSONL files are torn anywhere in their last record
// (a crash or a full disk mid-append) resumes, and resumes again, to the
// same final report as the folder untorn: each tail is cut back before
// anything is appended, and the cut is in the trace.
func TestTornTailsResumeToSameReport(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	runs, ws := filepath.Join(base, "runs"), filepath.Join(base, "ws")
	os.MkdirAll(ws, 0o755)
	// The template: the calc repair run, interrupted once the repair round
	// finished, before the last check.
	ctx, cancel := context.WithCancel(context.Background())
	a, err := agent.New(buggyThenFixed(), nil, agent.WithWorkspace(ws), agent.WithRunsDir(runs), agent.WithRunID("run"),
		agent.WithSandbox(&fakeGo{ws: ws}), agent.WithObserver(func(ev agent.Event) {
			if ev.Kind == agent.EventToolCall && ev.Tool == agent.FinishStepName && ev.Repair > 0 {
				cancel()
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(ctx, "Build package calc with Add(a, b int) int.")
	if err != nil || rep.Reason != agent.StopInterrupted || rep.Metrics.RepairRounds != 1 {
		t.Fatalf("template run: %v %s (%s), repairs %d", err, rep.Reason, rep.Detail, rep.Metrics.RepairRounds)
	}
	tmpl := filepath.Join(runs, "run")
	// history.jsonl's last record is covered by the checkpoint (synced
	// before it), so a crash can only tear one appended after it: add
	// such a record, as the next Worker message would be.
	hist := filepath.Join(tmpl, agent.HistoryFile)
	hb, _ := os.ReadFile(hist)
	os.WriteFile(hist, append(hb, `{"role":"assistant","content":"a message after the checkpoint"}`+"\n"...), 0o644)

	var seq atomic.Int64
	// resume copies the template, tears it, resumes it twice and returns
	// the final report and the trace.
	resume := func(tear func(dir string)) (agent.Report, []agent.TraceEntry, error) {
		d := filepath.Join(base, fmt.Sprintf("v%d", seq.Add(1)))
		defer os.RemoveAll(d)
		dir, w := filepath.Join(d, "runs", "run"), filepath.Join(d, "ws")
		if err := errors.Join(copyTree(tmpl, dir), copyTree(ws, w)); err != nil {
			return agent.Report{}, nil, err
		}
		tear(dir)
		opts := []agent.Option{agent.WithWorkspace(w), agent.WithSandbox(&fakeGo{ws: w})}
		got, err := agent.Resume(context.Background(), dir, buggyThenFixed(), nil, opts...)
		if err != nil || got.Reason != agent.StopCompleted {
			return agent.Report{}, nil, fmt.Errorf("resume: %v %+v", err, got)
		}
		again, err := agent.Resume(context.Background(), dir, buggyThenFixed(), nil, opts...)
		if !errors.Is(err, agent.ErrRunFinished) || again == nil {
			return agent.Report{}, nil, fmt.Errorf("second resume: %v", err)
		}
		if g, a := comparable(got), comparable(again); !reflect.DeepEqual(g, a) {
			return agent.Report{}, nil, fmt.Errorf("the second resume's report differs from the first's:\n%+v\n%+v", g, a)
		}
		trace, err := agent.ReadTrace(dir)
		if err != nil {
			return agent.Report{}, nil, fmt.Errorf("read the trace: %v", err)
		}
		return comparable(got), trace, nil
	}
	want, _, err := resume(func(string) {})
	if err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{agent.CallsFile, agent.TraceFile, agent.AuditFile, agent.HistoryFile} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(tmpl, name))
			if err != nil {
				t.Fatal(err)
			}
			start := lastRecordStart(b)
			// The resumes wait on fsync more than they compute: a few at
			// once.
			offsets := make(chan int)
			var wg sync.WaitGroup
			for range 6 {
				wg.Go(func() {
					for off := range offsets {
						got, trace, err := resume(func(dir string) { os.Truncate(filepath.Join(dir, name), int64(off)) })
						if err != nil {
							t.Errorf("torn at byte %d of %d: %v", off, len(b), err)
							continue
						}
						if !reflect.DeepEqual(got, want) {
							t.Errorf("torn at byte %d of %d: report differs\n got %+v\nwant %+v", off, len(b), got, want)
						}
						healed := false
						for _, te := range trace {
							healed = healed || te.Kind == "healed" && strings.HasPrefix(te.Detail, name+":")
						}
						if off > start && !healed {
							t.Errorf("torn at byte %d: no healed trace entry for %s", off, name)
						}
					}
				})
			}
			for off := start; off < len(b) && !t.Failed(); off++ {
				offsets <- off
			}
			close(offsets)
			wg.Wait()
			t.Logf("%s: torn at each of the %d bytes of its last record", name, len(b)-start)
		})
	}
}
