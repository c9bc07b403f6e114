package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/llm/llmtest"
)

// reasoningModels names each role's model for the scripted server: the
// server replays the role its model stands for. Every one is an OpenAI
// reasoning model, the Worker's gpt-5-mini.
var reasoningModels = map[string]string{
	"o3": "planner", "gpt-5-mini": "worker", "o4-mini": "critic", "gpt-5-nano": "summarizer", "gpt-5.1": "test_designer",
	"gpt-5.1-2025-11-13": "test_designer",
}

// reasoningConfig writes a trio.yaml whose endpoint is a fake OpenAI
// server replaying filesScript, with every role on a reasoning model, a
// reply cap, reasoning efforts, and extra lines appended.
func reasoningConfig(t *testing.T, dir, extra string) (*llmtest.Server, []string) {
	t.Helper()
	script, err := llm.ParseScript("script", []byte(filesScript))
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(t, llmtest.WithModel(script, func(model string) string { return reasoningModels[model] }))
	y := fmt.Sprintf(`endpoint:
  base_url: %s
  api_key_env: TRIO_TEST_KEY
  max_retries: 0
models:
  default: gpt-5-mini
  planner: o3
  critic: o4-mini
  summarizer: gpt-5-nano
  test_designer: gpt-5.1
max_tokens: 2048
reasoning:
  default: low
  worker: high
%s`, srv.URL(), extra)
	if err := os.WriteFile(filepath.Join(dir, "trio.yaml"), []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return srv, cleanEnv("TRIO_TEST_KEY=test-key-0123456789")
}

// A scripted run with model gpt-5-mini (and the other roles on o3, o4-mini,
// gpt-5-nano, gpt-5.1) completes: the reply cap goes as
// max_completion_tokens, which the fake server, like OpenAI, requires of
// reasoning models, and each role sends its reasoning_effort (trio.yaml's,
// --reasoning's over it).
func TestReasoningModelRunCompletes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, env := reasoningConfig(t, dir, "")
	r := trio(t, dir, env, "run", "--config", "trio.yaml", "--goal", "Write the files.", "--sandbox", "local",
		"--runs-dir", "runs", "--workspace", "ws", "--reasoning", "planner=medium")
	if r.code != exitOK {
		t.Fatalf("exit %d, want 0:\n%s", r.code, r.stderr)
	}
	want := map[string]string{"planner": "medium", "worker": "high", "critic": "low", "summarizer": "low", "test_designer": "low"}
	seen := map[string]bool{}
	for i, q := range srv.Requests() {
		role := reasoningModels[q.Model]
		seen[role] = true
		if q.TokenParameter != llm.TokenParamMaxCompletionTokens || *q.MaxTokens != 2048 {
			t.Errorf("request %d (%s): cap sent as %s=%v, want max_completion_tokens=2048", i, q.Model, q.TokenParameter, q.MaxTokens)
		}
		if q.ReasoningEffort != want[role] {
			t.Errorf("request %d (%s, %s): reasoning_effort %q, want %q", i, q.Model, role, q.ReasoningEffort, want[role])
		}
	}
	if !seen["worker"] || !seen["planner"] {
		t.Errorf("roles asked: %v, want the planner and the worker at least", seen)
	}
}

// The fake server refuses max_tokens for gpt-5-mini as OpenAI does: with
// token_parameter forcing max_tokens (what Trio sent for every model
// before), the run stops on the first Worker request naming the refusal.
// A bad value in trio.yaml or --reasoning stops before any request (exit 3).
func TestReasoningModelRefusesMaxTokens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, env := reasoningConfig(t, dir, "token_parameter:\n  gpt-5-mini: max_tokens\n")
	r := trio(t, dir, env, "run", "--config", "trio.yaml", "--goal", "Write the files.", "--sandbox", "local", "--runs-dir", "runs", "--workspace", "ws")
	refusal := "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
	if r.code != exitFailed || !strings.Contains(r.stderr, refusal) {
		t.Fatalf("exit %d, want 1 naming the refusal:\n%s", r.code, r.stderr)
	}
	reqs := srv.Requests()
	if last := reqs[len(reqs)-1]; last.Model != "gpt-5-mini" || last.TokenParameter != llm.TokenParamMaxTokens {
		t.Errorf("last request %s with %s, want gpt-5-mini with max_tokens", last.Model, last.TokenParameter)
	}

	for _, tt := range []struct {
		extra string
		args  []string
		want  string
	}{
		{"token_parameter:\n  gpt-5.1: max_completion\n", nil, `trio.yaml:16: token_parameter.gpt-5.1: want max_tokens or max_completion_tokens, got "max_completion"`},
		{"", []string{"--reasoning", "worker=extreme"}, `--reasoning worker=extreme: "extreme": want one of none, minimal`},
		{"", []string{"--reasoning", "coder=high"}, `--reasoning coder=high: want LEVEL or ROLE=LEVEL`},
	} {
		dir := t.TempDir()
		srv, env := reasoningConfig(t, dir, tt.extra)
		r := trio(t, dir, env, append([]string{"run", "--config", "trio.yaml", "--goal", "x", "--sandbox", "local", "--runs-dir", "runs", "--workspace", "ws"}, tt.args...)...)
		if r.code != exitConfig || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%q %v: exit %d, want 3 with %q:\n%s", tt.extra, tt.args, r.code, tt.want, r.stderr)
		}
		if n := len(srv.Requests()); n != 0 {
			t.Errorf("%q %v: %d model requests, want 0", tt.extra, tt.args, n)
		}
	}
}

