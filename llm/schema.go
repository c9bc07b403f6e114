package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/trioagent/trio/internal/schema"
)

// Validator is implemented by structured outputs that check themselves
// beyond their schema. [DecodeOutput] calls Validate after decoding.
type Validator interface {
	Validate() error
}

// SchemaOf reflects T into an [OutputSchema] fit for a strict structured
// output: every struct property is required unless its json tag says
// omitempty (or omitzero), objects allow no additional properties, and
// definitions are expanded inline so the schema holds no $ref. Tools'
// argument schemas come from the same reflection (internal/schema).
//
// It panics if T cannot be expressed without references (a recursive type):
// that is a programming error found the first time the schema is built.
func SchemaOf[T any](name, description string) *OutputSchema {
	t := reflect.TypeFor[T]()
	s, err := schema.For(t)
	if err != nil {
		panic(fmt.Sprintf("llm.SchemaOf[%s]: %v", t, err))
	}
	raw, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("llm.SchemaOf[%s]: %v", t, err))
	}
	return &OutputSchema{Name: name, Description: description, Schema: raw}
}

// StrictCompatible reports whether a schema meets the subset OpenAI's
// strict structured outputs accept: every object lists all its properties
// as required and forbids additional properties. A schema built by
// [SchemaOf] from a struct with omitempty fields is not; the provider then
// asks for the schema without strict.
func StrictCompatible(schema json.RawMessage) bool {
	var m any
	if err := json.Unmarshal(schema, &m); err != nil {
		return false
	}
	return strictOK(m)
}

func strictOK(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["$ref"]; ok {
			return false
		}
		_, hasProps := x["properties"]
		if x["type"] == "object" || hasProps {
			if ap, ok := x["additionalProperties"].(bool); !ok || ap {
				return false
			}
		}
		if props, ok := x["properties"].(map[string]any); ok {
			req := map[string]bool{}
			r, _ := x["required"].([]any)
			for _, e := range r {
				if s, ok := e.(string); ok {
					req[s] = true
				}
			}
			for k := range props {
				if !req[k] {
					return false
				}
			}
		}
		for _, e := range x {
			if !strictOK(e) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !strictOK(e) {
				return false
			}
		}
	}
	return true
}

// DecodeOutput decodes a structured reply into T, strictly, against the
// schema [SchemaOf] gives T: the JSON may be wrapped in a ```json fence, but
// wrong types, values outside an enum, unknown fields, missing required
// fields and trailing data are errors that name the field by its JSON path
// ("steps[1].files"). If T implements [Validator], its Validate error is
// returned too. The schema check is compiled once per type.
func DecodeOutput[T any](content string) (T, error) {
	text := stripFence(content)
	if text == "" {
		var zero T
		return zero, errors.New("structured output: reply is empty, want a JSON object")
	}
	out, err := schema.DecodeStrict[T]([]byte(text))
	if err != nil {
		return out, fmt.Errorf("structured output: %w", err)
	}
	return out, nil
}

// stripFence removes a Markdown code fence (``` or ```json) around text.
func stripFence(s string) string {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "```") {
		return t
	}
	nl := strings.IndexByte(t, '\n')
	if nl < 0 {
		return t
	}
	body := t[nl+1:]
	if end := strings.LastIndex(body, "```"); end >= 0 {
		body = body[:end]
	}
	return strings.TrimSpace(body)
}
