package agent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox/userns"
)

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opt  agent.Option
		want string
	}{
		{"run id with a slash", agent.WithRunID("a/b"), "not a valid folder name"},
		{"unknown role tools", agent.WithRoleTools("boss", "read_file"), "unknown role"},
		{"unknown prompt role", agent.WithPrompt("boss", "hi"), "unknown role"},
		{"empty prompt", agent.WithPrompt(agent.RoleWorker, ""), "empty prompt"},
		{"bad repair template", agent.WithPrompt("worker_repair", "{{.Findings"), "worker_repair"},
		{"negative budget", agent.WithBudgets(agent.Budgets{MaxTokens: -1}), "negative budget"},
		{"nil observer", agent.WithObserver(nil), "nil function"},
		{"nil policy", agent.WithPolicy(nil), "nil policy"},
		{"empty workspace", agent.WithWorkspace(""), "empty directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := agent.New(newFake(), nil, tt.opt)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, want an error with %q", err, tt.want)
			}
		})
	}
	if _, err := agent.New(nil, nil); err == nil {
		t.Error("New(nil model) did not fail")
	}
}

// A role's tool subset is what its model is offered.
func TestRoleTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
		add(agent.RoleWorker,
			calls("", call{"run_command", map[string]string{"command": "go version"}}),
			calls("", write("go.mod", goMod), write("calc.go", calcGood), finish("done")))
	rep := run(t, m, nil, e.opts(agent.WithRoleTools(agent.RoleWorker, "write_file", "read_file"))...)
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("reason %s (%s)", rep.Reason, rep.Detail)
	}
	var offered []string
	for _, req := range m.requests {
		if req.Agent == agent.RoleWorker {
			for _, d := range req.Tools {
				offered = append(offered, d.Name)
			}
			break
		}
	}
	if strings.Join(offered, ",") != "finish_step,read_file,write_file" {
		t.Errorf("worker offered %v, want finish_step, read_file, write_file", offered)
	}
	if rep.Metrics.ToolFailures != 1 {
		t.Errorf("tool failures %d, want 1 (run_command is not the Worker's)", rep.Metrics.ToolFailures)
	}
}

// A runs folder inside the workspace: the local kind, which cannot hide
// it from commands, refuses it before anything runs and leaves no run
// folder; an isolating kind runs, the run folder denied to the file tools
// (reading the checkpoint and writing into the folder are refused) and
// never taken for stray files by the Critic.
func TestRunsInsideWorkspace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.runs = filepath.Join(e.ws, "runs")
	m := newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
		add(agent.RoleWorker, calls("", write("go.mod", goMod), write("calc.go", calcGood), finish("done")))
	a, err := agent.New(m, nil, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(context.Background(), "Build package calc with Add(a, b int) int.")
	if !errors.Is(err, agent.ErrInvalidOption) || rep != nil || !strings.Contains(err.Error(), "inside the workspace") {
		t.Fatalf("local with the runs folder in the workspace: report %v, error %v; want ErrInvalidOption", rep, err)
	}
	if entries, _ := os.ReadDir(e.runs); len(entries) != 0 {
		t.Errorf("the refused run left %v", entries)
	}

	if err := userns.Available(context.Background(), ""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the userns sandbox is unavailable: %v", err)
		}
		t.Skipf("userns sandbox unavailable: %v", err)
	}
	var denied []string
	m = newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
		add(agent.RoleWorker, calls("", call{"read_file", map[string]string{"path": "runs/run/state.json"}},
			write("runs/run/state.json", "{}"), write("go.mod", goMod), write("calc.go", calcGood), finish("done")))
	userOpt := agent.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxUserns})
	rep = run(t, m, nil, e.opts(userOpt, agent.WithObserver(func(ev agent.Event) {
		if ev.Kind == agent.EventToolCall && ev.Decision == "deny" {
			denied = append(denied, ev.Tool+" "+ev.Message)
		}
	}))...)
	if rep.Reason != agent.StopCompleted || !rep.Metrics.FirstPass {
		t.Fatalf("reason %s (%s), first pass %v", rep.Reason, rep.Detail, rep.Metrics.FirstPass)
	}
	if len(denied) != 2 || !strings.Contains(strings.Join(denied, "\n"), "Trio's run folder") {
		t.Errorf("denied calls %q, want the read and the write of the run folder, naming it", denied)
	}
}

// yesOnce answers every question yes and counts them.
type yesOnce struct{ asked int }

