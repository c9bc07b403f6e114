// Package tooldef holds the provider-neutral tool definition, which package
// llm offers as llm.ToolDef and package tools yields from its views. It is
// a leaf so that tools can build definitions without linking the model
// SDKs that llm's providers use; it must import nothing of Trio's.
package tooldef

import "encoding/json"

// ToolDef is a tool offered to a model: its name, what it is for, and the
// JSON schema of its arguments. It is provider-neutral; each provider
// converts it to its API's form (an OpenAI function tool, an Anthropic
// tool with an input_schema) when it sends the request.
type ToolDef struct {
	// Name is what the model calls the tool by (^[a-zA-Z0-9_-]{1,64}$ for
	// the APIs Trio speaks).
	Name string `json:"name"`
	// Description tells the model what the tool does and when to use it.
	Description string `json:"description,omitempty"`
	// Parameters is the JSON schema of the arguments, an object schema;
	// empty means the tool takes no arguments. Callers sharing a ToolDef
	// must not change its bytes.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}
