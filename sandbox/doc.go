// Package sandbox runs the commands of one run and bounds what they may use.
//
// It owns the [Sandbox] interface that tools run commands through, the
// registry of kinds ([Register], [Open], [Available], [Prune]), the errors
// every kind wraps ([ErrUnavailable], [ErrConfig], [Error]), the paths and
// defaults the isolating kinds share, the [Local] implementation, and
// [CappedBuffer], the bounded output writer every implementation shares.
// The isolating implementations live in sandbox/containerd (root),
// sandbox/userns (bubblewrap, no root) and sandbox/landlock (nothing to
// install, no namespaces).
//
// # Opening a sandbox
//
// Callers name a kind and give the per-run part, as database/sql names a
// driver; the kind's own settings ride along in RunSpec.Settings:
//
//	sb, err := sandbox.Open(ctx, "userns", sandbox.RunSpec{
//		Workspace: ws, Limits: limits, PathRules: rules,
//		Settings:  userns.Config{Bwrap: "/usr/bin/bwrap"}, // nil: defaults
//	})
//
// A kind's New takes the same RunSpec (userns.New(ctx, spec)) and returns
// its own type, for an embedder that wants what only that kind has
// (Reset). Per-run values live in the RunSpec alone: no kind's Config
// has a workspace, limits, path rules, run id or progress.
//
// A kind is available once its package is imported (its init function
// registers it). Which kind "auto" means is decided in one place,
// agent.ChooseSandbox, which every caller uses. A failure is an [*Error]
// naming the kind and the step; errors.Is(err, ErrUnavailable) says the
// kind cannot run here, whatever the kind.
//
// # Adding a kind
//
// A kind is one folder plus one registration; no other kind and no caller
// changes, and kinds never import each other (what they share lives here):
//
//  1. Make sandbox/<kind> with a doc.go saying what it enforces and, as
//     exactly, what it does not that the others do.
//  2. Give it a Config for its own settings only (what one run gives
//     every kind is in [RunSpec]), a New(ctx, RunSpec) that takes its
//     Config from RunSpec.Settings (nil means defaults; a value of
//     another type is an ErrConfig), and a type satisfying [Sandbox] (and [Starter], when it can run a stdio MCP server;
//     [Resetter], when it can start over between commands). Info lists
//     every limit of [Limits] in Enforced or NotEnforced, each
//     NotEnforced entry starting with the limit's name ("cpus: ...").
//  3. Wrap [ErrUnavailable] in its "cannot run here" errors and
//     [ErrConfig] in its bad-settings errors.
//  4. Register a [Driver] from init: Register("<kind>", driver{}), whose
//     Open calls New; it may also be a [WorkspaceChecker] (it cannot run on some
//     workspaces) and a [Pruner] (its sandboxes leave state on the host
//     when their process is killed; trio sandbox prune then finds it).
//  5. Pass the shared conformance suite of internal/sandboxtest, as root
//     and as an ordinary user (see how sandbox/userns and
//     sandbox/landlock re-run their tests as nobody): Run (or RunWith)
//     for Exec, every effect row it claims; for a Starter, RunStarter
//     (or RunStarterWith): pipes, Stop and Close killing every process,
//     no kill between its commands and started processes, an MCP server
//     answering tools/list, hidden paths and the disk limit. A row it
//     cannot pass is skipped by name with the reason, and its Info says
//     so in NotEnforced. Its tests fail, not skip, when CI=true and what
//     the kind needs is missing.
//  6. For auto to try it, add it to agent's autoKinds in its place, and
//     import it from agent so that it registers.
//
// [Local] does NOT isolate. A command it runs is an ordinary process of the
// host user: it can read and write anything that user can, reach the network
// and see every other process. Local exists for development and for machines
// without containerd; it only applies what a plain process can be given:
//
//   - a process group per command, killed as a whole (SIGKILL) on timeout,
//     on cancellation and when the command's main process exits, so
//     background children do not outlive their command;
//   - stdout and stderr each capped at [Limits].Output with a truncation
//     marker, using bounded memory however much the command writes;
//   - an environment built from an allow-list (see [Local] for the list),
//     never the host's environment, so API keys do not leak into commands;
//   - a working directory inside the workspace.
//
// [Local.Start] (a [Starter], for stdio MCP servers) gives a long-lived
// process the same: its own process group, killed whole by Stop or Close,
// the same environment and working folder, and the end of its stderr kept.
//
// Memory, CPU, pids and network limits are not enforced by Local.
//
// This package must not decide policy: whether a command may run at all is
// the policy package's decision, made before Exec is called.
package sandbox
