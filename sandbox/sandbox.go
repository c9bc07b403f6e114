package sandbox

import (
	"context"
	"io"
	"strings"
	"time"
)

// Sandbox runs commands for one run, confined to its workspace.
type Sandbox interface {
	// Exec runs one command and waits for it. A command that runs and fails
	// (non-zero exit, timeout, out of memory) is a Result, not an error; an
	// error means the sandbox itself failed.
	Exec(ctx context.Context, cmd Command) (Result, error)
	// Info says what the sandbox is and whether it isolates.
	Info() Info
	// Close stops and removes everything the sandbox made.
	Close() error
}

// Info describes a sandbox.
type Info struct {
	Kind     string // "local", "containerd" or "userns"
	Isolated bool
	// WorkspaceDir is the workspace as commands see it ("/workspace" in a
	// container, the host path for local).
	WorkspaceDir string
	// Enforced says, one short phrase each, which limits and walls hold
	// and by what mechanism ("pids 512 (RLIMIT_NPROC)"); NotEnforced which
	// of the Limits given do not, and why. Both may be empty for a kind
	// that does not say.
	Enforced    []string `json:"enforced,omitempty"`
	NotEnforced []string `json:"not_enforced,omitempty"`
}

// Summary is one line for reports: the kind, whether it isolates, and what
// it enforces when it says.
func (i Info) Summary() string {
	s := i.Kind
	if !i.Isolated {
		s += " (not isolated)"
	}
	if len(i.Enforced) > 0 {
		s += "; enforced: " + strings.Join(i.Enforced, ", ")
	}
	if len(i.NotEnforced) > 0 {
		s += "; not enforced: " + strings.Join(i.NotEnforced, ", ")
	}
	return s
}

// Command is one process to run.
type Command struct {
	// Argv is the program and its arguments; never interpreted by a shell
	// unless Argv itself names one.
	Argv []string
	// Dir is the working directory relative to the workspace ("" or ".").
	Dir string
	// Env adds KEY=VALUE entries on top of the sandbox's allow-listed base.
	Env []string
	// Timeout overrides Limits.Timeout when positive.
	Timeout time.Duration
	// Check marks one of the Critic's checks: nothing the Worker's code
	// wrote into a build cache, in an earlier command or in this one, may
	// change what it builds or runs. The Worker's code runs inside a check
	// (its tests do), and could otherwise plant a compiled package or a
	// passing test result for a package the check builds after it. The
	// isolating kinds give a check CheckEnv's build caches, and may let
	// it read the compiled packages of trusted builds (see TrustedGo),
	// whose test binaries could not write them. Every kind, local
	// included, runs a check's tests again (no cached test result: a
	// test may depend on what go test does not record) and keeps Python
	// from loading bytecode (see CheckEnv).
	Check bool
}

// Limits bound what one run's commands may use.
type Limits struct {
	Timeout time.Duration // per command
	Memory  int64         // bytes, whole run's container (or per command locally where enforced)
	CPUs    float64
	Pids    int64
	Output  int64 // bytes kept of each of stdout and stderr
	// Disk bounds, in bytes, what a run may add to the host's disk: the
	// workspace's growth since the sandbox opened plus its cache folders.
	// Zero means no limit. Enforced by isolating sandboxes only.
	Disk    int64
	Network bool
}

// Result is what one command did.
type Result struct {
	ExitCode        int    `json:"exit_code"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated,omitempty"`
	StderrTruncated bool   `json:"stderr_truncated,omitempty"`
	TimedOut        bool   `json:"timed_out,omitempty"`
	OOMKilled       bool   `json:"oom_killed,omitempty"`
	// DiskExceeded says the command was killed because the run's writes
	// passed Limits.Disk.
	DiskExceeded bool          `json:"disk_exceeded,omitempty"`
	Duration     time.Duration `json:"duration"`
}

// Truncated reports whether either stream was cut.
func (r Result) Truncated() bool { return r.StdoutTruncated || r.StderrTruncated }

// Resetter is a Sandbox that can start over between two commands, so that
// nothing earlier commands left outside the workspace (temporary files,
// HOME, a build cache's writable layer) reaches later ones. The agent
// resets before the Critic's checks, so that the Worker's code cannot
// prepare what they run.
type Resetter interface {
	Reset(ctx context.Context) error
}

// Starter is a Sandbox that can start a long-lived process whose standard
// input and output stay connected to the caller, such as a stdio MCP
// server. The process is confined as Exec's commands are (the same walls,
// the same uid, the same limits) except for Limits.Timeout: it runs until
// Stop, until it exits, or until the sandbox closes. Exec's reaping of
// leftover processes and Reset do not touch it, and it cannot signal or
// trace the commands Exec runs (nor they it).
type Starter interface {
	// Start's ctx bounds the start only; once Start has returned, the
	// process lives on after ctx ends.
	Start(ctx context.Context, cmd Command) (Process, error)
}

// Process is a process a Starter started.
type Process interface {
	// Stdin and Stdout are its standard input and output. Closing Stdin
	// is the polite way to ask it to end.
	Stdin() io.WriteCloser
	Stdout() io.ReadCloser
	// Stderr is the end of what it wrote on standard error so far, at
	// most Limits.Output bytes (4 KiB when Limits.Output is zero).
	Stderr() string
	// Wait waits until it has ended and says how: ExitCode (-1 when a
	// signal ended it), OOMKilled, DiskExceeded, Duration; Stdout and
	// Stderr of the Result are empty. An error means the sandbox failed.
	Wait() (Result, error)
	// Stop ends it and everything it started, and waits for them. It may
	// be called more than once, and after Wait.
	Stop() error
}

// Limit names: each Enforced or NotEnforced entry about one limit of
// Limits starts with its name ("cpus: needs a cgroup").
const (
	LimitTimeout = "timeout"
	LimitOutput  = "output"
	LimitMemory  = "memory"
	LimitCPUs    = "cpus"
	LimitPids    = "pids"
	LimitDisk    = "disk"
	LimitNetwork = "network"
)

// Unenforced returns the NotEnforced entries about a limit lim sets (a
// positive value; for network, no network): what a run was promised and
// does not get, so that it can say so once.
func (i Info) Unenforced(lim Limits) []string {
	set := map[string]bool{
		LimitTimeout: lim.Timeout > 0, LimitMemory: lim.Memory > 0, LimitCPUs: lim.CPUs > 0,
		LimitPids: lim.Pids > 0, LimitDisk: lim.Disk > 0, LimitNetwork: !lim.Network, LimitOutput: true,
	}
	var out []string
	for _, e := range i.NotEnforced {
		name, _, _ := strings.Cut(e, ":")
		if set[name] {
			out = append(out, e)
		}
	}
	return out
}
