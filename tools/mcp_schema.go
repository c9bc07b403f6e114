package tools

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	gjs "github.com/google/jsonschema-go/jsonschema"
	"github.com/invopop/jsonschema"

	"github.com/trioagent/trio/internal/schema"
)

// mcpSchema is a server's input schema made ready for the model and for
// the check of a call's arguments.
type mcpSchema struct {
	// model is what the model sees: every local $ref replaced by what it
	// names, $defs/definitions and $schema gone (many model APIs refuse
	// them or ignore what they point at).
	model *jsonschema.Schema
	// check is the gate's own check on model (its messages name the
	// field); full, when set, is the server's schema as the JSON-schema
	// library resolved it ($ref, anyOf, oneOf, allOf...), checked after.
	check *schema.Validator
	full  *gjs.Resolved
}

// maxInlineDepth bounds how many $refs deep the inlining goes: a
// recursive schema (a tree) is cut there, and the cut part accepts any
// value in the model's view; the library's check still applies to it.
const maxInlineDepth = 8

// prepareMCPSchema resolves raw, a tool's input schema. The references
// are resolved by github.com/google/jsonschema-go (the go-sdk's schema
// library): a reference it cannot resolve (remote, or to nothing) makes
// the tool unusable, as the server's own check could not be mirrored.
func prepareMCPSchema(raw []byte) (*mcpSchema, error) {
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte(`{"type":"object"}`)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("input schema: want a JSON object, got %s", jsonType(doc))
	}
	refs := hasRef(root)
	out := &mcpSchema{}
	var gs gjs.Schema
	err := json.Unmarshal(raw, &gs)
	if err == nil {
		out.full, err = gs.Resolve(nil)
	}
	if err != nil {
		if refs {
			return nil, fmt.Errorf("input schema: %v", err)
		}
		// Without references the gate's own check is enough; a schema
		// the library finds fault with otherwise is still offered.
		out.full = nil
	}
	in := &inliner{root: root}
	m, err := in.node(root, 0, nil)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	mm, _ := m.(map[string]any)
	for _, k := range []string{"$schema", "$id", "$defs", "definitions", "$anchor", "$comment"} {
		delete(mm, k)
	}
	b, err := json.Marshal(mm)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	if out.check, err = schema.Compile(&s); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	out.model = &s
	return out, nil
}

// hasRef reports whether a schema document holds a $ref anywhere.
func hasRef(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["$ref"]; ok {
			return true
		}
		for _, e := range x {
			if hasRef(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasRef(e) {
				return true
			}
		}
	}
	return false
}

// inliner copies a schema document with each local $ref replaced by a
// copy of its target.
type inliner struct{ root map[string]any }

func (in *inliner) node(v any, depth int, seen []string) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		if ref, ok := x["$ref"].(string); ok {
			if depth >= maxInlineDepth || slices.Contains(seen, ref) {
				// A recursive schema: any value here, in the model's view.
				out["description"] = fmt.Sprintf("(recursive: as %s above)", strings.TrimPrefix(ref, "#/"))
			} else {
				target, err := in.target(ref)
				if err != nil {
					return nil, err
				}
				t, err := in.node(target, depth+1, append(seen, ref))
				if err != nil {
					return nil, err
				}
				if tm, ok := t.(map[string]any); ok {
					for k, e := range tm {
						out[k] = e
					}
				}
			}
		}
		for k, e := range x {
			switch k {
			case "$ref", "$schema":
				continue
			}
			c, err := in.node(e, depth, seen)
			if err != nil {
				return nil, err
			}
			out[k] = c // the $ref's siblings (a description) win
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := in.node(e, depth, seen)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return v, nil
}

// target finds what a local reference (#/$defs/X, a JSON pointer into
// the document) names. The library has already resolved every
// reference; this only follows the pointer the library checked.
func (in *inliner) target(ref string) (any, error) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok || (frag != "" && !strings.HasPrefix(frag, "/")) {
		return nil, fmt.Errorf("$ref %q: only references within the schema (#/...) can be inlined", ref)
	}
	var cur any = in.root
	if frag == "" {
		return cur, nil
	}
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("$ref %q: no %q there", ref, tok)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("$ref %q: no item %q there", ref, tok)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("$ref %q: %q is not inside an object or array", ref, tok)
		}
	}
	return cur, nil
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}
