// Package userns is the isolating sandbox for people who are not root:
// every command runs in its own bubblewrap (bwrap) sandbox, made of user
// namespaces, with Landlock and seccomp behind the namespaces. It needs
// the bwrap program (Debian's bubblewrap) and a kernel that lets an
// ordinary user make user namespaces; [Available] says whether this
// machine has both, and why not.
//
// # What each command gets
//
//   - new user, mount, pid, network (loopback only), IPC, UTS and (where
//     possible) cgroup namespaces; no user namespace inside
//     (--disable-userns); no capabilities (also when trio runs as root);
//     a new session, so it cannot push input into trio's terminal;
//   - a root that is an empty tmpfs holding: the host toolchain folders
//     read-only (sandbox.DefaultToolchainDirs) and the curated /etc list
//     (sandbox.DefaultEtcFiles), with passwd, group, hosts, hostname and
//     an empty resolv.conf generated; a new /proc and a minimal /dev;
//     private tmpfs /tmp and HOME (/home/trio), each a quarter of the
//     memory limit; the run's own Go build cache at /cache (GOCACHE is
//     /cache/go-build), over the run's trusted builds bound read-only at
//     /.trio/trusted, a tree of hard links to the trusted warm base's
//     files (mode 0444) and what trusted builds added: the go command
//     reads both through Trio's cache program (GOCACHEPROG, package
//     sandbox/internal/gocacheprog, run by the helper below), which looks
//     in the run's cache first and puts everything there, so no command
//     can change the base other runs read, and [Sandbox.Reset] gives an
//     empty cache over the same trusted builds (the standard library
//     stays compiled); the host Go
//     module cache read-only at /go/pkg/mod; the workspace read-write at
//     /workspace. The host's /home, /root, /run, /var and the rest of /etc
//     are not there, so neither are ~/.ssh, ~/.config, an SSH agent socket
//     or cloud credentials;
//   - the path rules (RunSpec.PathRules) laid out by sandbox.PlanLayout
//     before every command: hidden paths covered by an empty read-only file
//     or folder, read-only paths bound read-only onto themselves;
//   - Landlock (ABI 7 here, best effort below): the process tree may read
//     and execute what it sees but write only in /workspace, /tmp, HOME,
//     /cache and /dev, may not signal or reach the abstract UNIX sockets of
//     processes outside it, and with Config.DenyTCP may not bind or connect
//     TCP at all;
//   - a seccomp filter refusing mount and the new mount API, unshare,
//     setns, clone with namespace flags (clone3 answers ENOSYS), keyctl,
//     bpf, perf_event_open, ptrace and process_vm_*, kexec, module loading,
//     io_uring, file handles and host-wide clock, swap and reboot calls,
//     and killing any process that makes a system call of another
//     architecture;
//   - rlimits: RLIMIT_NPROC (Limits.Pids, DefaultPids when unset; counted
//     in the command's own user namespace), RLIMIT_DATA (Limits.Memory, per
//     process), RLIMIT_FSIZE (what is left of Limits.Disk), no core dumps;
//   - an environment from an allow-list (sandbox.BaseEnv plus the Go
//     settings for the folders above), never the host's. bwrap itself runs
//     with an empty environment.
//
// # Trusted builds
//
// A go test, go vet or go build run as its own argv with only the flags
// sandbox.TrustedGo knows, no environment of its own and no started
// process alive, in a workspace without assembly, C or cgo sources
// (sandbox.TrustedGoWorkspace), is a trusted build. Its go command's
// GOCACHE is the trusted builds (/.trio/trusted, bound writable for it
// alone, in its Landlock domain's writable folders), a plain disk cache
// with no cache program in between, whose base entries it only reads
// (they are mode 0444, and the go command changes no file's mode). When
// the build has ended and its processes are gone, the tree's Check keeps
// what it added only when it has the cache's form (an output whose
// SHA-256 is its name, an action entry of the cache's format) and puts
// back the mode and time of a base file that changed; nothing else ever
// writes there. The go command,
// its compilers, its linker and vet run as the command; the programs it
// builds and runs (test binaries) go through -exec=/.trio/nest, the helper
// again, which puts them in a Landlock domain nested in the command's:
// they may write only a /tmp folder of their own, HOME, /dev and the
// folder they were linked in (go test's test log), so they cannot write
// the workspace, the trusted builds or the go command's work folder, and
// Landlock keeps them from ptracing or signalling the go command or
// opening its descriptors in /proc. So the trusted builds hold what the
// toolchain compiled from the workspace's sources and the results of the
// tests as they ran, and the Critic's checks reuse them (the compiled
// packages and the cached test results) through Reset, where they may
// read nothing an ordinary command wrote. Tests in a trusted build cannot
// write the workspace: they write into t.TempDir(). A test binary can
// still lie about its own result (it is the Worker's code); it cannot
// make the go command record a result for another binary. A trusted build
// assumes that nothing writes the workspace while it runs: Exec calls are
// serialised and the agent runs its tools one at a time, but an embedder
// that writes the workspace from another goroutine during Exec must not.
// The go command gets -buildvcs=false (it would run git, and git the
// workspace's hooks, outside the nest); a workspace symlink that dangles
// or leads out of the workspace makes every command ordinary; and before
// each trusted build a file whose modification time is not its change
// time (set back by touch -d) is re-dated, since go test knows the files
// a test read by size and modification time alone. The containerd kind
// has trusted builds too, on an overlay over the same base.
//
// # How Landlock gets inside
//
// Landlock restricts the process that asks and its children, so trio must
// not ask for itself. bwrap starts the running executable (bound read-only
// at /.trio/init from /proc/self/exe) with a marker argument; the init
// function of the small helper package sandbox/internal/confine (few imports,
// so it runs before a large program's other initialisers) recognises it
// before main runs, applies Landlock and the rlimits, and execs the
// command. Any program that links this
// package (trio, an embedder's binary, a test binary) is therefore its own
// helper: an embedder calls nothing from main. The helper's own failure
// is a sandbox error, never the command's result.
//
// # Lifetime and limits
//
// Nothing outlives its command: the command runs in a fresh pid namespace
// whose init is bwrap, and when the command's main process exits, on
// timeout and on cancellation (bwrap is killed, and --die-with-parent
// takes the namespace's init with it) the kernel kills every process left
// in it. Exec calls are serialised, so no command's process exists while
// the next command's layout is planned and mounted (a process Start
// started may: see below). Close removes the
// state folder (build cache, generated /etc) and the trusted builds'
// folder beside the warm base; after a kill -9 of their owner, the next
// New on this host removes them. Nothing else is left.
//
// The disk limit is measured: before, during (every 100 ms or twenty
// times the walk's own time, whichever is longer) and after each command,
// the workspace's growth since [New] plus the build cache is summed from
// allocated blocks (at least 4 KiB an entry, so empty files count); past Limits.Disk the command is killed and its result
// says "disk limit". RLIMIT_FSIZE stops any single file at what is left.
// Between two measurements a command can overshoot by what it writes in
// that interval.
//
// [Sandbox.Start] (sandbox.Starter) runs a long-lived process, such as a
// stdio MCP server, confined as a command is (its own bwrap sandbox, the
// path rules planned when it starts, Landlock, seccomp, the rlimits, the
// disk limit watched while it runs), with stdin and stdout connected and
// no timeout, in a pid namespace of its own, so commands and it cannot
// see or signal each other. Stop and Close kill the namespace's first
// process through a pidfd and wait on it: the kernel ends every other
// process of the namespace before that one. What the rules hide and
// appeared while it ran is removed when it stops, as after a command.
//
// # What it cannot enforce
//
//   - CPU quota (Limits.CPUs) and a memory limit for the command as a
//     whole: both need a cgroup, which an ordinary user has only where
//     systemd delegates one; RLIMIT_DATA bounds each process, not their sum,
//     and a command that passes it sees allocation failures, not an OOM
//     kill (Result.OOMKilled stays false);
//   - read-only and hidden paths inside the workspace are mounts only:
//     Landlock cannot carve a path out of a folder it lets a command write;
//   - what the kernel itself exposes to any process (/proc/cpuinfo, the
//     kernel version, its own loopback), and denial of service through
//     the kernel's shared resources.
//
// This package must not decide policy: it runs what it is given.
package userns
