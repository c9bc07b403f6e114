package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/containerd"
	"github.com/trioagent/trio/sandbox/landlock"
	"github.com/trioagent/trio/sandbox/userns"
	"github.com/trioagent/trio/tools"
)

// folderOpts are a test's folders without a sandbox choice.
func (e env) folderOpts(extra ...agent.Option) []agent.Option {
	return append([]agent.Option{agent.WithWorkspace(e.ws), agent.WithRunsDir(e.runs), agent.WithRunID("run")}, extra...)
}

func TestSandboxOptionsRejected(t *testing.T) {
	t.Parallel()
	sb, err := sandbox.NewLocal(t.TempDir(), sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	tests := []struct {
		name string
		opts []agent.Option
		want string
	}{
		{"unknown kind", []agent.Option{agent.WithSandboxConfig(agent.SandboxConfig{Kind: "docker"})}, `kind "docker"`},
		{"both a sandbox and a description", []agent.Option{agent.WithSandbox(sb), agent.WithSandboxConfig(agent.SandboxConfig{})}, "choose one"},
		{"empty metadata key", []agent.Option{agent.WithMetadata(map[string]string{"": "x"})}, "empty key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := agent.New(newFake(), nil, tt.opts...)
			if !errors.Is(err, agent.ErrInvalidOption) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, want ErrInvalidOption with %q", err, tt.want)
			}
		})
	}
}

// containerd asked for and unreachable fails before anything is made, with
// the sandbox's guidance; auto, with the userns sandbox unavailable too,
// falls back to local only when a person confirms it, and warns.
func TestSandboxUnreachable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sock := filepath.Join(t.TempDir(), "no.sock")
	cd := containerd.Config{Address: sock}
	a, err := agent.New(newFake(), nil, e.folderOpts(agent.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxContainerd, Containerd: cd}))...)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(context.Background(), "anything")
	if rep != nil || !errors.Is(err, containerd.ErrUnavailable) || !strings.Contains(err.Error(), sock) || !strings.Contains(err.Error(), "the local sandbox kind") || strings.Contains(err.Error(), "--sandbox") ||
		!strings.HasPrefix(err.Error(), "agent: check containerd sandbox: containerd unavailable at ") {
		t.Fatalf("Run: %v, %v; want ErrUnavailable naming %s and the local fallback, without a stuttering prefix", rep, err, sock)
	}
	if _, err := os.Stat(e.runs); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the runs folder was made: %v", err)
	}

	var warnings []string
	m := newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
		add(agent.RoleWorker, calls("", write("go.mod", goMod), write("calc.go", calcGood), finish("done")))
	yes := &yesOnce{}
	// landlock left out of auto: as on a kernel without it.
	noUserns := agent.SandboxConfig{Containerd: cd, Userns: userns.Config{Bwrap: "/nonexistent/bwrap"}, Auto: []string{agent.SandboxContainerd, agent.SandboxUserns}}
	rep = run(t, m, nil, e.folderOpts(agent.WithSandboxConfig(noUserns), agent.WithConfirmer(yes), agent.WithObserver(func(ev agent.Event) {
		if ev.Kind == agent.EventWarning {
			warnings = append(warnings, ev.Message)
		}
	}))...)
	if rep.Reason != agent.StopCompleted || !strings.HasPrefix(rep.Sandbox, "local (not isolated); enforced: ") || yes.asked == 0 {
		t.Fatalf("auto: %s (%s), sandbox %q, asked %d", rep.Reason, rep.Detail, rep.Sandbox, yes.asked)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "LOCAL sandbox, which does NOT isolate") || !strings.Contains(warnings[0], sock) {
		t.Errorf("warnings %q, want one saying containerd at %s is unreachable and local does not isolate", warnings, sock)
	}
}

// noAnswer says no to every question.
type noAnswer struct{}

func (noAnswer) Confirm(context.Context, policy.ConfirmRequest) (policy.Answer, error) {
	return policy.AnswerNo, nil
}

