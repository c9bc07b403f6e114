// Package sandbox runs the commands of one run and bounds what they may use.
//
// It owns the [Sandbox] interface that tools run commands through, the
// [Local] implementation, and [CappedBuffer], the bounded output writer every
// implementation shares. The isolating implementations live in
// sandbox/containerd (root) and sandbox/userns (bubblewrap, no root).
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
