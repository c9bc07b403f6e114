package critic

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/tools"
)

// designCritic is a Critic over a temp workspace without a gate: the test
// designer needs none.
func designCritic(t *testing.T, m llm.Model, opts ...Option) (*Critic, string) {
	t.Helper()
	dir := t.TempDir()
	ws, err := tools.OpenWorkspace(dir, nil, sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return New(m, nil, tools.View{}, ws, opts...), dir
}

// goTest is a Go test file of package pkg with one empty test.
func goTest(pkg, name string) string {
	return "package " + pkg + "\n\nimport \"testing\"\n\nfunc " + name + "(t *testing.T) {}\n"
}

func suiteJSON(t *testing.T, files map[string]string) string {
	t.Helper()
	var r suiteReply
	for p, c := range files {
		r.Files = append(r.Files, suiteFile{Path: p, Content: c})
	}
	slices.SortFunc(r.Files, func(a, b suiteFile) int { return strings.Compare(a.Path, b.Path) })
	r.Notes = "basic, edge and large cases"
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDesignTestsConfinement(t *testing.T) {
	t.Parallel()
	good := map[string]string{"acceptance/greet_test.go": goTest("acceptance", "TestGreet"), "acceptance/data/big_test.go": goTest("data", "TestBig")}
	tests := []struct {
		name     string
		replies  []map[string]string
		raw      []string // used instead of replies when set
		calls    int
		wantErr  string
		feedback string
	}{
		{name: "valid", replies: []map[string]string{good}, calls: 1},
		{name: "outside then valid", replies: []map[string]string{{"greet_test.go": "x"}, good}, calls: 2,
			feedback: "outside the tests folder"},
		{name: "escape then valid", replies: []map[string]string{{"acceptance/../main.go": "x"}, good}, calls: 2,
			feedback: `contains ".."`},
		{name: "absolute then valid", replies: []map[string]string{{"/etc/x_test.go": "x"}, good}, calls: 2,
			feedback: "absolute"},
		{name: "prefix is not inside", replies: []map[string]string{{"acceptance2/x_test.go": "x"}, {"acceptance2/y_test.go": "y"}},
			calls: 2, wantErr: "outside the tests folder"},
		{name: "no files twice", raw: []string{`{"files": [], "notes": ""}`, `{"files": [], "notes": ""}`}, calls: 2,
			wantErr: "no files"},
		{name: "undecodable then valid", raw: []string{`{"files": "x"}`, ""}, calls: 2, wantErr: "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			replies := tt.raw
			for _, r := range tt.replies {
				replies = append(replies, suiteJSON(t, r))
			}
			m := &fakeModel{replies: map[string][]string{AgentTestDesigner: replies}}
			c, dir := designCritic(t, m)
			s, err := c.DesignTests(context.Background(), "greet people", greetPlan())
			if got := m.calls(AgentTestDesigner); got != tt.calls {
				t.Errorf("test designer calls = %d, want %d", got, tt.calls)
			}
			if tt.feedback != "" {
				last := m.reqs[1].Messages[len(m.reqs[1].Messages)-1].Content
				if !strings.Contains(last, tt.feedback) {
					t.Errorf("re-ask lacks %q: %s", tt.feedback, last)
				}
			}
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrInvalidSuite) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("DesignTests() = %v, want ErrInvalidSuite with %q", err, tt.wantErr)
				}
				if entries, _ := os.ReadDir(dir); len(entries) != 0 {
					t.Errorf("workspace written after a failure: %v", entries)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Version != 1 || s.Dir != "acceptance" || len(s.Hash) != 64 ||
				!slices.Equal(s.Files, []string{"acceptance/data/big_test.go", "acceptance/greet_test.go"}) ||
				!slices.Equal(s.Tests, []string{"acceptance/data/big_test.go::TestBig", "acceptance/greet_test.go::TestGreet"}) {
				t.Errorf("suite = %+v", s)
			}
			data, err := os.ReadFile(filepath.Join(dir, "acceptance", "greet_test.go"))
			if err != nil || string(data) != good["acceptance/greet_test.go"] {
				t.Errorf("written test = %q, %v", data, err)
			}
			prompt := m.reqs[0].Messages[1].Content
			for _, want := range []string{"greet people", "go test ./...", "acceptance/", "cmd/greet/main.go"} {
				if !strings.Contains(prompt, want) {
					t.Errorf("designer prompt lacks %q", want)
				}
			}
		})
	}
}

func TestDesignTestsVersions(t *testing.T) {
	t.Parallel()
	v1 := map[string]string{"acceptance/a_test.go": goTest("a", "TestA"), "acceptance/old_test.go": goTest("a // old", "TestOld")}
	v2 := map[string]string{"acceptance/a_test.go": goTest("a // changed", "TestA")}
	m := &fakeModel{replies: map[string][]string{AgentTestDesigner: {
		suiteJSON(t, v1), suiteJSON(t, v1), suiteJSON(t, v2), suiteJSON(t, v2),
	}}}
	c, dir := designCritic(t, m)
	ctx := context.Background()
	plan := greetPlan()
	var got []int
	var hashes []string
	for range 3 {
		s, err := c.DesignTests(ctx, plan.Goal, plan)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, s.Version)
		hashes = append(hashes, s.Hash)
	}
	if !slices.Equal(got, []int{1, 1, 2}) || hashes[0] != hashes[1] || hashes[1] == hashes[2] {
		t.Errorf("versions %v hashes %v, want 1 1 2 with a new hash", got, hashes)
	}
	if _, err := os.Stat(filepath.Join(dir, "acceptance", "old_test.go")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file of the old suite survived: %v", err)
	}
	if c.Suite().Version != 2 {
		t.Errorf("Suite() = %+v", c.Suite())
	}

	// A resumed Critic continues counting from the checkpointed suite, and
	// the repair prompt shows the current tests and the suspects.
	m2 := &fakeModel{replies: map[string][]string{AgentTestDesigner: {suiteJSON(t, v1)}}}
	ws := c.ws
	c2 := New(m2, nil, tools.View{}, ws, WithSuite(c.Suite()))
	s, err := c2.RepairTests(ctx, plan.Goal, plan, Findings{
		Verdict:      VerdictSuspectTest,
		SuspectTests: []SuspectTest{{TestID: "TestA", Reason: "contradicts the goal's example"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != 3 {
		t.Errorf("version after resume and repair = %d, want 3", s.Version)
	}
	prompt := m2.reqs[0].Messages[1].Content
	for _, want := range []string{"package a // changed", "contradicts the goal's example", "TestA"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("repair prompt lacks %q", want)
		}
	}
}

func TestDesignTestsRefusesEscapingSymlink(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	m := &fakeModel{replies: map[string][]string{AgentTestDesigner: {suiteJSON(t, map[string]string{"acceptance/x_test.go": goTest("x", "TestX")})}}}
	c, dir := designCritic(t, m)
	if err := os.Symlink(outside, filepath.Join(dir, "acceptance")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DesignTests(context.Background(), "g", greetPlan()); err == nil {
		t.Fatal("DesignTests wrote through a symlink that leaves the workspace")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("file written outside the workspace: %v", entries)
	}
}
