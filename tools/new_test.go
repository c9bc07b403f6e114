package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/trioagent/trio/tools"
)

type inner struct {
	Name  string `json:"name"`
	Count int    `json:"count,omitempty"`
}

type sampleArgs struct {
	Path    string   `json:"path" jsonschema:"description=Where to look."`
	Mode    string   `json:"mode,omitempty" jsonschema:"enum=fast,enum=slow"`
	Limit   int      `json:"limit,omitempty"`
	Ratio   float64  `json:"ratio,omitempty"`
	Verbose bool     `json:"verbose,omitempty"`
	Tags    []string `json:"tags,omitempty"`
	Inner   *inner   `json:"inner,omitempty"`
}

func (a *sampleArgs) Effects() []tools.Effect {
	return []tools.Effect{{Kind: tools.EffectRead, Path: a.Path}}
}

func sampleTool() tools.Tool {
	return tools.New("sample", "A sample.", func(ctx context.Context, a sampleArgs) (tools.Result, error) {
		if a.Path == "boom" {
			return tools.Result{}, errors.New("disk on fire")
		}
		return tools.Result{OK: true, Output: a.Path + "/" + a.Mode}, nil
	})
}

func schemaMap(t *testing.T, tool tools.Tool) map[string]any {
	t.Helper()
	b, err := json.Marshal(tool.Schema())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestNewSchema(t *testing.T) {
	t.Parallel()
	m := schemaMap(t, sampleTool())
	for _, k := range []string{"$ref", "$defs", "$schema", "$id", "definitions"} {
		if _, ok := m[k]; ok {
			t.Errorf("schema has %s: %v", k, m)
		}
	}
	if m["type"] != "object" || m["additionalProperties"] != false {
		t.Errorf("want a closed object, got type=%v additionalProperties=%v", m["type"], m["additionalProperties"])
	}
	req, _ := json.Marshal(m["required"])
	if string(req) != `["path"]` {
		t.Errorf("required = %s, want [\"path\"]", req)
	}
	props := m["properties"].(map[string]any)
	if d := props["path"].(map[string]any)["description"]; d != "Where to look." {
		t.Errorf("path description = %v", d)
	}
	enum, _ := json.Marshal(props["mode"].(map[string]any)["enum"])
	if string(enum) != `["fast","slow"]` {
		t.Errorf("mode enum = %s", enum)
	}
	in := props["inner"].(map[string]any)
	if in["type"] != "object" || in["additionalProperties"] != false {
		t.Errorf("nested struct not expanded and closed: %v", in)
	}
	if r, _ := json.Marshal(in["required"]); string(r) != `["name"]` {
		t.Errorf("nested required = %s", r)
	}
}

func TestNewSchemaNoArgs(t *testing.T) {
	t.Parallel()
	tool := tools.New("ping", "Ping.", func(ctx context.Context, _ struct{}) (tools.Result, error) {
		return tools.Result{OK: true}, nil
	})
	m := schemaMap(t, tool)
	if _, ok := m["properties"].(map[string]any); !ok || m["type"] != "object" {
		t.Errorf("empty args schema = %v", m)
	}
	for _, raw := range []string{"", "null", "{}", " {} "} {
		if _, err := tool.Decode(json.RawMessage(raw)); err != nil {
			t.Errorf("Decode(%q): %v", raw, err)
		}
	}
}

func TestNewPanicsOnNonStruct(t *testing.T) {
	t.Parallel()
	for name, build := range map[string]func(){
		"string arg": func() {
			tools.New("bad", "", func(context.Context, string) (tools.Result, error) { return tools.Result{}, nil })
		},
		"bad name": func() {
			tools.New("bad name!", "", func(context.Context, struct{}) (tools.Result, error) { return tools.Result{}, nil })
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: New did not panic", name)
				}
			}()
			build()
		}()
	}
}

