package config

import (
	"cmp"
	"errors"
	"slices"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// decodeAll decodes body into f key by key, so that every key that
// decodes lands in f and every one that does not is reported, not only
// the first: a file with two mistakes names both. Within a key whose
// value is a mapping, each of its keys is tried on its own to find the
// mistakes inside.
func decodeAll(name string, body ast.Node, f *File) []error {
	m, ok := body.(*ast.MappingNode)
	if !ok {
		if err := yaml.NodeToValue(body, f, yaml.Strict()); err != nil {
			return []error{yamlError(name, err)}
		}
		return nil
	}
	var errs []error
	for _, v := range m.Values {
		one := *m
		one.Values = []*ast.MappingValueNode{v}
		if err := yaml.NodeToValue(&one, f, yaml.Strict()); err != nil {
			errs = append(errs, inner(name, f, &one, []*ast.MappingValueNode{v}, err)...)
		}
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

// inner finds the mistakes under the last of chain (a path of key-value
// nodes from the top mapping top, each the only key of its parent), by
// decoding each key of its mapping value alone; err is the whole chain's.
// The keys that decode alone land in f, so that the checks see them.
func inner(name string, f *File, top *ast.MappingNode, chain []*ast.MappingValueNode, err error) []error {
	last := chain[len(chain)-1]
	sub, ok := last.Value.(*ast.MappingNode)
	if !ok || len(sub.Values) < 2 || len(chain) > 8 {
		return []error{yamlError(name, err)}
	}
	var errs []error
	for _, v := range sub.Values {
		one := *sub
		one.Values = []*ast.MappingValueNode{v}
		kv := *last
		kv.Value = &one
		t := rebuild(top, chain[:len(chain)-1], &kv)
		if e := yaml.NodeToValue(t, f, yaml.Strict()); e != nil {
			errs = append(errs, inner(name, f, t, chainOf(t)[:len(chain)+1], e)...)
		}
	}
	if len(errs) == 0 {
		return []error{yamlError(name, err)}
	}
	return errs
}

// rebuild is top with the chain of parents ending in leaf, each parent
// copied with its single key replaced.
func rebuild(top *ast.MappingNode, parents []*ast.MappingValueNode, leaf *ast.MappingValueNode) *ast.MappingNode {
	cur := leaf
	for i := len(parents) - 1; i >= 0; i-- {
		pm := *parents[i].Value.(*ast.MappingNode)
		pm.Values = []*ast.MappingValueNode{cur}
		kv := *parents[i]
		kv.Value = &pm
		cur = &kv
	}
	t := *top
	t.Values = []*ast.MappingValueNode{cur}
	return &t
}

// chainOf is the path of single keys from t down as far as it goes.
func chainOf(t *ast.MappingNode) []*ast.MappingValueNode {
	var chain []*ast.MappingValueNode
	for m := t; m != nil && len(m.Values) == 1; {
		chain = append(chain, m.Values[0])
		next, ok := m.Values[0].Value.(*ast.MappingNode)
		if !ok {
			break
		}
		m = next
	}
	return chain
}