// Without containerd and without the userns sandbox, auto never runs
// commands without isolation unasked: an unattended policy, no Confirmer,
// or a person's no each refuse the run before anything is made, naming
// the three ways forward.
func TestSandboxNoIsolation(t *testing.T) {
	t.Parallel()
	unattended, err := policy.Load("../configs/policy.unattended.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc := agent.WithSandboxConfig(agent.SandboxConfig{Containerd: containerd.Config{Address: filepath.Join(t.TempDir(), "no.sock")},
		Userns: userns.Config{Bwrap: "/nonexistent/bwrap"}, Auto: []string{agent.SandboxContainerd, agent.SandboxUserns}})
	tests := []struct {
		name string
		opts []agent.Option
	}{
		{"unattended policy", []agent.Option{agent.WithPolicy(unattended), agent.WithConfirmer(&yesOnce{})}},
		{"nobody to ask", nil},
		{"the person said no", []agent.Option{agent.WithConfirmer(noAnswer{})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			a, err := agent.New(newFake(), nil, e.folderOpts(append(tt.opts, sc)...)...)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := a.Run(context.Background(), "anything")
			if rep != nil || !errors.Is(err, agent.ErrNoIsolation) || !errors.Is(err, userns.ErrUnavailable) || !errors.Is(err, containerd.ErrUnavailable) {
				t.Fatalf("Run: %v, %v; want ErrNoIsolation", rep, err)
			}
			for _, way := range []string{"start containerd", "enable unprivileged user namespaces", "SandboxConfig{Kind: SandboxLocal}"} {
				if !strings.Contains(err.Error(), way) {
					t.Errorf("the error does not say %q: %v", way, err)
				}
			}
			if _, err := os.Stat(e.runs); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the runs folder was made: %v", err)
			}
		})
	}
}

// With user namespaces available, the userns kind (and auto, when
// containerd is unreachable) runs the whole loop isolated: the Critic's
// go test passes in it, and the report says which limits held.
func TestSandboxUserns(t *testing.T) {
	t.Parallel()
	if err := userns.Available(context.Background(), ""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the userns sandbox is unavailable: %v", err)
		}
		t.Skipf("userns sandbox unavailable: %v", err)
	}
	e := newEnv(t)
	m := newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
		add(agent.RoleWorker, calls("", write("go.mod", goMod), write("calc.go", calcGood), finish("done")))
	sc := agent.SandboxConfig{Containerd: containerd.Config{Address: filepath.Join(t.TempDir(), "no.sock")}}
	rep := run(t, m, nil, e.folderOpts(agent.WithSandboxConfig(sc))...)
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("auto without containerd: %s (%s)", rep.Reason, rep.Detail)
	}
	for _, want := range []string{"userns; enforced: ", "pids 256 (RLIMIT_NPROC", "network: loopback only"} {
		if !strings.Contains(rep.Sandbox, want) {
			t.Errorf("report sandbox %q does not say %q", rep.Sandbox, want)
		}
	}
}

