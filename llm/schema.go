package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"

	"github.com/invopop/jsonschema"
)

// Validator is implemented by structured outputs that check themselves
// beyond their schema. [DecodeOutput] calls Validate after decoding.
type Validator interface {
	Validate() error
}

// SchemaOf reflects T into an [OutputSchema] fit for a strict structured
// output: every struct property is required unless its json tag says
// omitempty (or omitzero), objects allow no additional properties, and
// definitions are expanded inline so the schema holds no $ref.
//
// It panics if T cannot be expressed without references (a recursive type):
// that is a programming error found the first time the schema is built.
func SchemaOf[T any](name, description string) *OutputSchema {
	raw, err := schemaJSON(reflect.TypeFor[T]())
	if err != nil {
		panic(fmt.Sprintf("llm.SchemaOf[%s]: %v", reflect.TypeFor[T](), err))
	}
	return &OutputSchema{Name: name, Description: description, Schema: raw}
}

func schemaJSON(t reflect.Type) (json.RawMessage, error) {
	r := &jsonschema.Reflector{
		Anonymous:      true,
		DoNotReference: true,
		ExpandedStruct: true,
	}
	s := r.ReflectFromType(t)
	s.Version = ""
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	defs, _ := m["$defs"].(map[string]any)
	delete(m, "$defs")
	delete(m, "$schema")
	delete(m, "$id")
	inlined, err := inlineRefs(m, defs, 0)
	if err != nil {
		return nil, err
	}
	return json.Marshal(inlined)
}

// inlineRefs replaces every {"$ref": "#/$defs/X"} by a copy of X.
func inlineRefs(v any, defs map[string]any, depth int) (any, error) {
	if depth > 32 {
		return nil, errors.New("schema nests too deep (recursive type?)")
	}
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/$defs/")
			def, ok := defs[name]
			if !ok {
				return nil, fmt.Errorf("unresolved $ref %q", ref)
			}
			return inlineRefs(def, defs, depth+1)
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := inlineRefs(e, defs, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := inlineRefs(e, defs, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
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
			for _, r := range asSlice(x["required"]) {
				if s, ok := r.(string); ok {
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

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// DecodeOutput decodes a structured reply into T, strictly: the JSON may be
// wrapped in a ```json fence, but unknown fields, missing required fields
// (as [SchemaOf] defines them) and trailing data are errors that name the
// field. If T implements [Validator], its Validate error is returned too.
func DecodeOutput[T any](content string) (T, error) {
	var zero T
	text := stripFence(content)
	if text == "" {
		return zero, errors.New("structured output: reply is empty, want a JSON object")
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	var out T
	if err := dec.Decode(&out); err != nil {
		return zero, fmt.Errorf("structured output: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return zero, errors.New("structured output: unexpected data after the JSON value")
	}
	schema, err := schemaJSON(reflect.TypeFor[T]())
	if err != nil {
		return zero, fmt.Errorf("structured output: schema of %s: %w", reflect.TypeFor[T](), err)
	}
	var s, doc any
	if err := json.Unmarshal(schema, &s); err != nil {
		return zero, fmt.Errorf("structured output: %w", err)
	}
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	if err := d.Decode(&doc); err != nil {
		return zero, fmt.Errorf("structured output: %w", err)
	}
	if err := checkRequired(s, doc, ""); err != nil {
		return zero, fmt.Errorf("structured output: %w", err)
	}
	if v, ok := any(&out).(Validator); ok {
		if err := v.Validate(); err != nil {
			return zero, fmt.Errorf("structured output: %w", err)
		}
	} else if v, ok := any(out).(Validator); ok {
		if err := v.Validate(); err != nil {
			return zero, fmt.Errorf("structured output: %w", err)
		}
	}
	return out, nil
}

// checkRequired walks doc alongside its schema and reports the first
// required property that is missing, by its JSON path.
func checkRequired(schema, doc any, path string) error {
	s, ok := schema.(map[string]any)
	if !ok {
		return nil
	}
	switch d := doc.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		var missing []string
		for _, r := range asSlice(s["required"]) {
			name, _ := r.(string)
			if _, ok := d[name]; !ok {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			return fmt.Errorf("missing required field %q", join(path, missing[0]))
		}
		keys := make([]string, 0, len(d))
		for k := range d {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := checkRequired(props[k], d[k], join(path, k)); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range d {
			if err := checkRequired(s["items"], e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
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
	return string(bytes.TrimSpace([]byte(body)))
}
