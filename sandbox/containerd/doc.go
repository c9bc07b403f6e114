// Package containerd is the isolating implementation of sandbox.Sandbox: every
// command of a run executes inside a containerd container made for that
// run (a new one after each Reset: see Boxes).
//
// # Lifecycle
//
// [New] connects (Config.Address, else $TRIO_CONTAINERD_ADDRESS, else
// /run/containerd/containerd.sock; namespace "trio"), removes what earlier
// runs on this host left behind when their process died (containers labelled
// trio.managed=true whose trio.owner process is gone, and state folders
// whose labels.json names such an owner), then prepares the run's state
// folder; the first command creates and starts the run's container. Its
// first process (init) is this
// executable (a copy only init's uid may read) as Trio's exec server
// (package internal/execd): it reaps
// orphans, and it waits on a FIFO only this process holds open for
// writing, so when this process dies, init exits and the kernel ends every
// process in the container. Each command is forked by init at the host's
// request, over a UNIX socket in a folder only init's uid may enter (and
// init accepts only uid 0, the host, as its peer), with pipes of this
// process as its stdout and stderr: a fork and an exec inside the
// container, a few milliseconds, where runc's exec costs 20 to 100 ms.
// Where this executable cannot run in the container (an image root and a
// dynamically linked executable), init is a shell and each command a
// Task.Exec. Commands run one at a time. Before each, RunSpec.PathRules are laid
// out again (sandbox.PlanLayout); a changed layout, or a dead init, makes
// the container be recreated first. [Prune] removes what dead runs left. [Sandbox.Close] kills and deletes the task, the
// container, its snapshot (image mode) and the run's state folder; an
// imported or pulled image stays in containerd as a cache.
//
// # Isolation
//
//   - its own network namespace with loopback only; Limits.Network shares
//     the host's network namespace instead (there is no CNI here);
//   - its own pid, ipc, uts and mount namespaces;
//   - no capabilities in any set (init's forking thread, which holds
//     CAP_SETUID, CAP_SETGID and, where the host has it, CAP_SYS_RESOURCE,
//     has empty bounding, inheritable and ambient sets, so execve leaves a
//     command none), no-new-privileges, containerd's default seccomp
//     profile, the default masked and read-only /proc paths, read-only /sys;
//   - a read-only root: in mode "host" an empty folder with read-only bind
//     mounts of the host toolchain (DefaultToolchainDirs) and of a curated
//     list of /etc entries (DefaultEtcFiles; /etc/passwd, group, hosts and
//     an empty resolv.conf are generated); /root, /home, /var, /run and the
//     rest of /etc are never bound. In mode "image", an image's snapshot;
//   - the workspace read-write at /workspace, with RunSpec.PathRules laid out
//     over it: an empty, root-owned, mode-0 file or folder bound read-only
//     over each hidden entry, a read-only bind of each read-only one; a
//     hidden path a command creates is removed after it;
//   - tmpfs /tmp and HOME (/home/trio), an eighth of the memory limit each,
//     a per-run cache folder at /cache (GOCACHE,
//     XDG_CACHE_HOME), the host Go module cache read-only at /go/pkg/mod
//     with GOPROXY=off, so offline `go test` works;
//   - a non-root uid/gid (see below);
//   - an environment from an allow-list (sandbox.BaseEnv plus the Go
//     settings above), never the host's: no API keys inside.
//
// # Which user
//
// Config.UID/GID when set. Otherwise the workspace owner, when that is not
// root: nothing on the host changes. When the workspace belongs to root
// (Trio running as root), commands run as nobody (65534), and before each
// command the sandbox gives nobody:nogroup every writable workspace entry
// that is not already theirs (root on the host keeps full access); Close,
// and a sweep of a dead run, give every entry nobody then owns back to the
// workspace folder's owner. These walks go through an os.Root, so no
// symlink leads them outside the workspace, and run only while no command
// process is alive. Runc 1.1 has no idmapped mounts, and ACL masks follow
// the creating process's mode, so neither lets a fixed uid write files the
// host creates later. Init runs as InitID, which no command has.
//
// # Limits
//
// Memory (and memory+swap where the cgroup supports it), CPU quota and pids
// (DefaultPids when unset) apply to the whole container. When a command
// ends (exit, timeout, cancellation, disk limit), every process in the
// container but init's is killed from the host through the container's
// cgroup, frozen while it is signalled, before Exec returns: nothing
// outlives its command. Init and its FIFO reader have oom_score_adj -1000.
// Limits.Disk is measured (the workspace's growth plus /cache) every
// diskPoll while a command runs, and RLIMIT_FSIZE caps any one file at it;
// Result.DiskExceeded says a command was stopped by it. Result.OOMKilled is
// set when the container's cgroup counted an OOM kill while the command ran.
//
// # Started processes
//
// [Sandbox.Start] (sandbox.Starter) runs a long-lived process, such as a
// stdio MCP server, in a sibling container of the run's: the same spec
// (root, mounts, the path rules planned when it starts, uid, network,
// seccomp, no capabilities), a cgroup of its own with the same memory, CPU
// and pids limits, its own tmpfs /tmp and HOME and its own cache folder
// (so Reset still keeps what it wrote from the Critic's checks), and its
// own exec server as init, which starts the process with stdin and stdout
// on pipes to this process (the three descriptors ride on the request)
// and no timeout. The run's commands are in another pid namespace: the
// reaper after each, a kill -9 -1 and Reset do not reach it, nor it them.
// Limits.Disk counts what it writes and kills it past the limit. When it
// exits, or on Stop or Close, the sibling container is removed with
// everything in it, and what the rules hide and appeared while it ran is
// removed as after a command. Siblings carry the run's labels, so the
// dead-run sweep removes them too. While a command's (or another started
// process's) layout is planned and mounted and a lent workspace adopted,
// started processes are frozen: runc follows a bind's source on the host,
// so one swapping a planned folder for a symlink would get the symlink's
// target bound. A started process's own layout is not re-planned while it
// runs.
//
// # Trusted builds
//
// As in the userns kind, a command that is a trusted build
// (sandbox.TrustedGo: go test, vet or build as its own argv, with listed
// flags only, no environment of its own, no started process, a workspace
// sandbox.TrustedGoWorkspace accepts) stores what it compiles and the test
// results it gets in the run's trusted builds, which Reset keeps: the
// Critic's checks reuse them. The go command's GOCACHE is
// /.trio/gocache/go-build, a plain disk cache: for the build's time only,
// the host mounts an overlay there (the trusted builds and the warm base
// below, read-only; a new upper layer the go command writes), and mount
// propagation brings it into the container (/.trio/gocache is a
// non-recursive slave bind of a shared mount point, so a box that starts
// meanwhile keeps no copy). Between builds the folder is empty and no
// command can write it. When the build's processes are gone
// the host unmounts the overlay and moves into the trusted builds each
// output whose content is its ID and each action entry of the cache's
// format (gocacheprog.Import). The nest its test binaries run through
// (go test -exec: a nested Landlock domain that may write only a /tmp
// folder of its own, HOME, /dev and the folder go linked the binary in,
// so not the cache, and that cannot signal or trace the go command) is
// this executable, bound at /.trio/init as a copy commands may execute
// but not read (root's, mode 0111), which refuses to run the program's
// main. Trusted builds need the exec server, the warm base (mode "host"),
// Landlock and a mount point this process can share with containerd's
// (the same mount namespace); otherwise every command is ordinary.
//
// # Boxes
//
// A run's commands run in a container, a box, that the first command
// starts (so that it follows the layout the rules select then, not New's:
// an agent's plan and Critic change it before the Worker's first command).
// They move to a new box at Reset, after an OOM kill or init's death, and
// when the layout changes: a new /tmp, HOME and cache layer. The second
// command in a box starts a spare box in the background with the current
// layout, taken when the layout is still the workspace's (entries
// compared by inode too), so Reset costs no container start on the way
// to the Critic's checks; a box that runs one command (the Critic's last
// check) starts none. The boxes left behind are removed in the
// background.
//
// This package must not decide policy: it runs what it is given.
package containerd