// With containerd reachable, auto and containerd run commands in a
// container that lives as long as the session: it is closed when the run
// stops and opened again by Resume.
func TestSandboxContainerd(t *testing.T) {
	t.Parallel()
	if err := containerd.Available(context.Background(), ""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and containerd is unreachable: %v", err)
		}
		t.Skipf("containerd unreachable (set %s; CI=true makes this a failure): %v", containerd.AddressEnv, err)
	}
	for _, kind := range []string{agent.SandboxAuto, agent.SandboxContainerd} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			// Container names are per run id: one id per subtest.
			id := "sandbox-test-" + kind
			state := filepath.Join(t.TempDir(), "sandbox-state")
			sc := agent.WithSandboxConfig(agent.SandboxConfig{Kind: kind, Containerd: containerd.Config{StateDir: state}})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			open := 0
			watch := agent.WithObserver(func(ev agent.Event) {
				if ev.Kind == agent.EventToolCall {
					if _, err := os.Stat(filepath.Join(state, id)); err == nil {
						open++
					}
					if ev.Tool == tools.WriteFileName {
						cancel() // after the first write: interrupted
					}
				}
			})
			a, err := agent.New(buggyThenFixed(), nil, e.folderOpts(sc, watch, agent.WithRunID(id))...)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := a.Run(ctx, "Build package calc with Add(a, b int) int.")
			if err != nil {
				t.Fatal(err)
			}
			if rep.Reason != agent.StopInterrupted || !strings.HasPrefix(rep.Sandbox, "containerd; enforced: ") {
				t.Fatalf("first session: %s (%s), sandbox %q", rep.Reason, rep.Detail, rep.Sandbox)
			}
			if _, err := os.Stat(filepath.Join(state, id)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the container's state is still there after the run stopped: %v", err)
			}
			rep, err = agent.Resume(context.Background(), filepath.Join(e.runs, id), buggyThenFixed(), nil, sc, watch)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Reason != agent.StopCompleted || !strings.HasPrefix(rep.Sandbox, "containerd; enforced: ") || rep.Metrics.Sessions != 2 {
				t.Fatalf("resumed: %s (%s), sandbox %q, sessions %d", rep.Reason, rep.Detail, rep.Sandbox, rep.Metrics.Sessions)
			}
			if open == 0 {
				t.Error("no tool call saw the container's state folder")
			}
			if _, err := os.Stat(filepath.Join(state, id)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the container's state is still there after the resumed run: %v", err)
			}
			if got := readFile(t, filepath.Join(e.ws, "calc.go")); got != calcGood {
				t.Errorf("calc.go = %q", got)
			}
		})
	}
}

