// Command trio is Trio's command-line tool: it runs a goal through the
// Planner, Worker and Critic (trio run), runs the offline demo (trio demo),
// resumes and inspects run folders, lists the tools' schemas and checks and
// explains policy files.
//
// It owns the CLI surface only: flags and trio.yaml (package config),
// choosing the model endpoint, turning the configuration into agent options
// (the sandbox is described with agent.WithSandboxConfig and opened by the
// agent), terminal confirmation prompts (prompt.go), progress display
// (progress.go) and exit codes. How a run was started is kept in its
// checkpoint with agent.WithMetadata and read back with agent.Inspect.
// Everything a run does is the library's (agent, tools, policy, sandbox,
// llm); cmd/trio must not hold logic the library lacks.
//
// Exit codes: 0 success; 1 the checks failed or the run gave up with a
// reason; 2 a budget was spent; 3 configuration or usage error; 130
// interrupted (resumable with trio resume). trio policy explain exits 0
// (allow), 10 (ask) or 11 (deny).
package main
