package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/trioagent/trio/internal/tooldef"
)

// Registry holds every tool of a run, by name. Roles get Views of it.
// A Registry is safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]Tool
}

// NewRegistry returns a registry holding ts. A duplicate or invalid name is
// an error.
func NewRegistry(ts ...Tool) (*Registry, error) {
	r := &Registry{tools: make(map[string]Tool, len(ts))}
	for _, t := range ts {
		if err := r.Register(t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Register adds t. A nil tool, an invalid name (letters, digits, _ and -,
// at most 64) or a name already registered is an error.
//
// So is a tool built by New whose argument struct declares no effects: the
// gate judges a call by the effects its arguments declare (the paths it
// reads and writes, the commands it runs), so a tool that declares none
// would pass unjudged whatever it touches. Give the arguments an
// Effects() []Effect method, or embed NoEffects to say the tool touches
// nothing the policy judges. Tools that implement Tool directly build
// their Invocation's effects themselves; MCP tools, whose servers declare
// none, are asked about (see the gate) rather than refused.
func (r *Registry) Register(t Tool) error {
	if err := checkTool(t); err != nil {
		return err
	}
	if err := checkEffects(t); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.tools[t.Name()]; dup {
		return fmt.Errorf("tools: %q registered twice", t.Name())
	}
	r.tools[t.Name()] = t
	return nil
}

func checkTool(t Tool) error {
	if t == nil {
		return fmt.Errorf("tools: nil tool")
	}
	if !validName.MatchString(t.Name()) {
		return fmt.Errorf("tools: invalid tool name %q (want [a-zA-Z0-9_-]{1,64})", t.Name())
	}
	return nil
}

// checkEffects refuses a tool built by New (possibly wrapped, see
// Unwrap) whose arguments declare no effects.
func checkEffects(t Tool) error {
	for {
		w, ok := t.(interface{ Unwrap() Tool })
		if !ok {
			break
		}
		t = w.Unwrap()
	}
	d, ok := t.(effectsDeclared)
	if !ok {
		return nil
	}
	if declared, args := d.effectsDeclared(); !declared {
		return fmt.Errorf("tools: register %q: its arguments (%s) declare no effects, so the policy could not judge what a call reads, writes or runs: "+
			"add an Effects() []tools.Effect method to %s naming them, or embed tools.NoEffects in it if the tool touches nothing the policy judges: %w",
			t.Name(), args, args, ErrNoEffects)
	}
	return nil
}

// Tool returns the tool registered under name.
func (r *Registry) Tool(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	return t, ok
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.namesLocked()
}

// View returns an immutable subset of the registry holding the named tools,
// or every tool when no name is given. An unknown name is an error.
func (r *Registry) View(names ...string) (View, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if len(names) == 0 {
		ts := make([]Tool, 0, len(r.tools))
		for _, t := range r.tools {
			ts = append(ts, t)
		}
		return newView(ts)
	}
	ts := make([]Tool, 0, len(names))
	for _, n := range names {
		t, ok := r.tools[n]
		if !ok {
			return View{}, fmt.Errorf("tools: view: unknown tool %q (registered: %v)", n, r.namesLocked())
		}
		ts = append(ts, t)
	}
	return newView(ts)
}

func (r *Registry) namesLocked() []string {
	return slices.Sorted(maps.Keys(r.tools))
}

// View is the set of tools one role may call. It is an immutable value, safe
// to share across goroutines; With returns a new View. The zero View holds no
// tools.
type View struct {
	tools  []Tool // sorted by name; never modified after newView
	byName map[string]int
	params [][]byte // each tool's schema as JSON, for Definitions
}

func newView(ts []Tool) (View, error) {
	ts = slices.Clone(ts)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name() < ts[j].Name() })
	v := View{tools: ts, byName: make(map[string]int, len(ts)), params: make([][]byte, len(ts))}
	for i, t := range ts {
		if err := checkTool(t); err != nil {
			return View{}, err
		}
		if _, dup := v.byName[t.Name()]; dup {
			return View{}, fmt.Errorf("tools: view: %q given twice", t.Name())
		}
		v.byName[t.Name()] = i
		b, err := json.Marshal(t.Schema())
		if err != nil {
			return View{}, fmt.Errorf("tools: schema of %q: %w", t.Name(), err)
		}
		v.params[i] = b
	}
	return v, nil
}

// Names returns the names of the view's tools, sorted.
func (v View) Names() []string {
	names := make([]string, len(v.tools))
	for i, t := range v.tools {
		names[i] = t.Name()
	}
	return names
}

// Len is the number of tools in the view.
func (v View) Len() int { return len(v.tools) }

// Tool returns the view's tool called name.
func (v View) Tool(name string) (Tool, bool) {
	i, ok := v.byName[name]
	if !ok {
		return nil, false
	}
	return v.tools[i], true
}

// With returns a new view holding the view's tools and ts; v is unchanged.
// A name already in the view is an error.
func (v View) With(ts ...Tool) (View, error) {
	all := make([]Tool, 0, len(v.tools)+len(ts))
	all = append(all, v.tools...)
	all = append(all, ts...)
	return newView(all)
}

// Definitions returns the view's tools as model tool definitions
// (llm.ToolDef, for llm.Request.Tools), sorted by name. Each call returns
// fresh values the caller may keep or change.
func (v View) Definitions() []tooldef.ToolDef {
	defs := make([]tooldef.ToolDef, len(v.tools))
	for i, t := range v.tools {
		defs[i] = tooldef.ToolDef{Name: t.Name(), Description: t.Description(), Parameters: bytes.Clone(v.params[i])}
	}
	return defs
}

// ErrNoEffects is wrapped by Register's error for a tool built by New
// whose arguments declare no effects.
var ErrNoEffects = errors.New("tool declares no effects")
