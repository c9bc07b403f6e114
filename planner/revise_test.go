package planner

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestRevise(t *testing.T) {
	t.Parallel()
	first, err := New(&fakeModel{replies: []string{goodReply}}).Plan(context.Background(), "print hello", "")
	if err != nil {
		t.Fatal(err)
	}
	m := &fakeModel{replies: []string{
		`{"reason": "x", "steps": [{"title": "fix", "description": "d", "files": ["../out.go"], "expected": "e", "acceptance": "a"}]}`,
		`{"reason": "main printed the wrong word", "steps": [{"title": "fix main", "description": "print hello, not helo", "files": ["main.go"], "expected": "hello", "acceptance": "go test"}]}`,
	}}
	got, err := New(m).Revise(context.Background(), first, Revision{Why: "same_failure: TestHello twice", Findings: "TestHello: got helo", History: "Repair analysis 1: typo"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Steps) != 3 || got.Steps[2].ID != 3 || got.Steps[2].Title != "fix main" || got.TestCommand != first.TestCommand || got.TestsFolder() != first.TestsFolder() {
		t.Errorf("revised plan %+v, want the new step appended as step 3 with the test command kept", got)
	}
	if len(first.Steps) != 2 {
		t.Errorf("the original plan changed: %+v", first.Steps)
	}
	if len(m.reqs) != 2 || !strings.Contains(m.reqs[1].Messages[len(m.reqs[1].Messages)-1].Content, "steps[2].files[0]") {
		t.Errorf("the invalid first reply was not sent back with its problem: %+v", m.reqs[len(m.reqs)-1].Messages)
	}
	for _, want := range []string{"same_failure: TestHello twice", "TestHello: got helo", "Repair analysis 1: typo", "1. module"} {
		if !strings.Contains(m.reqs[0].Messages[1].Content, want) {
			t.Errorf("revision request lacks %q", want)
		}
	}
	_, err = New(&fakeModel{replies: []string{`{"reason": "r", "steps": []}`, `{"reason": "r", "steps": []}`}}).Revise(context.Background(), first, Revision{})
	if !errors.Is(err, ErrInvalidPlan) || !strings.Contains(err.Error(), "at least one step") {
		t.Errorf("no steps: err = %v, want ErrInvalidPlan naming the missing steps", err)
	}
}
