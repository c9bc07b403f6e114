// Package demo holds Trio's offline demo: a goal (a Markdown-to-HTML
// converter in Go, with its command and tests) and the script the scripted
// model replays for it. In the script the first build has a real bug
// (greedy bold spans) that the acceptance tests catch when they really run
// in the sandbox; the Critic reports it, the Worker states its analysis and
// repairs it, and every check passes.
//
// The files are embedded, so `trio demo` needs nothing on disk. Provider
// serves the script over loopback to the real OpenAI-compatible provider
// (ServeScript does so for any script, through llm/replay); its cursor counts only the replies
// the client received, so an interrupted demo resumes as is.
package demo

import (
	"embed"
	"strings"

	"github.com/trioagent/trio/llm"
)

// FS holds goal.md and script.yaml.
//
//go:embed goal.md script.yaml
var FS embed.FS

// ScriptName is the script's name in error messages.
const ScriptName = "examples/demo/script.yaml"

// Goal returns the demo's goal text.
func Goal() string {
	b, err := FS.ReadFile("goal.md")
	if err != nil {
		panic("demo: goal.md is not embedded: " + err.Error()) // a build error
	}
	return strings.TrimSpace(string(b))
}

// Script returns the demo's model script, as YAML.
func Script() []byte {
	b, err := FS.ReadFile("script.yaml")
	if err != nil {
		panic("demo: script.yaml is not embedded: " + err.Error())
	}
	return b
}

// Model returns a fresh scripted model that replays the demo.
func Model() (*llm.Scripted, error) {
	return llm.ParseScript(ScriptName, Script())
}
