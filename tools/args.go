package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/trioagent/trio/internal/schema"
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

// normalizeArgs treats empty and null arguments as an empty object: models
// send either for tools without arguments.
func normalizeArgs(raw json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return json.RawMessage("{}")
	}
	return t
}

// decodeArgs checks raw against A's schema and decodes it (package schema,
// the mechanism structured outputs share), running A's Validate method when
// it has one. A schema problem becomes an *ArgumentError in the words tools
// have always used; Validate's error is returned unchanged.
func decodeArgs[A any](raw json.RawMessage) (A, error) {
	args, err := schema.DecodeStrict[A](normalizeArgs(raw))
	var se *schema.Error
	if errors.As(err, &se) {
		return args, argumentError(se)
	}
	return args, err
}

// argumentError words a schema problem for a tool call.
func argumentError(e *schema.Error) *ArgumentError {
	switch e.Kind {
	case schema.Trailing:
		return &ArgumentError{Problem: "not valid JSON: data after the arguments object"}
	case schema.Type:
		if e.Path == "" {
			return &ArgumentError{Problem: "must be a JSON object, got " + e.Got}
		}
	case schema.Unknown:
		if e.Want == nil {
			return &ArgumentError{Field: e.Path, Problem: "unknown argument"}
		}
		return &ArgumentError{Field: e.Path, Problem: "unknown argument (accepted: " + e.Accepted() + ")"}
	case schema.Missing:
		return &ArgumentError{Field: e.Path, Problem: "required but missing"}
	}
	return &ArgumentError{Field: e.Path, Problem: e.Problem()}
}