func (c *yesOnce) Confirm(_ context.Context, req policy.ConfirmRequest) (policy.Answer, error) {
	c.asked++
	return policy.AnswerYes, nil
}

// An "ask" goes to the embedder's Confirmer and is counted.
func TestConfirmer(t *testing.T) {
	t.Parallel()
	p, err := policy.Parse("test.yaml", []byte(`version: 1
mode: interactive
commands:
  allow: ["go test *"]
  ask: ["go version"]
`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	cf := &yesOnce{}
	m := newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
		add(agent.RoleWorker,
			calls("", call{"run_command", map[string]string{"command": "go version"}}),
			calls("", write("go.mod", goMod), write("calc.go", calcGood), finish("done")))
	rep := run(t, m, nil, e.opts(agent.WithPolicy(p), agent.WithConfirmer(cf))...)
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("reason %s (%s)", rep.Reason, rep.Detail)
	}
	if cf.asked != 1 || rep.Metrics.Confirmations != 1 || rep.Metrics.Denials != 0 {
		t.Errorf("asked %d, confirmations %d, denials %d; want 1, 1, 0", cf.asked, rep.Metrics.Confirmations, rep.Metrics.Denials)
	}
}

// A policy that names a workspace is where a run builds, unless
// WithWorkspace names another folder.
func TestPolicyWorkspace(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		withWorkspace bool
	}{
		{"policy's workspace", false},
		{"WithWorkspace wins", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			polWS := filepath.Join(filepath.Dir(e.ws), "from-policy")
			p, err := policy.Parse("test.yaml", fmt.Appendf(nil, "version: 1\nworkspace: %s\ncommands:\n  allow: [\"go test *\"]\n", polWS))
			if err != nil {
				t.Fatal(err)
			}
			opts := []agent.Option{agent.WithRunsDir(e.runs), agent.WithRunID("run"), local, agent.WithPolicy(p)}
			want := polWS
			if tt.withWorkspace {
				opts, want = append(opts, agent.WithWorkspace(e.ws)), e.ws
			}
			m := newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
				add(agent.RoleWorker, calls("", write("go.mod", goMod), write("calc.go", calcGood), finish("done")))
			rep := run(t, m, nil, opts...)
			if rep.Reason != agent.StopCompleted {
				t.Fatalf("reason %s (%s)", rep.Reason, rep.Detail)
			}
			if rep.Workspace != want {
				t.Errorf("workspace %s, want %s", rep.Workspace, want)
			}
			if got := readFile(t, filepath.Join(want, "calc.go")); got != calcGood {
				t.Errorf("calc.go in %s = %q", want, got)
			}
		})
	}
}

// answers replies with the given answers in turn.
type answers struct{ next []policy.Answer }

func (c *answers) Confirm(_ context.Context, req policy.ConfirmRequest) (policy.Answer, error) {
	a := c.next[0]
	c.next = c.next[1:]
	return a, nil
}

// A prompt answered "n" is counted as refused, not as approved.
func TestConfirmationsApprovedAndRefused(t *testing.T) {
	t.Parallel()
	p, err := policy.Parse("test.yaml", []byte("version: 1\nmode: interactive\ncommands:\n  allow: [\"go test *\"]\n  ask: [\"go version\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	cf := &answers{next: []policy.Answer{policy.AnswerYes, policy.AnswerNo}}
	m := newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
		add(agent.RoleWorker,
			calls("", call{"run_command", map[string]string{"command": "go version"}}),
			calls("", call{"run_command", map[string]string{"command": "go version"}}),
			calls("", write("go.mod", goMod), write("calc.go", calcGood), finish("done")))
	rep := run(t, m, nil, e.opts(agent.WithPolicy(p), agent.WithConfirmer(cf))...)
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("reason %s (%s)", rep.Reason, rep.Detail)
	}
	if mt := rep.Metrics; mt.Confirmations != 2 || mt.Approved != 1 || mt.Refused != 1 || mt.Denials != 1 {
		t.Errorf("confirmations %d, approved %d, refused %d, denials %d; want 2, 1, 1, 1", mt.Confirmations, mt.Approved, mt.Refused, mt.Denials)
	}
	if md := readFile(t, filepath.Join(e.runs, "run", agent.ReportMD)); !strings.Contains(md, "| confirmations asked (approved / refused) | 2 (1 / 1) |") {
		t.Errorf("report.md:\n%s", md)
	}
}
