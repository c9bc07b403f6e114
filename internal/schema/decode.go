package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
)

// compiled caches ValidatorFor per type: reflection and compilation happen
// once per type for the life of the process.
var compiled sync.Map // reflect.Type → *cacheEntry

type cacheEntry struct {
	once sync.Once
	v    *Validator
	err  error
}

// ValidatorFor is the Validator of [For](t), built once per type and cached.
func ValidatorFor(t reflect.Type) (*Validator, error) {
	e, ok := compiled.Load(t)
	if !ok {
		e, _ = compiled.LoadOrStore(t, &cacheEntry{})
	}
	ce := e.(*cacheEntry)
	ce.once.Do(func() {
		s, err := For(t)
		if err != nil {
			ce.err = err
			return
		}
		ce.v, ce.err = Compile(s)
	})
	return ce.v, ce.err
}

// DecodeStrict checks raw against the schema of T ([ValidatorFor]) and
// decodes it into T, rejecting unknown fields and trailing data. Every
// problem with the document is an [*Error] naming the field. If T (or *T)
// has a method Validate() error, DecodeStrict calls it after decoding and
// returns its error unchanged.
func DecodeStrict[T any](raw []byte) (T, error) {
	var out T
	v, err := ValidatorFor(reflect.TypeFor[T]())
	if err != nil {
		return out, err
	}
	if err := v.Validate(raw); err != nil {
		return out, err
	}
	if err := unmarshal(raw, &out); err != nil {
		var zero T
		return zero, err
	}
	if c, ok := any(&out).(interface{ Validate() error }); ok {
		if err := c.Validate(); err != nil {
			var zero T
			return zero, err
		}
	}
	return out, nil
}

// unmarshal decodes raw into dst rejecting unknown fields; the decoder's
// errors become [*Error]s that name the field. After [Validator.Validate]
// only what the Go type is stricter about than the schema remains: integer
// ranges, custom UnmarshalJSON methods.
func unmarshal(raw []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Type != nil {
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
		return &Error{Kind: Type, Path: te.Field, Want: []string{want}, Got: te.Value}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &Error{Kind: Syntax, Detail: err.Error()}
	}
	if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		key := strings.Trim(msg, `"`)
		return &Error{Kind: Unknown, Path: key, Key: key}
	}
	return &Error{Kind: Value, Detail: err.Error()}
}
