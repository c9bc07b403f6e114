// Package tools owns what a model can do: the Tool interface, the typed
// constructor New (the JSON schema of the arguments is reflected from a Go
// struct once, with github.com/invopop/jsonschema), the Registry and its
// immutable per-role Views, the Workspace every file tool works through, the
// built-in tools, and the safe_execute Gate that every call passes.
//
// # Arguments
//
// A typed tool's arguments are a struct. Its schema follows these rules:
//
//   - the JSON name of a field is its `json` tag;
//   - a field is required unless its `json` tag says omitempty or omitzero;
//   - `jsonschema:"description=...,enum=a,enum=b"` documents and constrains it
//     (a comma inside a description is written `\\,`, or the text goes in a
//     `jsonschema_description` tag; an unescaped one is refused, not cut);
//   - no other properties are accepted (additionalProperties is false);
//   - nested structs are expanded in place: no $ref, no $defs, so the schema
//     is a plain object that OpenAI function parameters accept.
//
// Decode is strict: invalid JSON, an unknown field, a missing required field
// or a wrong type is an error that names the field, e.g.
// `argument "path": expected string, got number`. JSON null is accepted
// for a slice, map or pointer field (Go decodes it as nil) and refused for
// a string, number or boolean. If the struct (or a pointer
// to it) has a method `Effects() []Effect`, the gate clears those effects
// with the policy before the tool runs (a tool without effects is judged by
// its name alone, under the policy's tools rules); if it has
// `Validate() error`, that runs after decoding and its error goes back to
// the model too.
//
// # The gate
//
// Gate.Call is safe_execute: unknown tool or bad arguments → an error
// result (outcome "invalid"); then policy.CheckTool and, for each effect,
// CheckPath (read, write) or CheckCommand (exec); the most restrictive
// decision wins. "ask" goes to the Confirmer, unless the policy is
// unattended or there is none (then it is a deny); no answer within the
// policy's confirm timeout is a no, and "always" approves the same rule for
// the rest of the Gate's life. Every call yields exactly one Record to each
// Observer.
//
// # Errors
//
// A problem the model can fix (bad arguments, file not found, command failed,
// denied) is a Result with OK false. An infrastructure failure (sandbox down,
// context cancelled) is a Go error wrapped with %w.
//
// # Confinement
//
// Every built-in file tool works through Workspace.Root, an *os.Root, so
// "..", absolute paths and symlinks that point out of the workspace are
// refused by the kernel-backed API, not by string checks alone. Symlinks
// that stay inside are resolved before the gate judges a path, so the policy
// sees the file a call reaches (a link to .env is .env, a file under a link
// to vendor is under vendor); when the tool runs, a path that has changed
// since (a symlink swapped in) is refused. list_files and search_files skip
// what the gate's policy denies reading, whatever folder they were given.
// Commands run only through Workspace.Sandbox, in the folder the policy
// judged their relative arguments from (Effect.Dir). The policy reads a
// command's path arguments as text, so run_command and run_tests also give
// it Workspace.Links (Effect.Links): an argument is judged where its
// symlinks lead too (etc -> /etc is outside; envlnk -> .env is denied), and
// the command is refused if a link it was judged by changed before it ran.
//
// This package must not run a process itself (commands go through sandbox),
// decide policy (it asks policy), or know about roles beyond the names of the
// tools a View holds.
package tools
