package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"

	"github.com/invopop/jsonschema"

	"github.com/trioagent/trio/internal/schema"
)

// validName is what OpenAI accepts as a function name.
var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// effecter is implemented by argument structs that declare what a call does.
type effecter interface{ Effects() []Effect }

// NoEffects, embedded in a tool's argument struct, declares that the tool
// reads, writes and runs nothing the policy judges (it answers from memory
// or a service the embedder trusts): the Registry registers a tool built
// by New only when its arguments declare their effects, with an Effects
// method or with NoEffects. It adds nothing to the schema.
//
//	type LookupArgs struct {
//		tools.NoEffects
//		ID string `json:"id"`
//	}
type NoEffects struct{}

// Effects declares no effect.
func (NoEffects) Effects() []Effect { return nil }

// effectsDeclared is implemented by tools built by New: whether their
// argument struct declares its effects (see Registry.Register).
type effectsDeclared interface{ effectsDeclared() (bool, string) }

// typed is a Tool built by New.
type typed[A any] struct {
	name, description string
	schema            *jsonschema.Schema
	// prepare, for built-ins, resolves arguments against the workspace
	// (cleaning paths, parsing commands) after decoding; its error goes back
	// to the model.
	prepare func(*A) error
	fn      func(ctx context.Context, args A) (Result, error)
}

// New builds a tool whose arguments are the struct A. The JSON schema is
// reflected from A once, here (see the package documentation for the tag
// conventions). fn runs only after the gate cleared the call; an error it
// returns is an infrastructure failure and is wrapped with the tool's name.
//
// New panics if A is not a struct, if name is not a valid function name
// (letters, digits, _ and -, at most 64), or if the schema cannot be built:
// these are programmer errors, like a bad regexp.MustCompile.
func New[A any](name, description string, fn func(ctx context.Context, args A) (Result, error)) Tool {
	return newTyped(name, description, nil, fn)
}

func newTyped[A any](name, description string, prepare func(*A) error, fn func(ctx context.Context, args A) (Result, error)) *typed[A] {
	t := reflect.TypeFor[A]()
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("tools.New(%q): arguments must be a struct, got %s", name, t))
	}
	if !validName.MatchString(name) {
		panic(fmt.Sprintf("tools.New(%q): invalid tool name (want [a-zA-Z0-9_-]{1,64})", name))
	}
	if fn == nil {
		panic(fmt.Sprintf("tools.New(%q): nil function", name))
	}
	s, err := schema.For(t)
	if err == nil {
		// Compile (and cache) the check Decode runs, so a bad schema
		// panics here rather than on the first call.
		_, err = schema.ValidatorFor(t)
	}
	if err != nil {
		panic(fmt.Sprintf("tools.New(%q): %v", name, err))
	}
	return &typed[A]{name: name, description: description, schema: s, prepare: prepare, fn: fn}
}

// effectsDeclared reports whether A (or *A) has an Effects method, and
// A's name for the error that says it has none.
func (t *typed[A]) effectsDeclared() (bool, string) {
	at := reflect.TypeFor[A]()
	et := reflect.TypeFor[effecter]()
	return at.Implements(et) || reflect.PointerTo(at).Implements(et), at.String()
}

func (t *typed[A]) Name() string               { return t.name }
func (t *typed[A]) Description() string        { return t.description }
func (t *typed[A]) Schema() *jsonschema.Schema { return t.schema }

// Decode checks raw against the schema (naming the field on any problem),
// then decodes it into A.
func (t *typed[A]) Decode(raw json.RawMessage) (Invocation, error) {
	args, err := decodeArgs[A](raw)
	if err != nil {
		return Invocation{}, err
	}
	if t.prepare != nil {
		if err := t.prepare(&args); err != nil {
			return Invocation{}, err
		}
	}
	var effects []Effect
	if e, ok := any(&args).(effecter); ok {
		effects = e.Effects()
	}
	return Invocation{
		Effects: effects,
		Run: func(ctx context.Context) (Result, error) {
			res, err := t.fn(ctx, args)
			if err != nil {
				return res, fmt.Errorf("%s: %w", t.name, err)
			}
			return res, nil
		},
	}, nil
}
