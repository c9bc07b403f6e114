package policy

import (
	"context"
	"fmt"
	"time"
)

// Verdict is what the policy says about one action.
type Verdict int

// Verdicts, from most to least permissive. Unmatched actions are denied.
const (
	Deny Verdict = iota
	Ask
	Allow
)

func (v Verdict) String() string {
	switch v {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	default:
		return "deny"
	}
}

// MarshalText makes verdicts readable in audit logs and JSON output.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText reads a verdict back from an audit log.
func (v *Verdict) UnmarshalText(b []byte) error {
	for _, c := range []Verdict{Deny, Ask, Allow} {
		if c.String() == string(b) {
			*v = c
			return nil
		}
	}
	return fmt.Errorf("policy: unknown verdict %q (want allow, ask or deny)", b)
}

// Decision is the policy's answer with the rule that matched and why.
type Decision struct {
	Verdict Verdict `json:"verdict"`
	// Rule is the matching rule as written in the policy file, e.g.
	// `commands.ask: "go get *"`, or a built-in rule name such as
	// "default-deny" or "shell-disabled".
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
}

// Access is what a file tool does with a path.
type Access int

// Accesses a path rule can allow.
const (
	Read Access = iota
	Write
)

func (a Access) String() string {
	if a == Write {
		return "write"
	}
	return "read"
}

// Scope tells the policy where the workspace is, so that path arguments of
// commands can be normalised and confined. The policy never touches the file
// system; it only compares cleaned paths.
type Scope struct {
	// Workspace is the absolute host path of the workspace.
	Workspace string
	// Aliases are other absolute paths that mean the workspace to commands
	// (for example "/workspace" inside a container).
	Aliases []string
	// Dir is the workspace-relative folder the command runs in ("" or "."
	// for the root); relative arguments are judged from it.
	Dir string
	// Links, when set, tells the policy where workspace paths lead through
	// symlinks, so that a path argument is judged by what it names on disk
	// as well as by its text (etc -> /etc, envlnk -> .env). The caller
	// that owns the workspace answers; the policy never touches the file
	// system itself. Without Links, arguments are judged as written.
	Links Links
	// Enforced says the command runs in a sandbox that enforces the
	// policy's path, network and limit rules itself (containerd, userns,
	// landlock): an allowed program then runs with any arguments,
	// variables, shell forms, redirections and globs, since the kernel
	// holds what the argument analysis would. Every program the line runs
	// must still be allowed by a rule's pattern (wrappers such as sh -c,
	// env, xargs and find -exec are judged by what they run), and deny and
	// ask rules still apply. Without it (local, and what runs on the
	// host) every argument is judged as well.
	Enforced bool
}

// Links answers the policy's questions about the symlinks in a workspace.
type Links interface {
	// Resolve returns where rel, a cleaned workspace-relative path, leads
	// once every symlink on it is followed: a cleaned workspace-relative
	// path while it stays inside, an absolute path once a link leads out.
	// A missing part ends the walk (the rest is kept as named). ok is false
	// when a link cannot be followed (a loop, an unreadable link).
	Resolve(rel string) (target string, ok bool)
	// Glob lists, for the paths that a cleaned workspace-relative shell
	// glob matches now and that pass through a symlink, where each leads
	// (as Resolve says). ok is false when a match cannot be followed or
	// there are too many to judge.
	Glob(pattern string) (targets []string, ok bool)
}

// SystemLinks is what a Links may also answer: where an absolute path
// under a commands.read_only_dirs folder leads. With it, a path there is
// judged where its symlinks lead (/usr/lib/x -> /tmp/x is outside); a
// Links without it leaves such paths judged by their text.
type SystemLinks interface {
	// ResolveSystem returns where abs, a cleaned absolute path, leads once
	// every symlink on it is followed: a cleaned absolute path, or a
	// workspace-relative one when it leads into the workspace. ok is false
	// when a link cannot be followed.
	ResolveSystem(abs string) (target string, ok bool)
}

// Command is a command line parsed from the model's text.
type Command struct {
	Line string `json:"line"`
	// Argv is set when the line is one simple command without shell
	// constructs; it is what the sandbox runs.
	Argv []string `json:"argv,omitempty"`
	// Shell is true when the line needs a shell (pipes, ;, &&, redirections,
	// substitutions, globs). It runs only when the policy enables shell mode,
	// as ["sh", "-c", Line].
	Shell bool `json:"shell,omitempty"`
}

// Confirmer asks a person about an action the policy marked "ask".
// Implementations must honour ctx cancellation and treat any non-answer as
// AnswerNo.
type Confirmer interface {
	Confirm(ctx context.Context, req ConfirmRequest) (Answer, error)
}

// ConfirmRequest is what a person sees when asked.
type ConfirmRequest struct {
	Tool     string        `json:"tool"`
	Action   string        `json:"action"` // "exec", "read", "write", "call"
	Argv     []string      `json:"argv,omitempty"`
	Command  string        `json:"command,omitempty"`
	Path     string        `json:"path,omitempty"`
	Decision Decision      `json:"decision"`
	Timeout  time.Duration `json:"timeout"`
}

// Answer is a person's reply to a confirmation.
type Answer int

// Answers: no, yes once, yes for every action under the same rule this run.
const (
	AnswerNo Answer = iota
	AnswerYes
	AnswerAlways
)

func (a Answer) String() string {
	switch a {
	case AnswerYes:
		return "yes"
	case AnswerAlways:
		return "always"
	default:
		return "no"
	}
}

// MarshalText makes answers readable in audit logs.
func (a Answer) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText reads an answer back from an audit log.
func (a *Answer) UnmarshalText(b []byte) error {
	for _, c := range []Answer{AnswerNo, AnswerYes, AnswerAlways} {
		if c.String() == string(b) {
			*a = c
			return nil
		}
	}
	return fmt.Errorf("policy: unknown answer %q (want yes, no or always)", b)
}

// Limits are the resource limits a policy sets for commands.
type Limits struct {
	Timeout time.Duration `json:"timeout"`
	Memory  int64         `json:"memory"`
	CPUs    float64       `json:"cpus"`
	Pids    int64         `json:"pids"`
	Output  int64         `json:"output"`
	Network bool          `json:"network"`
	// Disk bounds, in bytes, what one run may add to the host's disk: the
	// workspace's growth plus the sandbox's cache folders. Isolating
	// sandboxes enforce it; the local sandbox does not.
	Disk int64 `json:"disk"`
	// File bounds, in bytes, one file that write_file or edit_file writes
	// (limits.file; default DefaultFile).
	File int64 `json:"file"`
}
