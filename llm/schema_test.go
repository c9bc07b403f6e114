package llm_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/trioagent/trio/llm"
)

type person struct {
	Name string `json:"name"`
}

type step struct {
	ID    string   `json:"id" jsonschema:"description=Short step id"`
	Files []string `json:"files"`
	Owner *person  `json:"owner,omitempty"`
}

type testPlan struct {
	Goal  string `json:"goal"`
	Steps []step `json:"steps"`
	Notes string `json:"notes,omitempty"`
}

func (p *testPlan) Validate() error {
	if len(p.Steps) == 0 {
		return errors.New("steps: at least one step is required")
	}
	return nil
}

func TestSchemaOf(t *testing.T) {
	t.Parallel()
	out := llm.SchemaOf[testPlan]("plan", "A plan.")
	if out.Name != "plan" || out.Description != "A plan." {
		t.Errorf("schema = %+v", out)
	}
	s := string(out.Schema)
	for _, bad := range []string{"$ref", "$defs", "$schema", "$id"} {
		if strings.Contains(s, bad) {
			t.Errorf("schema holds %s: %s", bad, s)
		}
	}
	var m struct {
		Type                 string   `json:"type"`
		Required             []string `json:"required"`
		AdditionalProperties *bool    `json:"additionalProperties"`
		Properties           struct {
			Steps struct {
				Items struct {
					Required             []string        `json:"required"`
					AdditionalProperties *bool           `json:"additionalProperties"`
					Properties           json.RawMessage `json:"properties"`
				} `json:"items"`
			} `json:"steps"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(out.Schema, &m); err != nil {
		t.Fatal(err)
	}
	if m.Type != "object" || strings.Join(m.Required, ",") != "goal,steps" || m.AdditionalProperties == nil || *m.AdditionalProperties {
		t.Errorf("top level: %s", s)
	}
	it := m.Properties.Steps.Items
	if strings.Join(it.Required, ",") != "id,files" || it.AdditionalProperties == nil || *it.AdditionalProperties ||
		!strings.Contains(string(it.Properties), "Short step id") {
		t.Errorf("steps items not inlined strictly: %s", s)
	}
	if llm.StrictCompatible(out.Schema) {
		t.Error("a schema with optional fields is reported strict-compatible")
	}
	if llm.StrictCompatible(llm.SchemaOf[map[string]int]("m", "").Schema) {
		t.Error("a map schema is reported strict-compatible")
	}
	if !llm.StrictCompatible(llm.SchemaOf[verdict]("v", "").Schema) {
		t.Error("verdict schema not strict-compatible")
	}
}

func TestDecodeOutput(t *testing.T) {
	t.Parallel()
	const good = `{"goal":"g","steps":[{"id":"s1","files":["a.go"]}]}`
	tests := []struct {
		name, in, want string // want: substring of the error, "" for success
	}{
		{"plain", good, ""},
		{"json fence", "```json\n" + good + "\n```", ""},
		{"bare fence with spaces", "  ```\n" + good + "\n```  \n", ""},
		{"optional given", `{"goal":"g","notes":"n","steps":[{"id":"s1","files":[],"owner":{"name":"x"}}]}`, ""},
		{"unknown field", `{"goal":"g","steps":[],"extra":1}`, `unknown field "extra"`},
		{"unknown nested field", `{"goal":"g","steps":[{"id":"s","files":[],"path":"x"}]}`, `unknown field "path"`},
		{"missing field", `{"steps":[{"id":"s1","files":[]}]}`, `missing required field "goal"`},
		{"missing nested field", `{"goal":"g","steps":[{"id":"s1","files":[]},{"id":"s2"}]}`, `missing required field "steps[1].files"`},
		{"missing in optional object", `{"goal":"g","steps":[{"id":"s1","files":[],"owner":{}}]}`, `missing required field "steps[0].owner.name"`},
		{"wrong type", `{"goal":7,"steps":[]}`, "goal"},
		{"trailing data", good + ` {"goal":"again"}`, "after the JSON value"},
		{"empty", "  ", "reply is empty"},
		{"prose", "Here is the plan: " + good, "invalid character"},
		{"validator", `{"goal":"g","steps":[]}`, "at least one step"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := llm.DecodeOutput[testPlan](tt.in)
			if tt.want == "" {
				if err != nil || p.Goal != "g" || len(p.Steps) != 1 {
					t.Fatalf("DecodeOutput = %+v, %v", p, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestDecodeOutputChecksSchema: replies are checked against the schema
// SchemaOf gives, types and enums included, with the field named.
func TestDecodeOutputChecksSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string // want: the whole error, "" for success
	}{
		{"ok", `{"verdict":"pass","reasons":[]}`, ""},
		{"null array", `{"verdict":"fail","reasons":null}`, ""},
		{"enum", `{"verdict":"maybe","reasons":[]}`, `structured output: verdict: must be one of "pass", "fail"; got "maybe"`},
		{"item type", `{"verdict":"fail","reasons":["a",2]}`, `structured output: reasons[1]: expected string, got integer`},
		{"unknown", `{"verdict":"fail","reasons":[],"why":"x"}`, `structured output: unknown field "why" (accepted: reasons, verdict)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := llm.DecodeOutput[verdict](tt.in)
			if tt.want == "" {
				if err != nil || v.Verdict == "" {
					t.Fatalf("DecodeOutput = %+v, %v", v, err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// BenchmarkDecodeOutput is the cost of checking and decoding one structured
// reply, paid on every planner, critic and summarizer turn.
func BenchmarkDecodeOutput(b *testing.B) {
	const in = "```json\n" + `{"goal":"g","notes":"n","steps":[{"id":"s1","files":["a.go","b.go"]},{"id":"s2","files":["c.go"],"owner":{"name":"x"}},{"id":"s3","files":[]}]}` + "\n```"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := llm.DecodeOutput[testPlan](in); err != nil {
			b.Fatal(err)
		}
	}
}
