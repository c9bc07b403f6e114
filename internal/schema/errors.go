package schema

import (
	"fmt"
	"strings"
)

// Kind says what is wrong with a JSON document.
type Kind int

const (
	// Syntax: the document is not valid JSON (Detail has the decoder's words).
	Syntax Kind = iota + 1
	// Trailing: more data follows the one JSON value.
	Trailing
	// Type: a value has the wrong JSON type (Want the allowed types, Got the
	// type found). At the root, Path is empty.
	Type
	// Unknown: an object holds a property its schema does not list (Key is
	// the property, Want the accepted names, nil when unknown).
	Unknown
	// Missing: a required property is absent (Key is the property).
	Missing
	// Enum: a value is not one of the allowed ones (Want them, as JSON; Got
	// the value, as JSON).
	Enum
	// Value: the Go type refused a value the schema allowed (Detail says why).
	Value
)

// Error is a problem with a JSON document that the document's author (a
// model, usually) can fix. Path is the JSON path of the value at fault
// ("steps[2].files[0]", "inner.name"), empty for the document as a whole.
type Error struct {
	Kind   Kind
	Path   string
	Key    string   // Unknown, Missing: the property name (Path ends with it)
	Got    string   // Type: the JSON type found; Enum: the value as JSON
	Want   []string // Type: allowed types; Enum: allowed values as JSON; Unknown: accepted names
	Detail string   // Syntax, Value: what the decoder said
}

// Error reads `steps[2].files[0]: expected string, got number`,
// `missing required field "steps[1].files"` or
// `unknown field "path" in steps[0] (accepted: files, id)`.
func (e *Error) Error() string {
	switch e.Kind {
	case Missing:
		return fmt.Sprintf("missing required field %q", e.Path)
	case Unknown:
		var b strings.Builder
		fmt.Fprintf(&b, "unknown field %q", e.Key)
		if p := e.Parent(); p != "" {
			b.WriteString(" in " + p)
		}
		if e.Want != nil {
			b.WriteString(" (accepted: " + e.Accepted() + ")")
		}
		return b.String()
	}
	if e.Path == "" {
		return e.Problem()
	}
	return e.Path + ": " + e.Problem()
}

// Problem is the message without the path: "expected string, got number".
func (e *Error) Problem() string {
	switch e.Kind {
	case Syntax:
		return "not valid JSON: " + e.Detail
	case Trailing:
		return "not valid JSON: data after the JSON value"
	case Type:
		return fmt.Sprintf("expected %s, got %s", strings.Join(e.Want, " or "), e.Got)
	case Enum:
		return fmt.Sprintf("must be one of %s; got %s", strings.Join(e.Want, ", "), e.Got)
	case Unknown:
		if e.Want == nil {
			return "unknown field"
		}
		return "unknown field (accepted: " + e.Accepted() + ")"
	case Missing:
		return "missing required field"
	default:
		return e.Detail
	}
}

// Accepted lists an Unknown error's accepted property names, "none" if the
// object takes none.
func (e *Error) Accepted() string {
	if len(e.Want) == 0 {
		return "none"
	}
	return strings.Join(e.Want, ", ")
}

// Parent is the path of the object that holds Key ("" at the root).
func (e *Error) Parent() string {
	p := strings.TrimSuffix(e.Path, e.Key)
	return strings.TrimSuffix(p, ".")
}
