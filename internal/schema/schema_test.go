package schema_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/invopop/jsonschema"

	"github.com/trioagent/trio/internal/schema"
)

type owner struct {
	Name string `json:"name"`
}

type step struct {
	ID    string   `json:"id"`
	Files []string `json:"files"`
	Kind  string   `json:"kind,omitempty" jsonschema:"enum=code,enum=test"`
	Owner *owner   `json:"owner,omitempty"`
}

type plan struct {
	Goal   string         `json:"goal"`
	Steps  []step         `json:"steps"`
	Weight float64        `json:"weight,omitempty"`
	Count  uint8          `json:"count,omitempty"`
	Labels map[string]int `json:"labels,omitempty"`
	Hidden string         `json:"-"`
}

func (p *plan) Validate() error {
	if p.Goal == "reject" {
		return errors.New("goal: rejected by Validate")
	}
	return nil
}

type node struct {
	Name     string  `json:"name"`
	Children []*node `json:"children"`
}

func TestFor(t *testing.T) {
	t.Parallel()
	s, err := schema.ForType[plan]()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(s)
	for _, bad := range []string{"$ref", "$defs", "$schema", "$id", "Hidden"} {
		if strings.Contains(string(b), bad) {
			t.Errorf("schema holds %s: %s", bad, b)
		}
	}
	var m struct {
		Required             []string `json:"required"`
		AdditionalProperties *bool    `json:"additionalProperties"`
		Properties           map[string]struct {
			Items struct {
				Required []string `json:"required"`
			} `json:"items"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.Required, ",") != "goal,steps" || m.AdditionalProperties == nil || *m.AdditionalProperties {
		t.Errorf("top level not closed with goal,steps required: %s", b)
	}
	if r := strings.Join(m.Properties["steps"].Items.Required, ","); r != "id,files" {
		t.Errorf("steps items required = %s", r)
	}

	empty, err := schema.ForType[struct{}]()
	if err != nil || empty.Properties == nil {
		t.Errorf("empty struct schema = %+v, %v: want empty properties", empty, err)
	}
	if _, err := schema.ForType[node](); err == nil || !strings.Contains(err.Error(), "recursive") {
		t.Errorf("recursive type: err = %v", err)
	}
	if _, err := schema.ValidatorFor(reflect.TypeFor[node]()); err == nil {
		t.Error("ValidatorFor of a recursive type succeeded")
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	v, err := schema.ValidatorFor(reflect.TypeFor[plan]())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, doc string
		kind      schema.Kind
		path, msg string // msg: the whole Error()
	}{
		{"ok", `{"goal":"g","steps":[{"id":"a","files":["x"],"kind":"code","owner":{"name":"n"}}],"labels":{"a":1}}`, 0, "", ""},
		{"null array and object", `{"goal":"g","steps":null,"labels":null}`, 0, "", ""},
		{"integer is a number", `{"goal":"g","steps":[],"weight":2}`, 0, "", ""},
		{"syntax", `{"goal":`, schema.Syntax, "", "not valid JSON: unexpected EOF"},
		{"empty", ``, schema.Syntax, "", "not valid JSON: empty document"},
		{"trailing", `{"goal":"g","steps":[]} x`, schema.Trailing, "", "not valid JSON: data after the JSON value"},
		{"root type", `[1]`, schema.Type, "", "expected object, got array"},
		{"nested type", `{"goal":"g","steps":[{"id":"a","files":[]},{"id":"b","files":[]},{"id":"c","files":["x",1.5]}]}`,
			schema.Type, "steps[2].files[1]", "steps[2].files[1]: expected string, got number"},
		{"null string", `{"goal":null,"steps":[]}`, schema.Type, "goal", "goal: expected string, got null"},
		{"float for int", `{"goal":"g","steps":[],"count":1.5}`, schema.Type, "count", "count: expected integer, got number"},
		{"map values", `{"goal":"g","steps":[],"labels":{"a":"x"}}`, schema.Type, "labels.a", "labels.a: expected integer, got string"},
		{"missing", `{"steps":[]}`, schema.Missing, "goal", `missing required field "goal"`},
		{"missing nested", `{"goal":"g","steps":[{"id":"a"}]}`, schema.Missing, "steps[0].files", `missing required field "steps[0].files"`},
		{"unknown", `{"goal":"g","steps":[],"zz":1,"aa":2}`, schema.Unknown, "aa",
			`unknown field "aa" (accepted: count, goal, labels, steps, weight)`},
		{"unknown nested", `{"goal":"g","steps":[{"id":"a","files":[],"owner":{"name":"n","age":3}}]}`, schema.Unknown, "steps[0].owner.age",
			`unknown field "age" in steps[0].owner (accepted: name)`},
		{"enum", `{"goal":"g","steps":[{"id":"a","files":[],"kind":"docs"}]}`, schema.Enum, "steps[0].kind",
			`steps[0].kind: must be one of "code", "test"; got "docs"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := v.Validate([]byte(tt.doc))
			if tt.kind == 0 {
				if err != nil {
					t.Fatalf("Validate(%s) = %v", tt.doc, err)
				}
				return
			}
			var se *schema.Error
			if !errors.As(err, &se) {
				t.Fatalf("Validate(%s) = %v (%T), want *schema.Error", tt.doc, err, err)
			}
			if se.Kind != tt.kind || se.Path != tt.path || se.Error() != tt.msg {
				t.Errorf("Validate(%s) = kind %d path %q %q; want kind %d path %q %q", tt.doc, se.Kind, se.Path, se, tt.kind, tt.path, tt.msg)
			}
		})
	}
}

