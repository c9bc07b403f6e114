package configs_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/trioagent/trio/cmd/trio/config"
	"github.com/trioagent/trio/policy"
)

// trio.example.yaml loads, every key holds what its comment says, and the
// policy it names loads too.
func TestTrioExample(t *testing.T) {
	t.Parallel()
	f, err := config.Load("trio.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := f.Endpoint
	if e.BaseURL != "https://api.openai.com/v1" || e.APIKeyEnv != "OPENAI_API_KEY" ||
		e.Timeout.Duration != 2*time.Minute || e.MaxRetries == nil || *e.MaxRetries != 3 || e.StructuredOutputs != "auto" || !e.Stream {
		t.Errorf("endpoint = %+v", e)
	}
	wantModels := config.Models{Default: "gpt-4.1-mini", Planner: "gpt-4.1", Worker: "gpt-4.1-mini",
		Critic: "gpt-4.1", Summarizer: "gpt-4.1-nano", TestDesigner: "gpt-4.1"}
	if f.Models != wantModels {
		t.Errorf("models = %+v, want %+v", f.Models, wantModels)
	}
	if got := f.Models.PerRole(); len(got) != 5 || got["test_designer"] != "gpt-4.1" {
		t.Errorf("PerRole = %v", got)
	}
	if f.Temperature == nil || *f.Temperature != 0.2 || f.MaxTokens != 4096 {
		t.Errorf("temperature %v, max_tokens %d", f.Temperature, f.MaxTokens)
	}
	b := f.Budgets
	if b.MaxSteps != 20 || b.MaxTotalTurns != 150 || b.MaxRepairRounds != 2 || b.MaxTokens != 1_500_000 || b.MaxWallTime.Duration != 45*time.Minute {
		t.Errorf("budgets = %+v", b)
	}
	if want := (config.Window{ContextLimit: 128000, ReplyReserve: 4096, SummaryEvery: 8, KeepRounds: 2}); f.Window != want {
		t.Errorf("window = %+v, want %+v", f.Window, want)
	}
	wantSB := config.Sandbox{Kind: "auto", Containerd: config.Containerd{
		Address: "/run/containerd/containerd.sock", Namespace: "trio", RootFS: "host"}}
	if !reflect.DeepEqual(f.Sandbox, wantSB) {
		t.Errorf("sandbox = %+v, want %+v", f.Sandbox, wantSB)
	}
	if got := f.Resolve(f.Policy); got != "policy.interactive.yaml" {
		t.Errorf("policy resolves to %q", got)
	}
	if _, err := policy.Load(f.Resolve(f.Policy)); err != nil {
		t.Errorf("the policy it names: %v", err)
	}
	if f.RunsDir != "runs" {
		t.Errorf("runs_dir = %q", f.RunsDir)
	}
}

// A copy of the example elsewhere resolves its relative paths next to itself.
func TestTrioExampleResolvesNextToItself(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("trio.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sub", "trio.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := f.Resolve(f.RunsDir), filepath.Join(filepath.Dir(path), "runs"); got != want {
		t.Errorf("runs_dir resolves to %q, want %q", got, want)
	}
}
