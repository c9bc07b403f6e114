package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/invopop/jsonschema"
)

// ArgumentError is a problem with a tool call's arguments that the model can
// fix. Field is the argument's JSON path ("path", "steps[2].id"), empty when
// the arguments as a whole are wrong.
type ArgumentError struct {
	Field   string
	Problem string
}

// Error reads `argument "path": expected string, got number`.
func (e *ArgumentError) Error() string {
	if e.Field == "" {
		return "arguments: " + e.Problem
	}
	return fmt.Sprintf("argument %q: %s", e.Field, e.Problem)
}

// argErr builds an *ArgumentError.
func argErr(field, format string, args ...any) error {
	return &ArgumentError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// node is the part of a JSON schema Decode enforces: types, properties,
// required, additionalProperties false, items and enum. Anything else in
// the schema is documentation for the model.
type node struct {
	types    []string
	props    map[string]*node
	names    []string // sorted property names, for messages
	required []string
	closed   bool
	items    *node
	enum     []string // canonical JSON of each allowed value
}

// compileSchema turns a reflected schema into a node through its JSON form,
// so the check sees exactly what the model sees.
func compileSchema(s *jsonschema.Schema) (*node, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("marshal schema: %w", err)
	}
	var m any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("read schema: %w", err)
	}
	return compileNode(m), nil
}

func compileNode(v any) *node {
	m, ok := v.(map[string]any)
	if !ok { // boolean schema: anything goes
		return &node{}
	}
	n := &node{}
	switch t := m["type"].(type) {
	case string:
		n.types = []string{t}
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				n.types = append(n.types, s)
			}
		}
	}
	if p, ok := m["properties"].(map[string]any); ok {
		n.props = make(map[string]*node, len(p))
		for k, sub := range p {
			n.props[k] = compileNode(sub)
			n.names = append(n.names, k)
		}
		sort.Strings(n.names)
	}
	if r, ok := m["required"].([]any); ok {
		for _, x := range r {
			if s, ok := x.(string); ok {
				n.required = append(n.required, s)
			}
		}
	}
	if ap, ok := m["additionalProperties"].(bool); ok && !ap {
		n.closed = true
	}
	if it, ok := m["items"]; ok {
		n.items = compileNode(it)
	}
	if e, ok := m["enum"].([]any); ok {
		for _, x := range e {
			b, _ := json.Marshal(x)
			n.enum = append(n.enum, string(b))
		}
	}
	return n
}

// normalizeArgs treats empty and null arguments as an empty object: models
// send either for tools without arguments.
func normalizeArgs(raw json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return json.RawMessage("{}")
	}
	return t
}

// validateRaw parses raw and checks it against the node.
func (n *node) validateRaw(raw json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return argErr("", "not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return argErr("", "not valid JSON: data after the arguments object")
	}
	if _, ok := v.(map[string]any); !ok {
		return argErr("", "must be a JSON object, got %s", jsonKind(v))
	}
	return n.validate("", v)
}

func (n *node) validate(path string, v any) error {
	if len(n.types) > 0 && !n.accepts(v) {
		return argErr(path, "expected %s, got %s", strings.Join(n.types, " or "), jsonKind(v))
	}
	if len(n.enum) > 0 {
		b, _ := json.Marshal(v)
		if !slices.Contains(n.enum, string(b)) {
			return argErr(path, "must be one of %s; got %s", strings.Join(n.enum, ", "), b)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		if n.closed {
			var unknown []string
			for k := range x {
				if _, ok := n.props[k]; !ok {
					unknown = append(unknown, k)
				}
			}
			if len(unknown) > 0 {
				sort.Strings(unknown)
				accepted := "none"
				if len(n.names) > 0 {
					accepted = strings.Join(n.names, ", ")
				}
				return argErr(join(path, unknown[0]), "unknown argument (accepted: %s)", accepted)
			}
		}
		for _, r := range n.required {
			if _, ok := x[r]; !ok {
				return argErr(join(path, r), "required but missing")
			}
		}
		for _, k := range n.names {
			if sub, ok := x[k]; ok {
				if err := n.props[k].validate(join(path, k), sub); err != nil {
					return err
				}
			}
		}
	case []any:
		if n.items != nil {
			for i, e := range x {
				if err := n.items.validate(fmt.Sprintf("%s[%d]", path, i), e); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// accepts reports whether v has one of the node's types.
func (n *node) accepts(v any) bool {
	k := jsonKind(v)
	for _, t := range n.types {
		switch {
		case t == k:
			return true
		case t == "number" && k == "integer":
			return true
		}
	}
	return false
}

// jsonKind names the JSON type of a value decoded with UseNumber; whole
// numbers are "integer".
func jsonKind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// strictUnmarshal decodes raw into dst rejecting unknown fields, turning the
// decoder's errors into ones that name the field.
func strictUnmarshal(raw json.RawMessage, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := te.Type.Kind().String()
		switch te.Type.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			want = "integer in range of " + te.Type.String()
		case reflect.Float32, reflect.Float64:
			want = "number"
		case reflect.Slice, reflect.Array:
			want = "array"
		case reflect.Struct, reflect.Map:
			want = "object"
		}
		return argErr(te.Field, "expected %s, got %s", want, te.Value)
	}
	if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return argErr(strings.Trim(msg, `"`), "unknown argument")
	}
	return argErr("", "%v", err)
}