func TestDecodeStrict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, doc, want string // want: substring of the error, "" = ok
		kind            schema.Kind
	}{
		{"ok", `{"goal":"g","steps":[{"id":"a","files":["x"]}],"count":7}`, "", 0},
		{"schema problem", `{"goal":"g","steps":[{"id":"a","files":[],"kind":"docs"}]}`, `steps[0].kind: must be one of`, schema.Enum},
		{"out of range", `{"goal":"g","steps":[],"count":300}`, `count: expected integer in range of uint8, got number 300`, schema.Type},
		{"validate", `{"goal":"reject","steps":[]}`, "rejected by Validate", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := schema.DecodeStrict[plan]([]byte(tt.doc))
			if tt.want == "" {
				if err != nil || p.Goal != "g" || len(p.Steps) != 1 || p.Count != 7 {
					t.Fatalf("DecodeStrict = %+v, %v", p, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("DecodeStrict(%s) = %v, want %q", tt.doc, err, tt.want)
			}
			var se *schema.Error
			if got := errors.As(err, &se); got != (tt.kind != 0) || (got && se.Kind != tt.kind) {
				t.Errorf("DecodeStrict(%s) error %#v, want kind %d", tt.doc, err, tt.kind)
			}
		})
	}
}

func TestValidatorForCaches(t *testing.T) {
	t.Parallel()
	a, err := schema.ValidatorFor(reflect.TypeFor[step]())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := schema.ValidatorFor(reflect.TypeFor[step]())
	if a != b {
		t.Error("ValidatorFor rebuilt the validator of a type it had seen")
	}
}

func TestCompileRefusesRef(t *testing.T) {
	t.Parallel()
	s := &jsonschema.Schema{Type: "object", Properties: jsonschema.NewProperties()}
	s.Properties.Set("x", &jsonschema.Schema{Ref: "#/$defs/X"})
	if _, err := schema.Compile(s); err == nil || !strings.Contains(err.Error(), "$ref") {
		t.Errorf("Compile with $ref: err = %v", err)
	}
}

// BenchmarkDecodeStrict is the shared cost under every tool call and every
// structured reply.
func BenchmarkDecodeStrict(b *testing.B) {
	doc := []byte(`{"goal":"g","steps":[{"id":"a","files":["x","y"],"kind":"code"},{"id":"b","files":[],"owner":{"name":"n"}}],"labels":{"a":1}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := schema.DecodeStrict[plan](doc); err != nil {
			b.Fatal(err)
		}
	}
}

type cutDescription struct {
	Note string `json:"note" jsonschema:"description=What was done, in a sentence."`
}

type escapedDescription struct {
	Note string `json:"note" jsonschema:"description=What was done\\, in a sentence.,minLength=1"`
	Why  string `json:"why" jsonschema_description:"Why, in a sentence, with commas."`
}

// An unescaped comma ends a description early and the model reads half a
// sentence; For must refuse the tag instead of shortening it silently.
func TestForRefusesCutDescription(t *testing.T) {
	t.Parallel()
	_, err := schema.ForType[cutDescription]()
	if err == nil || !strings.Contains(err.Error(), "cutDescription.Note") || !strings.Contains(err.Error(), `" in a sentence."`) {
		t.Fatalf("err = %v, want one naming the field and the stray part", err)
	}
	s, err := schema.ForType[escapedDescription]()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"note": "What was done, in a sentence.", "why": "Why, in a sentence, with commas."} {
		p, ok := s.Properties.Get(name)
		if !ok || p.Description != want {
			t.Errorf("%s: description %q, want %q", name, p.Description, want)
		}
	}
}
