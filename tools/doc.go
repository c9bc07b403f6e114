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
// # Hard links
//
// A hard link is a second name of one file, and the policy judges names: a
// link made to .env (by code an allowed command ran, say) would show .env's
// content under a name the policy allows. So before a tool shows what a
// regular file holds, a file with more than one link (st_nlink > 1) is
// looked up by device and inode among every file in the workspace (denied
// folders included, symlinks not followed), and its content is refused
// when
//
//   - another of its names is one the policy denies reading (or that
//     Workspace.Visible hides): a result marked denied that names the path,
//     the other name and its rule. This is what sandbox.PlanLayout lays out
//     for commands (a second name of a hidden file is hidden too), so a
//     second name means the same to both;
//   - fewer of its names are found in the workspace than it has links: an
//     error result. The others lie outside the workspace (linked from a
//     package cache, or from a host file by code the local sandbox ran), in
//     a folder the walk cannot read, or past the 200,000 entries one look-up
//     reads; no path rule judges them there. Such a file is refused as a
//     symlink that leads out is: the file tools show only content whose
//     every name the policy has judged. (pnpm and uv link packages in from
//     their caches; read those through a command, which the sandbox
//     confines.)
//
// read_file, edit_file (whose matching would show the content a bit at a
// time) and search_files (which skips such files and says how many)
// refuse; list_files leaves out a second name of a denied file, as it
// leaves out the denied file. write_file and delete_file are not refused: a
// write replaces the name with a new file (it renames over it) and a
// deletion removes the name, so neither reaches the shared content, and
// both are how a refused name is put to other use.
//
// # Hooks and MCP
//
// Hooks (NewHooks, WithHooks) run the user's hook programs around each call
// on Claude Code's contract; MCP tools (ConnectMCP) are the tools of MCP
// servers, named mcp__<server>__<tool>, checked against the server's schema
// and passed through the gate like any other, where one that no tools rule
// names is "ask" (its effects are unknown). A stdio MCP server with
// MCPServer.Sandbox starts through that sandbox.Starter, and
// Gate.ConnectMCP first judges its command line with the command rules.
// Hook programs and stdio MCP servers without a Sandbox (host: true) are
// the two processes this package starts itself: they are the user's own
// declared programs, not the model's commands, and run on the host with
// the sandbox's allow-listed environment (see the README).
//
// Apart from those, this package must not run a process itself (commands go
// through sandbox), decide policy (it asks policy), or know about roles
// beyond the names of the tools a View holds.
package tools
