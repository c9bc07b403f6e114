package agent

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A JSONL file torn at any byte of its last record is cut back to the
// record before, so the next append starts a clean line; a damaged line
// before the last is an error naming the file and line, and changes
// nothing.
func TestHealJSONL(t *testing.T) {
	t.Parallel()
	head := "{\"n\":1}\n{\"n\":2,\"s\":\"é\\n\"}\n"
	last := "{\"n\":3,\"s\":\"last record\"}\n"
	dir := t.TempDir()
	for off := 0; off <= len(last); off++ {
		path := filepath.Join(dir, "f.jsonl")
		os.WriteFile(path, []byte(head+last[:off]), 0o644)
		j, cut, err := openJSONL(path)
		if err != nil {
			t.Fatalf("offset %d: %v", off, err)
		}
		wantCut := int64(off)
		if off == len(last) {
			wantCut = 0 // the whole record, newline included: nothing torn
		}
		if cut != wantCut {
			t.Errorf("offset %d: cut %d bytes, want %d", off, cut, wantCut)
		}
		if err := j.write(map[string]int{"n": 4}, true); err != nil {
			t.Fatal(err)
		}
		j.close()
		b, _ := os.ReadFile(path)
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		for i, l := range lines {
			if !json.Valid([]byte(l)) {
				t.Errorf("offset %d: line %d is not JSON after the append: %q", off, i+1, l)
			}
		}
		if want := 3; off == len(last) {
			if len(lines) != 4 {
				t.Errorf("offset %d: %d lines, want 4", off, len(lines))
			}
		} else if len(lines) != want {
			t.Errorf("offset %d: %d lines, want %d", off, len(lines), want)
		}
	}

	// Damage before the last record.
	path := filepath.Join(dir, "mid.jsonl")
	damaged := "{\"n\":1}\n{\"n\":2,\"s\":\"x{\"n\":3}\n{\"n\":4}\n"
	os.WriteFile(path, []byte(damaged), 0o644)
	_, _, err := openJSONL(path)
	if err == nil || !strings.Contains(err.Error(), "mid.jsonl:2:") || !errors.Is(err, ErrInvalidInput) {
		t.Errorf("damage on line 2: %v, want an invalid-input error naming mid.jsonl:2", err)
	}
	if b, _ := os.ReadFile(path); string(b) != damaged {
		t.Error("a file damaged in the middle was changed")
	}
}

// The checkpoint, rewritten after every tool call, does not carry the
// goal: goal.md holds it, once, and state.json its hash.
func TestCheckpointWithoutGoal(t *testing.T) {
	t.Parallel()
	goal := strings.Repeat("The goal, at its largest. ", DefaultMaxGoalBytes/26)
	st := &state{Version: stateVersion, RunID: "r", Goal: goal, GoalSHA256: goalSum(goal), Phase: phaseBuild}
	b, err := encodeState(st)
	if err != nil {
		t.Fatal(err)
	}
	inline := *st
	inline.GoalSHA256 = ""
	old, _ := encodeState(&inline)
	if strings.Contains(string(b), "The goal, at its largest.") {
		t.Error("the checkpoint carries the goal")
	}
	t.Logf("checkpoint of a %d-byte goal: %d bytes, %d with the goal inline", len(goal), len(b), len(old))
}
