// Package landlockexec is the landlock kind's helper: this executable,
// re-executed through /proc/self/exe with Arg0 as argv[0], in two stages.
//
//   - the supervisor (SupervisorFlag) becomes a child subreaper, starts
//     the second stage, and when that ends (or on SIGTERM) kills and reaps
//     every process left below it, setsid children included, which the
//     kernel hands to a subreaper. It confines nothing of its own: it is
//     Trio's code, as trio is, and outside every Landlock domain a command
//     can signal (from ABI 6);
//   - the second stage (ExecFlag) confines the thread that execs the
//     command, and only that one (the exec ends the others): no new
//     privileges, the Landlock domain of Spec with its signal and
//     abstract-socket scope, the seccomp filter trio built, the rlimits,
//     no capability (trio run as root); then it execs the command.
//
// With Spec.Request, both stages start before their command is known
// (trio starts the next command's helper while none waits), and the
// second stage reads the command from a pipe before it confines it.
//
// Two stages, not one: the command must start in a domain that no thread
// of its supervisor is in, or it could kill the supervisor (tgkill of
// that thread) and leave its background processes behind. A Go process
// cannot fork without exec, so a domain only the child has needs a
// program of its own between fork and exec: the second stage.
//
// Each stage is a start of the whole program, so this package is built
// for an early start: it imports only os, os/signal, syscall, unsafe and
// errors, whose initialisation comes first, so that its init function
// runs before the packages of the program that sort before it and wait
// for more (go-seccomp-bpf, go-landlock, x/sys, the SDKs). That is why it
// makes its system calls itself, takes its spec as plain arguments
// instead of JSON and gets the seccomp program built by trio.
package landlockexec

import (
	"os"
)

// Arg0 is argv[0] of both stages, and SupervisorFlag and ExecFlag their
// first argument; both must match, so no ordinary invocation of a program
// that links this package becomes the helper by accident.
const (
	Arg0           = "trio-landlock-helper"
	SupervisorFlag = "--trio-landlock-init"
	ExecFlag       = "--trio-landlock-exec"
)

// ExitCode is the helper's exit status when it could not confine the
// command; with Marker at the start of stderr it is a sandbox failure,
// not the command's.
const (
	ExitCode = 125
	Marker   = "trio-landlock-helper: "
)

func init() {
	if len(os.Args) > 2 && os.Args[0] == Arg0 {
		switch os.Args[1] {
		case SupervisorFlag:
			os.Exit(runSupervisor(os.Args[2:]))
		case ExecFlag:
			os.Exit(runExec(os.Args[2:]))
		}
	}
}
