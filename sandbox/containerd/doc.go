// Package containerd is the isolating implementation of sandbox.Sandbox: every
// command of a run executes inside one containerd container made for that run.
//
// # Lifecycle
//
// [New] connects (Config.Address, else $TRIO_CONTAINERD_ADDRESS, else
// /run/containerd/containerd.sock; namespace "trio"), removes what earlier
// runs on this host left behind when their process died (containers labelled
// trio.managed=true whose trio.owner process is gone), then creates and
// starts one container for the run. Its first process is a shell that waits
// forever and reaps orphans. Each command is a Task.Exec with its own capped
// stdout and stderr. [Sandbox.Close] kills and deletes the task, the
// container, its snapshot (image mode) and the run's state folder; an
// imported or pulled image stays in containerd as a cache.
//
// # Isolation
//
//   - its own network namespace with loopback only; Limits.Network shares
//     the host's network namespace instead (there is no CNI here);
//   - its own pid, ipc, uts and mount namespaces;
//   - no capabilities, no-new-privileges, containerd's default seccomp
//     profile, the default masked and read-only /proc paths, read-only /sys;
//   - a read-only root: in mode "host" an empty folder with read-only bind
//     mounts of the host toolchain (DefaultToolchainDirs) and of a curated
//     list of /etc entries (DefaultEtcFiles; /etc/passwd, group, hosts and
//     an empty resolv.conf are generated); /root, /home, /var, /run and the
//     rest of /etc are never bound. In mode "image", an image's snapshot;
//   - the workspace read-write at /workspace, tmpfs /tmp and HOME
//     (/home/trio), a per-run cache folder at /cache (GOCACHE,
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
// command the sandbox gives nobody:nogroup every workspace entry that is
// not already theirs (root on the host keeps full access); Close gives every
// entry nobody then owns (adopted or created by a command) back to the
// workspace folder's owner. Runc 1.1 has no idmapped mounts, and ACL masks
// follow the creating process's mode, so neither lets a fixed uid write
// files the host creates later.
//
// # Limits
//
// Memory (and memory+swap where the cgroup supports it), CPU quota and pids
// (DefaultPids when unset) apply to the whole container. runc makes every
// exec'd process a session and process-group leader; a timeout or a
// cancelled context sends SIGKILL to that group from the host (falling back
// to a `kill` exec inside the container when this process may not signal it),
// and when a command ends, what is left of its group is killed too. A process
// that left the group (setsid) survives until Close and can delay Exec by
// about 3 s while it holds the output pipes. Result.OOMKilled is set when the
// container's cgroup counted an OOM kill while the command ran.
//
// This package must not decide policy: it runs what it is given.
package containerd
