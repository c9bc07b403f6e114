package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/summarizer"
)

// docs/scripts.md documents the script format with one block per role;
// together they are a complete run. This parses every block, joins them,
// runs the script, and checks that it completes through a repair and that
// every documented reply was used, so the document cannot drift from
// the code.
func TestScriptsDocRuns(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "scripts.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	joined := "roles:\n"
	roles := map[string]bool{}
	for i, b := range blocks {
		s, err := llm.ParseScript("docs/scripts.md block "+string(rune('1'+i)), []byte(b[1]))
		if err != nil {
			t.Fatalf("block %d does not parse: %v\n%s", i+1, err, b[1])
		}
		for _, r := range s.Roles() {
			roles[r] = true
		}
		body, ok := strings.CutPrefix(b[1], "roles:\n")
		if !ok {
			t.Fatalf("block %d does not start with roles:", i+1)
		}
		joined += body
	}
	for _, r := range []string{agent.RolePlanner, agent.RoleTestDesigner, agent.RoleWorker, agent.RoleCritic, agent.RoleSummarizer} {
		if !roles[r] {
			t.Errorf("docs/scripts.md has no example for role %s", r)
		}
	}
	script, err := llm.ParseScript("docs/scripts.md", []byte(joined))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	a, err := agent.New(script, nil, e.opts(agent.WithWindow(summarizer.Config{SummaryEvery: 2, KeepRounds: 1}))...)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(context.Background(), "A Python module greet.py: greet(name) returns \"Hello, NAME!\", and \"Hello, world!\" for an empty name.")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Reason != agent.StopCompleted || rep.Metrics.RepairRounds != 1 || len(rep.Analyses) != 1 {
		t.Fatalf("%s (%s), %d repair rounds, analyses %q", rep.Reason, rep.Detail, rep.Metrics.RepairRounds, rep.Analyses)
	}
	if got := readFile(t, filepath.Join(e.ws, "greet.py")); !strings.Contains(got, "def greet(name):\n    if not name:\n        name = \"world\"\n    return") {
		t.Errorf("greet.py after the insert:\n%s", got)
	}
	for _, role := range script.Roles() {
		if _, err := script.Complete(context.Background(), llm.Request{Agent: role}); !errors.Is(err, llm.ErrScriptExhausted) {
			t.Errorf("role %s has replies the run did not use (the document says every reply is used): %v", role, err)
		}
	}
}

// A scripted model with no reply left for a role stops the run as
// out_of_replies, naming the role; it is resumable.
func TestOutOfRepliesStop(t *testing.T) {
	t.Parallel()
	script, err := llm.ParseScript("short.yaml", []byte("roles:\n  planner:\n    - output: "+mustJSON(map[string]any{
		"steps": []map[string]any{{"title": "calc", "description": "d", "files": []string{"calc.go"}, "expected": "e", "acceptance": "a"}},
		"risks": []string{}, "test_command": "go test ./...", "cli": []string{}, "tests_dir": "acceptance",
	})+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	rep := run(t, script, nil, e.opts()...)
	if rep.Reason != agent.StopOutOfReplies || !strings.Contains(rep.Detail, "no reply left for role test_designer") || !rep.Reason.Resumable() {
		t.Fatalf("%s (%s), want out_of_replies naming test_designer", rep.Reason, rep.Detail)
	}
}