// The Worker on an Anthropic endpoint with reasoning high thinks with a
// 16384-token budget (sent inside max_tokens, beside the 2048 reply cap),
// and the run completes: its tool turns carry their thinking blocks back,
// which the fake server, like the API, requires. The other roles stay on
// OpenAI's reasoning_effort.
func TestAnthropicThinkingRunCompletes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, env := reasoningConfig(t, dir, "")
	extra := fmt.Sprintf("endpoints:\n  worker:\n    kind: anthropic\n    base_url: %s\n    api_key_env: TRIO_TEST_KEY\n    max_retries: 0\n", srv.AnthropicURL())
	f, err := os.OpenFile(filepath.Join(dir, "trio.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(extra)
	f.Close()
	r := trio(t, dir, env, "run", "--config", "trio.yaml", "--goal", "Write the files.", "--sandbox", "local", "--runs-dir", "runs", "--workspace", "ws")
	if r.code != exitOK {
		t.Fatalf("exit %d, want 0:\n%s", r.code, r.stderr)
	}
	worker := 0
	for i, q := range srv.Requests() {
		if q.Model != "gpt-5-mini" {
			if q.ThinkingBudget != 0 {
				t.Errorf("request %d (%s): thinking budget %d", i, q.Model, q.ThinkingBudget)
			}
			continue
		}
		worker++
		if q.ThinkingBudget != llm.ThinkingBudgetOf("high") || *q.MaxTokens != 2048+llm.ThinkingBudgetOf("high") {
			t.Errorf("worker request %d: thinking %d, max_tokens %d; want %d and 2048 more", i, q.ThinkingBudget, *q.MaxTokens, llm.ThinkingBudgetOf("high"))
		}
	}
	if worker < 2 {
		t.Errorf("%d worker requests, want a tool turn at least", worker)
	}
}

// A resumed run keeps the models it was started with: run's --model
// values are recorded in the checkpoint and applied again over trio.yaml,
// and resume's own --model goes over them (and is kept for a later
// resume). Before, a resume fell back to trio.yaml's models: the test
// designer below would have asked gpt-5.1.
func TestResumeKeepsRunModels(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, env := reasoningConfig(t, dir, "")
	// The Planner's model is one the server does not serve: the run stops
	// with a model error, which is resumable.
	r := trio(t, dir, env, "run", "--config", "trio.yaml", "--goal", "Write the files.", "--sandbox", "local",
		"--runs-dir", "runs", "--workspace", "ws", "--model", "planner=o3-typo", "--model", "test_designer=gpt-5.1-2025-11-13")
	if r.code == exitOK {
		t.Fatalf("run with an unknown Planner model: exit 0, want a model error:\n%s", r.stderr)
	}
	first := len(srv.Requests())
	ids, err := os.ReadDir(filepath.Join(dir, "runs"))
	if err != nil || len(ids) != 1 {
		t.Fatalf("runs: %v %v", ids, err)
	}
	run := filepath.Join("runs", ids[0].Name())

	bad := trio(t, dir, env, "resume", "--model", "gpt-5-mini", "--reasoning", "worker=extreme", run)
	if bad.code != exitConfig || !strings.Contains(bad.stderr, "--reasoning worker=extreme") {
		t.Errorf("resume with a bad --reasoning: exit %d, want 3 naming it:\n%s", bad.code, bad.stderr)
	}
	if n := len(srv.Requests()); n != first {
		t.Errorf("a refused resume sent %d requests", n-first)
	}

	r = trio(t, dir, env, "resume", "--model", "planner=o3", run)
	if r.code != exitOK {
		t.Fatalf("resume: exit %d, want 0:\n%s", r.code, r.stderr)
	}
	asked := map[string]bool{}
	for _, q := range srv.Requests()[first:] {
		asked[q.Model] = true
	}
	if !asked["o3"] || !asked["gpt-5.1-2025-11-13"] || !asked["gpt-5-mini"] || asked["gpt-5.1"] || asked["o3-typo"] {
		t.Errorf("models asked after resume: %v, want the Planner on o3 (resume's --model), the test designer on gpt-5.1-2025-11-13 (run's) and the Worker on gpt-5-mini (trio.yaml's), never gpt-5.1", asked)
	}
	in := trio(t, dir, env, "inspect", run)
	if !strings.Contains(in.stdout, `"test_designer=gpt-5.1-2025-11-13","planner=o3"]`) {
		t.Errorf("inspect does not show the models kept for a later resume:\n%s", in.stdout)
	}
}
