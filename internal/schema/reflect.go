package schema

import (
	"fmt"
	"reflect"
	"regexp"

	"github.com/invopop/jsonschema"
)

// For reflects t into an inline JSON schema: no $schema, $id, $ref or
// $defs; every object closed (additionalProperties false); a struct field
// required unless tagged omitempty or omitzero. A struct without fields
// still gets an empty "properties", which OpenAI wants for tools without
// arguments. For returns an error for a recursive type, which no inline
// schema can describe.
//
// Each call reflects anew and returns a schema the caller may change.
func For(t reflect.Type) (*jsonschema.Schema, error) {
	if t == nil {
		return nil, fmt.Errorf("schema: nil type")
	}
	if err := checkRecursion(t, nil); err != nil {
		return nil, fmt.Errorf("schema of %s: %w", t, err)
	}
	r := &jsonschema.Reflector{
		Anonymous:      true,
		DoNotReference: true,
		ExpandedStruct: true,
	}
	s := r.ReflectFromType(t)
	s.Version = ""
	s.ID = ""
	s.Definitions = nil
	if t.Kind() == reflect.Struct && (s.Properties == nil || s.Properties.Len() == 0) {
		s.Properties = jsonschema.NewProperties()
	}
	return s, nil
}

// ForType is [For] of T.
func ForType[T any]() (*jsonschema.Schema, error) {
	return For(reflect.TypeFor[T]())
}

// tagFlags are the jsonschema tag words that take no value.
var tagFlags = map[string]bool{
	"required": true, "nullable": true, "uniqueItems": true,
	"deprecated": true, "readOnly": true, "writeOnly": true,
}

var tagKey = regexp.MustCompile(`^[A-Za-z_]+=`)

// checkTag refuses a jsonschema tag the reflector would read differently
// from how it was written: an unescaped comma inside a description ends it
// there, and the model would see half a sentence without anyone noticing.
func checkTag(owner reflect.Type, f reflect.StructField) error {
	tag := f.Tag.Get("jsonschema")
	if tag == "" {
		return nil
	}
	for _, part := range splitTag(tag) {
		if tagFlags[part] || tagKey.MatchString(part) {
			continue
		}
		return fmt.Errorf("%s.%s: jsonschema tag part %q is no keyword: escape a comma inside a value as \\\\, or put the text in a jsonschema_description tag", owner, f.Name, part)
	}
	return nil
}

// splitTag splits a jsonschema tag on the commas the reflector splits on:
// those not escaped with a backslash.
func splitTag(tag string) []string {
	var parts []string
	start := 0
	for i := 0; i < len(tag); i++ {
		if tag[i] == ',' && (i == 0 || tag[i-1] != '\\') {
			parts = append(parts, tag[start:i])
			start = i + 1
		}
	}
	return append(parts, tag[start:])
}

// checkRecursion fails if t reaches itself through the fields JSON sees:
// the reflector, told not to reference definitions, would otherwise recurse
// without end.
func checkRecursion(t reflect.Type, stack []reflect.Type) error {
	for _, s := range stack {
		if s == t {
			return fmt.Errorf("recursive type %s cannot be expressed inline", t)
		}
	}
	stack = append(stack, t)
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return checkRecursion(t.Elem(), stack)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() && !f.Anonymous {
				continue
			}
			if f.Tag.Get("json") == "-" {
				continue
			}
			if err := checkTag(t, f); err != nil {
				return err
			}
			if err := checkRecursion(f.Type, stack); err != nil {
				return err
			}
		}
	}
	return nil
}