// Metadata is stored with the run, returned by Inspect, and merged on
// Resume; Inspect changes nothing in the run folder.
func TestMetadataAndInspect(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	md := map[string]string{"model": "script", "policy": "/etc/trio/policy.yaml"}
	a, err := agent.New(buggyThenFixed(), nil, e.opts(agent.WithMetadata(md), agent.WithObserver(func(ev agent.Event) {
		if ev.Kind == agent.EventToolCall {
			cancel()
		}
	}))...)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := a.Run(ctx, "Build package calc."); err != nil || rep.Reason != agent.StopInterrupted {
		t.Fatalf("first session: %v %+v", err, rep)
	}
	dir := filepath.Join(e.runs, "run")
	// A line past the checkpoint (a run still going) is left alone.
	hist := filepath.Join(dir, agent.HistoryFile)
	f, err := os.OpenFile(hist, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"role":"assistant","content":"written after the checkpoint"}` + "\n")
	f.Close()
	before := readFile(t, hist)

	ins, err := agent.Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ins.Status != "interrupted" || ins.Reason != agent.StopInterrupted || ins.Phase != "build" || ins.Workspace != e.ws ||
		ins.Plan == nil || ins.Metrics.Roles[agent.RolePlanner].Calls != 1 || !strings.HasPrefix(ins.Sandbox, "local (not isolated); enforced: ") || ins.Updated.IsZero() {
		t.Errorf("Inspect: %+v", ins)
	}
	if ins.Metadata["model"] != "script" || ins.Metadata["policy"] != md["policy"] {
		t.Errorf("metadata %v, want %v", ins.Metadata, md)
	}
	if readFile(t, hist) != before {
		t.Error("Inspect changed history.jsonl")
	}
	if _, err := agent.Inspect(t.TempDir()); !errors.Is(err, agent.ErrNoRun) {
		t.Errorf("Inspect of an empty folder: %v, want ErrNoRun", err)
	}

	rep, err := agent.Resume(context.Background(), dir, buggyThenFixed(), nil,
		agent.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxLocal}), agent.WithMetadata(map[string]string{"policy": "other.yaml"}))
	if err != nil || rep.Reason != agent.StopCompleted {
		t.Fatalf("resume: %v %+v", err, rep)
	}
	if rep.Metadata["model"] != "script" || rep.Metadata["policy"] != "other.yaml" || rep.Phase != "done" {
		t.Errorf("after resume: metadata %v phase %q", rep.Metadata, rep.Phase)
	}
}

// DefaultRoleTools is what each role is offered, and the Worker's list
// names every built-in (delete_file included) and finish_step.
func TestDefaultRoleTools(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sb, err := sandbox.NewLocal(dir, sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	ws, err := tools.OpenWorkspace(dir, sb, sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var builtins []string
	for _, tl := range tools.Builtins(ws) {
		builtins = append(builtins, tl.Name())
	}
	builtins = append(builtins, agent.FinishStep().Name())
	slices.Sort(builtins)
	tests := []struct {
		role string
		want []string
	}{
		{agent.RoleWorker, builtins},
		{agent.RolePlanner, []string{"list_files", "read_file", "search_files"}},
		{agent.RoleCritic, []string{"list_files", "read_file", "run_command", "run_linter", "run_tests"}},
		{agent.RoleSummarizer, nil},
	}
	for _, tt := range tests {
		if got := agent.DefaultRoleTools(tt.role); !slices.Equal(got, tt.want) {
			t.Errorf("DefaultRoleTools(%s) = %v, want %v", tt.role, got, tt.want)
		}
	}
	if !slices.Contains(agent.DefaultRoleTools(agent.RoleWorker), tools.DeleteFileName) {
		t.Error("the Worker's defaults lack delete_file")
	}
	// A run offers the Worker exactly its defaults when the registry is empty.
	e := newEnv(t)
	m := newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
		add(agent.RoleWorker, calls("", write("go.mod", goMod), write("calc.go", calcGood), finish("done")))
	run(t, m, nil, e.opts(agent.WithPolicy(policy.Default()))...)
	var offered []string
	for _, d := range m.requestsOf(agent.RoleWorker)[0].Tools {
		offered = append(offered, d.Name)
	}
	if !slices.Equal(offered, builtins) {
		t.Errorf("the Worker was offered %v, want %v", offered, builtins)
	}
}

// A limit the policy sets that the chosen kind does not enforce (cpus, in
// a kind without a cgroup) is said once, in one warning, and the report's
// line lists it as not enforced.
func TestSandboxLimitNotEnforcedWarnsOnce(t *testing.T) {
	t.Parallel()
	if err := landlock.Available(context.Background()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the landlock sandbox is unavailable: %v", err)
		}
		t.Skipf("landlock sandbox unavailable: %v", err)
	}
	b, err := os.ReadFile("../configs/policy.interactive.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(b), "\n  pids: 256\n", "\n  pids: 256\n  cpus: 1.5\n", 1)
	if src == string(b) {
		t.Fatal("the interactive policy no longer sets pids: 256; adjust the test")
	}
	pol, err := policy.Parse("policy.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	m := newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
		add(agent.RoleWorker, calls("", write("go.mod", goMod), write("calc.go", calcGood), finish("done")))
	var warnings []string
	rep := run(t, m, nil, e.folderOpts(agent.WithPolicy(pol), agent.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxLandlock}),
		agent.WithObserver(func(ev agent.Event) {
			if ev.Kind == agent.EventWarning {
				warnings = append(warnings, ev.Message)
			}
		}))...)
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("landlock: %s (%s)", rep.Reason, rep.Detail)
	}
	var about []string
	for _, w := range warnings {
		if strings.Contains(w, "cpus: ") {
			about = append(about, w)
		}
	}
	if len(about) != 1 || !strings.Contains(about[0], "landlock") {
		t.Errorf("warnings about cpus %q (all: %q); want one naming the landlock kind", about, warnings)
	}
	if _, not, _ := strings.Cut(rep.Sandbox, "; not enforced: "); !strings.Contains(not, "cpus: ") || !strings.Contains(rep.Sandbox, "enforced: timeout ") {
		t.Errorf("report sandbox %q: want cpus listed as not enforced", rep.Sandbox)
	}
}