func TestDecodeStrict(t *testing.T) {
	t.Parallel()
	tool := sampleTool()
	tests := []struct {
		name, args, want string // want: substring of the error, "" = ok
	}{
		{"ok", `{"path":"a"}`, ""},
		{"ok all", `{"path":"a","mode":"fast","limit":3,"ratio":0.5,"verbose":true,"tags":["x"],"inner":{"name":"n"}}`, ""},
		{"not json", `{"path":`, "not valid JSON"},
		{"trailing", `{"path":"a"} {}`, "not valid JSON"},
		{"array", `["a"]`, "must be a JSON object, got array"},
		{"missing", `{}`, `argument "path": required but missing`},
		{"unknown", `{"path":"a","colour":"red"}`, `argument "colour": unknown argument (accepted: inner, limit, mode, path, ratio, tags, verbose)`},
		{"wrong type", `{"path":1}`, `argument "path": expected string, got integer`},
		{"null", `{"path":null}`, `argument "path": expected string, got null`},
		{"null array", `{"path":"a","tags":null}`, ""}, // Go's own encoding of a nil slice
		{"float for int", `{"path":"a","limit":1.5}`, `argument "limit": expected integer, got number`},
		{"string for bool", `{"path":"a","verbose":"yes"}`, `argument "verbose": expected boolean, got string`},
		{"enum", `{"path":"a","mode":"medium"}`, `argument "mode": must be one of "fast", "slow"; got "medium"`},
		{"array item", `{"path":"a","tags":["x",2]}`, `argument "tags[1]": expected string, got integer`},
		{"nested missing", `{"path":"a","inner":{}}`, `argument "inner.name": required but missing`},
		{"nested unknown", `{"path":"a","inner":{"name":"n","x":1}}`, `argument "inner.x": unknown argument`},
		{"int overflow", `{"path":"a","limit":1e400}`, `argument "limit"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			inv, err := tool.Decode(json.RawMessage(tt.args))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if len(inv.Effects) != 1 || inv.Effects[0].Path != "a" {
					t.Errorf("effects = %+v", inv.Effects)
				}
				return
			}
			if err == nil {
				t.Fatalf("Decode(%s) succeeded, want error containing %q", tt.args, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Decode(%s) = %q, want it to contain %q", tt.args, err, tt.want)
			}
			var ae *tools.ArgumentError
			if !errors.As(err, &ae) {
				t.Errorf("error %T is not an *ArgumentError", err)
			}
		})
	}
}

func TestRunWrapsErrorWithName(t *testing.T) {
	t.Parallel()
	inv, err := sampleTool().Decode(json.RawMessage(`{"path":"boom"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = inv.Run(context.Background())
	if err == nil || !strings.HasPrefix(err.Error(), "sample: ") || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("Run error = %v, want it wrapped with the tool name", err)
	}
}

func TestResultJSON(t *testing.T) {
	t.Parallel()
	r := tools.Result{OK: true, Output: "hi", ExitCode: 2, Duration: 1500 * 1e6}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"duration_ms":1500`) {
		t.Errorf("marshal = %s", b)
	}
	var back tools.Result
	if err := json.Unmarshal(b, &back); err != nil || back != r {
		t.Errorf("round trip = %+v, %v", back, err)
	}
}

func TestForModelBounded(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", tools.MaxModelOutput*2)
	r := tools.Result{OK: false, Output: big, Stdout: big, Stderr: "err tail", ExitCode: 1, Duration: 5e9}
	s := r.ForModel()
	if len(s) > tools.MaxModelOutput+2*tools.MaxModelStream+1024 {
		t.Errorf("ForModel is %d bytes, not bounded", len(s))
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("ForModel is not JSON: %v", err)
	}
	if m["truncated"] != true || m["exit_code"] != float64(1) || m["stderr"] != "err tail" || m["ok"] != false {
		t.Errorf("ForModel fields = %v", m)
	}
	if _, ok := m["duration_ms"]; ok {
		t.Error("ForModel carries the duration")
	}
	small := tools.Result{OK: true, Output: "done"}.ForModel()
	if small != `{"ok":true,"output":"done"}` {
		t.Errorf("small ForModel = %s", small)
	}
}

// BenchmarkDecode is the cost of checking and decoding one tool call's
// arguments, paid on every call the model makes.
func BenchmarkDecode(b *testing.B) {
	tool := sampleTool()
	raw := json.RawMessage(`{"path":"a","mode":"fast","limit":3,"ratio":0.5,"verbose":true,"tags":["x","y"],"inner":{"name":"n","count":2}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.Decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}
