package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

// Audit logs are JSON; a record written by the gate must read back the same.
func TestVerdictAnswerTextRoundTrip(t *testing.T) {
	t.Parallel()
	for _, v := range []Verdict{Deny, Ask, Allow} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var got Verdict = 99
		if err := json.Unmarshal(b, &got); err != nil || got != v {
			t.Errorf("verdict %v: round trip gave %v, %v", v, got, err)
		}
	}
	for _, a := range []Answer{AnswerNo, AnswerYes, AnswerAlways} {
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var got Answer = 99
		if err := json.Unmarshal(b, &got); err != nil || got != a {
			t.Errorf("answer %v: round trip gave %v, %v", a, got, err)
		}
	}
	var v Verdict
	if err := json.Unmarshal([]byte(`"maybe"`), &v); err == nil || !strings.Contains(err.Error(), `"maybe"`) {
		t.Errorf("unknown verdict: err = %v, want one naming it", err)
	}
	var a Answer
	if err := json.Unmarshal([]byte(`"perhaps"`), &a); err == nil || !strings.Contains(err.Error(), `"perhaps"`) {
		t.Errorf("unknown answer: err = %v, want one naming it", err)
	}
}
