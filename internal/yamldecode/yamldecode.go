// Package yamldecode decodes a YAML mapping into a Go value key by key,
// so that a file with several mistakes has each of them reported, not
// only the first the decoder meets. It is go-yaml's strict decoding
// applied to one key at a time; it parses nothing itself.
package yamldecode

import (
	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// maxChain bounds how deep into nested mappings a mistake is looked for;
// below it the error of the whole key is returned.
const maxChain = 8

// All decodes body into dst strictly, key by key: every key that decodes
// lands in dst, and every one that does not gives the decoder's error.
// Within a key whose value is a mapping, each of its keys is tried on its
// own, so that the errors name the innermost keys at fault. A body that is
// not a mapping is decoded whole.
func All(body ast.Node, dst any) []error {
	m, ok := body.(*ast.MappingNode)
	if !ok {
		if err := yaml.NodeToValue(body, dst, yaml.Strict()); err != nil {
			return []error{err}
		}
		return nil
	}
	var errs []error
	for _, v := range m.Values {
		one := *m
		one.Values = []*ast.MappingValueNode{v}
		if err := yaml.NodeToValue(&one, dst, yaml.Strict()); err != nil {
			errs = append(errs, inner(dst, &one, []*ast.MappingValueNode{v}, err)...)
		}
	}
	return errs
}

// inner finds the mistakes under the last of chain (a path of key-value
// nodes from the top mapping top, each the only key of its parent), by
// decoding each key of its mapping value alone; err is the whole chain's.
// The keys that decode alone land in dst.
func inner(dst any, top *ast.MappingNode, chain []*ast.MappingValueNode, err error) []error {
	last := chain[len(chain)-1]
	sub, ok := last.Value.(*ast.MappingNode)
	if !ok || len(sub.Values) < 2 || len(chain) > maxChain {
		return []error{err}
	}
	var errs []error
	for _, v := range sub.Values {
		one := *sub
		one.Values = []*ast.MappingValueNode{v}
		kv := *last
		kv.Value = &one
		t := rebuild(top, chain[:len(chain)-1], &kv)
		if e := yaml.NodeToValue(t, dst, yaml.Strict()); e != nil {
			errs = append(errs, inner(dst, t, chainOf(t)[:len(chain)+1], e)...)
		}
	}
	if len(errs) == 0 {
		return []error{err}
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
