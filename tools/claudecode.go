package tools

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"

	"github.com/trioagent/trio/policy"
)

//go:embed claudecode.yaml
var claudeCodeYAML []byte

// claudeTool is one Trio tool's entry of claudecode.yaml: the Claude Code
// tool names a hook matcher may use for it, and the tool_input keys
// Claude Code's hooks read.
type claudeTool struct {
	Names  []string `yaml:"names"`
	Fields map[string]struct {
		From     string `yaml:"from"`
		Absolute bool   `yaml:"absolute"`
	} `yaml:"fields"`
}

type claudeTable struct {
	Tools           map[string]claudeTool `yaml:"tools"`
	PermissionModes map[string]string     `yaml:"permission_modes"`
}

// claudeCode parses claudecode.yaml once; a broken table is a bug every
// hook test catches.
var claudeCode = sync.OnceValues(func() (claudeTable, error) {
	var doc claudeTable
	if err := yaml.UnmarshalWithOptions(claudeCodeYAML, &doc, yaml.Strict()); err != nil {
		return doc, fmt.Errorf("tools: claudecode.yaml: %w", err)
	}
	return doc, nil
})

func claudeToolOf(tool string) claudeTool {
	t, _ := claudeCode()
	return t.Tools[tool]
}

// hookNames are the names a hook matcher matches a tool by: its own, then
// Claude Code's names for it.
func hookNames(tool string) []string {
	return append([]string{tool}, claudeToolOf(tool).Names...)
}

// claudeToolName is the tool's name as Claude Code's hooks read it in
// tool_name: its first Claude Code name, or its own when it has none.
func claudeToolName(tool string) string {
	if n := claudeToolOf(tool).Names; len(n) > 0 {
		return n[0]
	}
	return tool
}

// ClaudePermissionMode is Claude Code's name for p's mode (claudecode.yaml:
// "default" for an interactive policy, "dontAsk" for an unattended one),
// what a hook reads as permission_mode.
func ClaudePermissionMode(p *policy.Policy) string {
	if p == nil {
		return ""
	}
	mode := "interactive"
	if p.Unattended() {
		mode = "unattended"
	}
	t, _ := claudeCode()
	return t.PermissionModes[mode]
}

// hookToolInput is the call's arguments as the hook's tool_input: Trio's
// keys, with Claude Code's beside them (file_path absolute in workspace,
// old_string, new_string...) where the call has their source. Malformed
// arguments go as a JSON string.
func hookToolInput(tool string, raw json.RawMessage, workspace string) json.RawMessage {
	in := argsJSON(raw)
	ct := claudeToolOf(tool)
	if len(ct.Fields) == 0 {
		return in
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(in, &args); err != nil || args == nil {
		return in
	}
	for key, f := range ct.Fields {
		v, ok := args[f.From]
		if _, taken := args[key]; taken || !ok {
			continue
		}
		if f.Absolute {
			var p string
			if json.Unmarshal(v, &p) != nil || p == "" {
				continue
			}
			if !filepath.IsAbs(p) && workspace != "" {
				p = filepath.Join(workspace, p)
			}
			v, _ = json.Marshal(filepath.Clean(p))
		}
		args[key] = v
	}
	out, err := json.Marshal(args)
	if err != nil {
		return in
	}
	return out
}

// hookUpdatedArgs applies a PreToolUse hook's updatedInput to the call's
// arguments raw: the keys whose value differs from what the hook was
// given (its tool_input) replace the call's; a Claude Code key goes to
// the Trio argument it stands for (file_path as a workspace-relative
// path when it lies in the workspace), unless the Trio key changed too,
// which then wins. Keys the hook echoed unchanged are left alone, so a
// hook may answer with the whole tool_input or only what it changes.
func hookUpdatedArgs(tool string, raw, updated json.RawMessage, workspace string) (json.RawMessage, error) {
	var upd map[string]json.RawMessage
	if err := json.Unmarshal(updated, &upd); err != nil || upd == nil {
		return nil, fmt.Errorf("updatedInput is not a JSON object")
	}
	args := map[string]json.RawMessage{}
	if err := json.Unmarshal(normalizeArgs(raw), &args); err != nil || args == nil {
		args = map[string]json.RawMessage{}
	}
	var given map[string]json.RawMessage
	_ = json.Unmarshal(hookToolInput(tool, raw, workspace), &given)
	changed := func(k string) bool {
		old, ok := given[k]
		return !ok || !sameJSON(old, upd[k])
	}
	ct := claudeToolOf(tool)
	for k, v := range upd {
		f, isCC := ct.Fields[k]
		if isCC && f.From != k {
			if !changed(k) {
				continue
			}
			if _, both := upd[f.From]; both && changed(f.From) {
				continue // the Trio key changed as well: it wins
			}
			if f.Absolute {
				v = workspacePath(v, workspace)
			}
			args[f.From] = v
			continue
		}
		if changed(k) {
			args[k] = v
		}
	}
	return json.Marshal(args)
}

// workspacePath turns a JSON string holding an absolute path inside
// workspace into the workspace-relative one the file tools take; any
// other value is returned as it is (the tool refuses a path outside).
func workspacePath(v json.RawMessage, workspace string) json.RawMessage {
	var p string
	if json.Unmarshal(v, &p) != nil || !filepath.IsAbs(p) || workspace == "" {
		return v
	}
	rel, err := filepath.Rel(workspace, filepath.Clean(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return v
	}
	b, _ := json.Marshal(filepath.ToSlash(rel))
	return b
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return reflect.DeepEqual(x, y)
}
