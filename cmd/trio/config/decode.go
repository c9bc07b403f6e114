package config

import (
	"cmp"
	"errors"
	"slices"

	"github.com/goccy/go-yaml/ast"

	"github.com/trioagent/trio/internal/yamldecode"
)

// decodeAll decodes body into f key by key (package yamldecode), so that
// every key that decodes lands in f and every one that does not is
// reported, not only the first: a file with two mistakes names both.
func decodeAll(name string, body ast.Node, f *File) []error {
	raw := yamldecode.All(body, f)
	errs := make([]error, len(raw))
	for i, err := range raw {
		errs[i] = yamlError(name, err)
	}
	return errs
}

// byLine sorts errors (each an *Error) by line.
func byLine(errs []error) {
	slices.SortStableFunc(errs, func(a, b error) int {
		var ea, eb *Error
		errors.As(a, &ea)
		errors.As(b, &eb)
		return cmp.Compare(ea.Line, eb.Line)
	})
}
