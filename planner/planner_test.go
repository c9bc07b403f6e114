package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/trioagent/trio/llm"
)

// fakeModel replays replies in order and records requests.
type fakeModel struct {
	mu      sync.Mutex
	replies []string
	errs    []error
	reqs    []llm.Request
}

func (m *fakeModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := len(m.reqs)
	m.reqs = append(m.reqs, req)
	if i < len(m.errs) && m.errs[i] != nil {
		return llm.Response{}, m.errs[i]
	}
	if i >= len(m.replies) {
		return llm.Response{}, fmt.Errorf("fake model: no reply %d", i+1)
	}
	return llm.Response{
		Message: llm.Message{Role: llm.RoleAssistant, Content: m.replies[i]},
		Usage:   llm.Usage{PromptTokens: 100, CompletionTokens: 10},
	}, nil
}

const goodReply = `{
  "steps": [
    {"title": "module", "description": "go mod init example.com/hello", "files": ["go.mod"], "expected": "go.mod", "acceptance": "go build ./..."},
    {"title": "main", "description": "write main.go printing hello", "files": ["./main.go", "main_test.go"], "expected": "prints hello", "acceptance": "go test ./..."}
  ],
  "risks": ["none"],
  "test_command": "go test ./...",
  "cli": ["go", "run", "."],
  "tests_dir": ""
}`

const badReply = `{
  "steps": [
    {"title": "main", "description": "", "files": ["/abs/main.go"], "expected": "x", "acceptance": "y"}
  ],
  "risks": [],
  "test_command": "",
  "cli": [],
  "tests_dir": ""
}`

func TestPlanner(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		replies  []string
		calls    int
		wantErr  []string // substrings of the error; nil means success
		feedback []string // substrings of the re-ask message
	}{
		{name: "first reply valid", replies: []string{goodReply}, calls: 1},
		{name: "invalid then valid", replies: []string{badReply, goodReply}, calls: 2,
			feedback: []string{"steps[0].description", "steps[0].files[0]", "test_command"}},
		{name: "fenced reply", replies: []string{"```json\n" + goodReply + "\n```"}, calls: 1},
		{name: "undecodable then valid", replies: []string{`{"steps": 3}`, goodReply}, calls: 2,
			feedback: []string{"does not match the schema"}},
		{name: "missing field then valid", replies: []string{`{"steps": [], "risks": [], "test_command": "go test ./..."}`, goodReply}, calls: 2,
			feedback: []string{"cli"}},
		{name: "empty then valid", replies: []string{"", goodReply}, calls: 2, feedback: []string{"empty"}},
		{name: "invalid twice", replies: []string{badReply, badReply, goodReply}, calls: 2,
			wantErr: []string{"invalid twice", "steps[0].description", "test_command"}},
		{name: "undecodable twice", replies: []string{"not json", "still not json"}, calls: 2,
			wantErr: []string{"invalid twice", "does not match the schema"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := &fakeModel{replies: tt.replies}
			var observed int
			p := New(m, WithMaxTokens(123), WithObserver(func(req llm.Request, resp llm.Response, err error) {
				observed++
				if req.Agent != "planner" || resp.Usage.PromptTokens != 100 || err != nil {
					t.Errorf("observer got agent %q usage %+v err %v", req.Agent, resp.Usage, err)
				}
			}))
			plan, err := p.Plan(context.Background(), "say hello", "README.md\n")
			if len(m.reqs) != tt.calls || observed != tt.calls {
				t.Errorf("model calls = %d, observed = %d, want %d", len(m.reqs), observed, tt.calls)
			}
			for _, r := range m.reqs {
				if r.Output == nil || r.MaxTokens != 123 || r.Agent != Agent {
					t.Errorf("request: output %v max %d agent %q", r.Output, r.MaxTokens, r.Agent)
				}
			}
			if len(tt.feedback) > 0 {
				last := m.reqs[1].Messages[len(m.reqs[1].Messages)-1]
				for _, s := range tt.feedback {
					if !strings.Contains(last.Content, s) {
						t.Errorf("re-ask message lacks %q:\n%s", s, last.Content)
					}
				}
				if n := len(m.reqs[0].Messages); n != 2 {
					t.Errorf("first request has %d messages, want 2 (observer must not see later appends)", n)
				}
			}
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("Plan() succeeded, want error")
				}
				if !errors.Is(err, ErrInvalidPlan) {
					t.Errorf("error %v does not wrap ErrInvalidPlan", err)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q lacks %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Plan() = %v", err)
			}
			if plan.Goal != "say hello" || len(plan.Steps) != 2 || plan.Steps[1].ID != 2 || plan.TestsDir != DefaultTestsDir {
				t.Errorf("plan = %+v", plan)
			}
			if plan.Steps[1].Files[0] != "main.go" {
				t.Errorf("file not cleaned: %q", plan.Steps[1].Files[0])
			}
		})
	}
}

func TestPlannerModelError(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection refused")
	m := &fakeModel{errs: []error{boom}}
	_, err := New(m).Plan(context.Background(), "goal", "")
	if !errors.Is(err, boom) || len(m.reqs) != 1 {
		t.Fatalf("Plan() = %v after %d calls, want wrapped model error after 1", err, len(m.reqs))
	}
	if _, err := New(m).Plan(context.Background(), " ", ""); err == nil {
		t.Errorf("empty goal accepted")
	}
}

func TestPlannerPromptAndListing(t *testing.T) {
	t.Parallel()
	m := &fakeModel{replies: []string{goodReply}}
	long := strings.Repeat("some/file/name.go\n", 2000)
	if _, err := New(m, WithPrompt("custom system")).Plan(context.Background(), "g", long); err != nil {
		t.Fatal(err)
	}
	msgs := m.reqs[0].Messages
	if msgs[0].Role != llm.RoleSystem || msgs[0].Content != "custom system" {
		t.Errorf("system message = %+v", msgs[0])
	}
	if u := msgs[1].Content; len(u) > maxListing+1000 || !strings.Contains(u, "listing cut") {
		t.Errorf("listing not capped: %d bytes", len(u))
	}
}

func TestSchemaIsStrict(t *testing.T) {
	t.Parallel()
	s := New(&fakeModel{}).schema
	if !llm.StrictCompatible(s.Schema) {
		t.Errorf("plan schema is not strict-compatible: %s", s.Schema)
	}
	var m map[string]any
	if err := json.Unmarshal(s.Schema, &m); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(s.Schema), "test_command") || !strings.Contains(string(s.Schema), "acceptance tests") {
		t.Errorf("schema lacks fields or descriptions: %s", s.Schema)
	}
}
