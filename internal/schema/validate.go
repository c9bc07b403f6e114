package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/invopop/jsonschema"
)

// Validator checks JSON documents against a compiled schema. It enforces
// types, properties, required, additionalProperties (false or a schema),
// items and enum; every other keyword is documentation for the model. A
// Validator is immutable and safe for concurrent use.
type Validator struct {
	root *node
}

type node struct {
	types      []string
	props      map[string]*node
	names      []string // sorted property names, for messages
	required   []string
	closed     bool
	additional *node // schema of properties not listed, when not closed
	items      *node
	enum       []string // canonical JSON of each allowed value
}

// Compile builds a Validator from s through its JSON form, so the check sees
// exactly what the model sees. A schema that holds $ref is refused: [For]
// never makes one.
func Compile(s *jsonschema.Schema) (*Validator, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("schema: marshal: %w", err)
	}
	var m any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("schema: read: %w", err)
	}
	n, err := compileNode(m, "")
	if err != nil {
		return nil, err
	}
	return &Validator{root: n}, nil
}

func compileNode(v any, at string) (*node, error) {
	m, ok := v.(map[string]any)
	if !ok { // boolean schema: anything goes
		return &node{}, nil
	}
	if ref, ok := m["$ref"]; ok {
		return nil, fmt.Errorf("schema: $ref %v at %q: inline it", ref, "#"+at)
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
		n.names = make([]string, 0, len(p))
		for k, sub := range p {
			c, err := compileNode(sub, at+"/properties/"+k)
			if err != nil {
				return nil, err
			}
			n.props[k] = c
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
	switch ap := m["additionalProperties"].(type) {
	case bool:
		n.closed = !ap
	case map[string]any:
		c, err := compileNode(ap, at+"/additionalProperties")
		if err != nil {
			return nil, err
		}
		n.additional = c
	}
	if it, ok := m["items"]; ok {
		c, err := compileNode(it, at+"/items")
		if err != nil {
			return nil, err
		}
		n.items = c
	}
	if e, ok := m["enum"].([]any); ok {
		for _, x := range e {
			b, _ := json.Marshal(x)
			n.enum = append(n.enum, string(b))
		}
	}
	return n, nil
}

// Validate parses raw, which must hold exactly one JSON value, and checks it
// against the schema. The first problem found is returned as an [*Error];
// objects are walked in sorted key order, so the same document always
// yields the same error.
func (v *Validator) Validate(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return &Error{Kind: Syntax, Detail: "empty document"}
		}
		return &Error{Kind: Syntax, Detail: err.Error()}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &Error{Kind: Trailing}
	}
	return v.root.validate("", doc)
}

func (n *node) validate(path string, v any) error {
	if len(n.types) > 0 && !n.accepts(v) {
		return &Error{Kind: Type, Path: path, Want: n.types, Got: jsonKind(v)}
	}
	if len(n.enum) > 0 {
		b, _ := json.Marshal(v)
		if !slices.Contains(n.enum, string(b)) {
			return &Error{Kind: Enum, Path: path, Want: n.enum, Got: string(b)}
		}
	}
	switch x := v.(type) {
	case map[string]any:
		if n.closed {
			// The first unknown key in sorted order, found without
			// sorting: the error must not depend on map order.
			unknown, found := "", false
			for k := range x {
				if _, ok := n.props[k]; !ok && (!found || k < unknown) {
					unknown, found = k, true
				}
			}
			if found {
				accepted := n.names
				if accepted == nil {
					accepted = []string{}
				}
				return &Error{Kind: Unknown, Path: join(path, unknown), Key: unknown, Want: accepted}
			}
		}
		for _, r := range n.required {
			if _, ok := x[r]; !ok {
				return &Error{Kind: Missing, Path: join(path, r), Key: r}
			}
		}
		if n.additional == nil {
			for _, k := range n.names { // sorted
				if sub, ok := x[k]; ok {
					if err := n.props[k].validate(join(path, k), sub); err != nil {
						return err
					}
				}
			}
			break
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sub := n.props[k]
			if sub == nil {
				sub = n.additional
			}
			if err := sub.validate(join(path, k), x[k]); err != nil {
				return err
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

// accepts reports whether v has one of the node's types; an integer is
// also a number, and null is an empty array or object: Go decodes it as a
// nil slice, map or pointer, and encodes those as null, so a document
// marshalled from the very type it describes must pass.
func (n *node) accepts(v any) bool {
	k := jsonKind(v)
	for _, t := range n.types {
		switch {
		case t == k,
			t == "number" && k == "integer",
			k == "null" && (t == "array" || t == "object"):
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
