// Package schema is Trio's one mechanism for typed JSON: it reflects a Go
// struct into an inline JSON schema with github.com/invopop/jsonschema and
// checks raw JSON against that schema before decoding it strictly.
//
// It owns the conventions both tool arguments (package tools) and structured
// outputs (package llm: plan, findings, summary) follow:
//
//   - a struct field is required unless its json tag says omitempty or
//     omitzero;
//   - objects allow no additional properties;
//   - the schema is inline: no $schema, $id, $ref or $defs (recursive types
//     are refused, since they cannot be inlined);
//   - a document is checked for JSON types (null passes for an array or an
//     object, as Go's encoder writes a nil slice, map or pointer), required
//     and unknown fields and enum values, and every problem is an [*Error] naming the field by its JSON
//     path ("steps[2].files[0]: expected string, got number").
//
// Compiled validators are cached per Go type, so decoding a reply costs one
// parse for the check and one for the decode, never a reflection.
//
// It must not know about tools, models or roles: callers turn an [*Error]
// into their own message (tools.ArgumentError, "structured output: ...").
package schema
