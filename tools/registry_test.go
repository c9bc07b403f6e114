package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/trioagent/trio/tools"
)

type noArgs struct{ tools.NoEffects }

func trivial(name string) tools.Tool {
	return tools.New(name, "Tool "+name+".", func(context.Context, noArgs) (tools.Result, error) {
		return tools.Result{OK: true, Output: name}, nil
	})
}

// rawTool implements Tool by hand, so a bad name can reach the registry.
type rawTool struct{ tools.Tool }

func (r rawTool) Name() string { return "bad name" }

func TestRegistry(t *testing.T) {
	t.Parallel()
	if _, err := tools.NewRegistry(trivial("a"), trivial("a")); err == nil || !strings.Contains(err.Error(), `"a" registered twice`) {
		t.Errorf("duplicate: err = %v", err)
	}
	if _, err := tools.NewRegistry(rawTool{trivial("x")}); err == nil || !strings.Contains(err.Error(), "invalid tool name") {
		t.Errorf("invalid name: err = %v", err)
	}
	if _, err := tools.NewRegistry(nil); err == nil {
		t.Error("nil tool accepted")
	}
	reg, err := tools.NewRegistry(trivial("c"), trivial("a"), trivial("b"))
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(trivial("b")); err == nil {
		t.Error("Register accepted a duplicate")
	}
	if got := reg.Names(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("Names = %v", got)
	}
	if _, ok := reg.Tool("b"); !ok {
		t.Error("Tool(b) missing")
	}
	if _, err := reg.View("a", "zz"); err == nil || !strings.Contains(err.Error(), `"zz"`) {
		t.Errorf("View with unknown name: err = %v", err)
	}
	all, err := reg.View()
	if err != nil || !slices.Equal(all.Names(), []string{"a", "b", "c"}) {
		t.Errorf("View() = %v, %v", all.Names(), err)
	}
}

func TestViewImmutable(t *testing.T) {
	t.Parallel()
	reg, err := tools.NewRegistry(trivial("b"), trivial("a"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := reg.View("b")
	if err != nil {
		t.Fatal(err)
	}
	// Later registrations and With do not change an existing view.
	if err := reg.Register(trivial("c")); err != nil {
		t.Fatal(err)
	}
	w, err := v.With(trivial("d"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(v.Names(), []string{"b"}) {
		t.Errorf("original view changed: %v", v.Names())
	}
	if !slices.Equal(w.Names(), []string{"b", "d"}) {
		t.Errorf("With view = %v", w.Names())
	}
	if _, ok := v.Tool("d"); ok {
		t.Error("original view sees d")
	}
	if _, err := w.With(trivial("b")); err == nil {
		t.Error("With accepted a duplicate")
	}
	// Names returns a copy.
	n := w.Names()
	n[0] = "zzz"
	if w.Names()[0] != "b" {
		t.Error("Names exposes internal state")
	}
	// Concurrent readers and derivers (run with -race).
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			_, _ = w.With(trivial("e" + string(rune('0'+i))))
			_ = w.Definitions()
			_, _ = w.Tool("b")
		})
	}
	wg.Wait()
}

func TestDefinitions(t *testing.T) {
	t.Parallel()
	reg, err := tools.NewRegistry(sampleTool(), trivial("a"))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := reg.View()
	defs := v.Definitions()
	b, err := json.Marshal(defs)
	if err != nil {
		t.Fatal(err)
	}
	var got []struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  map[string]any `json:"parameters"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	if len(got) != 2 || got[0].Name != "a" || got[1].Name != "sample" {
		t.Fatalf("definitions = %s", b)
	}
	f := got[1]
	if f.Description != "A sample." {
		t.Errorf("definition = %+v", f)
	}
	p := f.Parameters
	if p["type"] != "object" || p["additionalProperties"] != false || p["properties"] == nil {
		t.Errorf("parameters = %v", p)
	}
	if strings.Contains(string(b), "$ref") || strings.Contains(string(b), "$defs") {
		t.Errorf("definitions reference definitions: %s", b)
	}
	// Each call returns fresh parameters.
	want := string(defs[1].Parameters)
	copy(defs[1].Parameters, "XXXX")
	if got := string(v.Definitions()[1].Parameters); got != want {
		t.Errorf("Definitions shares parameter bytes between calls: %s", got)
	}
}

type silentArgs struct {
	Path string `json:"path"`
}

type declaredArgs struct {
	Path string `json:"path"`
}

func (a *declaredArgs) Effects() []tools.Effect {
	return []tools.Effect{{Kind: tools.EffectWrite, Path: a.Path}}
}

type pureArgs struct {
	tools.NoEffects
	ID string `json:"id"`
}

// A tool whose arguments declare no effects would pass the gate unjudged
// whatever it touched: the registry refuses it, naming the struct and the
// two ways to declare; an Effects method or NoEffects is accepted, and
// NoEffects adds nothing to the schema.
func TestRegisterNeedsDeclaredEffects(t *testing.T) {
	t.Parallel()
	ok := func(context.Context, silentArgs) (tools.Result, error) { return tools.Result{OK: true}, nil }
	_, err := tools.NewRegistry(tools.New("silent", "Writes a file it does not declare.", ok))
	if !errors.Is(err, tools.ErrNoEffects) || !strings.Contains(err.Error(), `"silent"`) || !strings.Contains(err.Error(), "tools_test.silentArgs") ||
		!strings.Contains(err.Error(), "Effects()") || !strings.Contains(err.Error(), "tools.NoEffects") {
		t.Fatalf("NewRegistry: %v, want ErrNoEffects naming the tool, its arguments and both ways to declare", err)
	}
	declared := tools.New("declared", "Writes a file.", func(context.Context, declaredArgs) (tools.Result, error) { return tools.Result{OK: true}, nil })
	pure := tools.New("pure", "Looks up.", func(context.Context, pureArgs) (tools.Result, error) { return tools.Result{OK: true}, nil })
	reg, err := tools.NewRegistry(declared, pure)
	if err != nil {
		t.Fatal(err)
	}
	if got := reg.Names(); len(got) != 2 {
		t.Errorf("names %v", got)
	}
	b, _ := json.Marshal(pure.Schema())
	if strings.Contains(string(b), "NoEffects") || !strings.Contains(string(b), `"id"`) {
		t.Errorf("schema with NoEffects embedded: %s", b)
	}
	inv, err := declared.Decode(json.RawMessage(`{"path":"a.txt"}`))
	if err != nil || len(inv.Effects) != 1 || inv.Effects[0].Path != "a.txt" {
		t.Errorf("declared effects: %+v, %v", inv.Effects, err)
	}
	// The built-ins all declare theirs.
	ws := newWorkspace(t, nil)
	if _, err := tools.NewRegistry(tools.Builtins(ws)...); err != nil {
		t.Errorf("built-ins: %v", err)
	}
}
