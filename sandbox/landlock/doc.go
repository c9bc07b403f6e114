// Package landlock is the isolating sandbox that needs nothing installed,
// no root and no namespaces: each command runs confined by Landlock and
// seccomp, applied in process by Trio's own helper (this executable,
// re-executed; package sandbox/internal/landlockexec). It is for the machines
// where neither containerd nor bubblewrap's user namespaces run: Docker
// and CI containers, hosts whose AppArmor restricts unprivileged user
// namespaces, machines without bubblewrap. [Available] says whether this
// kernel has Landlock.
//
// # What each command gets
//
//   - Landlock (best effort to the kernel's ABI): it may read and execute
//     only the workspace, the host toolchain folders
//     (sandbox.DefaultToolchainDirs), the curated /etc list plus passwd,
//     group and hosts, the Go module cache, the warm build cache, /proc
//     and a few device files; it may write only the workspace (less its
//     read-only paths: see below), and the sandbox's own HOME, TMPDIR and
//     build cache, folders of the state folder (the host's /tmp is not
//     granted); no TCP bind or connect (ABI 4); no signal to, and no
//     abstract UNIX socket of, a process outside the command (ABI 6);
//   - the seccomp filter of the userns kind (package
//     sandbox/internal/syscallfilter) and socket(2) for AF_UNIX only, so
//     no network at all, the host's loopback included;
//   - no new privileges, and no capability even when trio runs as root;
//   - rlimits: RLIMIT_DATA (Limits.Memory, per process), RLIMIT_FSIZE
//     (what is left of Limits.Disk), no core dumps, and for an ordinary
//     user RLIMIT_NPROC: Limits.Pids (sandbox.DefaultPids when unset)
//     above the tasks the user runs when the command starts, since the
//     kernel counts them per user across the host;
//   - an environment from an allow-list (sandbox.BaseEnv), never trio's;
//   - a new session, so it cannot push input into trio's terminal.
//
// The helper's first stage is a child subreaper: orphans of the command
// (setsid children whose parent exited) are handed to it, and when the
// command's main process exits, on timeout and on cancellation (SIGTERM
// to the helper, also sent when trio dies) it kills and reaps every
// process left. The helper confines nothing of its own: its second
// stage confines the one thread that execs the command, so the command
// runs in a Landlock domain the helper is not in, and from ABI 6 it
// cannot signal the helper, not even one of its threads.
//
// Each command's helper is started before the command is known, once
// the previous command has ended (and by [New] for the first): the two
// starts of this executable, most of a command's cost, then happen while
// no command waits, and the command only wakes the second stage, which
// reads it (folder, environment, rules, limits, argv) from a pipe and
// confines it as above. Nothing is decided early; while it waits, the
// helper holds nothing of the workspace, and Close ends it.
//
// # Started processes
//
// [Sandbox.Start] (a sandbox.Starter: stdio MCP servers, background
// processes) confines a long-lived process as Exec does its commands,
// with the rules planned when it starts, the same rlimits and no timeout,
// and a HOME, TMPDIR and build cache of its own that Exec's commands
// cannot reach (nor it theirs); from ABI 6 neither can signal the other.
// It returns once the process is confined and its program found. Its
// helper is a child subreaper too: Stop, Close and trio's death kill
// every process it started, and Stop returns once they are gone. The
// disk limit is watched while it runs; what it made that the rules hide
// is removed when it stops. Its program may lie anywhere on the host:
// the program's folder (found on the host's PATH when the commands' does
// not find it), the folder its symlinks lead to, and an interpreter's
// script folder are readable for it, never writable (see
// sandbox.ResolveProgram, which refuses the home folder and the like).
//
// # What it does not enforce that userns does
//
//   - denied paths (paths.deny) inside the workspace: Landlock only
//     grants, it cannot take a path out of a folder a command may read.
//     [New] and every Exec refuse a workspace that holds one
//     ([ErrDeniedPath]), naming it; what a command creates that the rules
//     deny (a fresh .git) is removed when it ends, as in userns;
//   - read-only paths are enforced, but only by granting write entry by
//     entry: a folder that holds a read-only path (the workspace itself,
//     for tests/**) takes no new entries and loses none;
//   - the file system layout: commands see the host's paths (the
//     workspace is its host path, HOME and TMPDIR are folders of the
//     state folder), and /proc shows the host's other processes (not
//     their environment or memory: Landlock refuses ptrace access);
//   - pids for root (RLIMIT_NPROC does not bind root), CPU quota and a
//     memory limit for a command as a whole (no cgroup);
//   - below Landlock ABI 6, a command can signal this user's other
//     processes, its helper included: killing the helper lets its
//     background processes outlive it;
//   - the disk limit is RLIMIT_FSIZE per file and a measurement after
//     each command, with no watch while it runs.
//
// This package must not decide policy: it runs what it is given.
package landlock
