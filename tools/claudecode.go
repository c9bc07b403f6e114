package tools

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/goccy/go-yaml"
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

// claudeTools parses claudecode.yaml once; a broken table is a bug every
// hook test catches.
var claudeTools = sync.OnceValues(func() (map[string]claudeTool, error) {
	var doc struct {
		Tools map[string]claudeTool `yaml:"tools"`
	}
	if err := yaml.UnmarshalWithOptions(claudeCodeYAML, &doc, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("tools: claudecode.yaml: %w", err)
	}
	return doc.Tools, nil
})

// hookNames are the names a hook matcher matches a tool by: its own, then
// Claude Code's names for it.
func hookNames(tool string) []string {
	t, _ := claudeTools()
	return append([]string{tool}, t[tool].Names...)
}

// hookToolInput is the call's arguments as the hook's tool_input: Trio's
// keys, with Claude Code's beside them (file_path absolute in workspace,
// old_string, new_string...) where the call has their source. Malformed
// arguments go as a JSON string.
func hookToolInput(tool string, raw json.RawMessage, workspace string) json.RawMessage {
	in := argsJSON(raw)
	t, _ := claudeTools()
	ct, ok := t[tool]
	if !ok || len(ct.Fields) == 0 {
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
