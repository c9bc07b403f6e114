package userns

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// initFlag is the argument that turns a process started at initPath into
// the init helper. Both must match, so no ordinary invocation of a binary
// that links this package becomes the helper by accident.
const initFlag = "--trio-userns-init"

// initExitCode is the helper's exit status when it could not confine the
// command; with initMarker at the start of stderr it is a sandbox failure,
// not the command's.
const (
	initExitCode = 125
	initMarker   = "trio-userns-init: "
)

// initSpec is what the helper applies to itself before it runs the
// command. It travels as JSON in the helper's argv.
type initSpec struct {
	// Writable folders for Landlock; everything else is read and execute
	// only.
	Writable []string `json:"w"`
	DenyTCP  bool     `json:"tcp,omitempty"`
	Rlimits  []rlimit `json:"rl,omitempty"`
}

type rlimit struct {
	Resource int    `json:"r"`
	Value    uint64 `json:"v"`
}

// The hook. Every binary that links this package (trio, an embedder's
// program, a test binary) is its own init helper: the sandbox binds
// os.Executable at initPath and starts it there with initFlag, and this
// runs before main. Nothing else of the program runs in the sandbox, so an
// embedder calls nothing from main.
func init() {
	if len(os.Args) > 3 && os.Args[0] == initPath && os.Args[1] == initFlag {
		os.Exit(runInit(os.Args[2], os.Args[3:]))
	}
}

// runInit confines this process (rlimits, then Landlock over all its
// threads) and replaces it with argv[1:] (argv[0] is "--"). It returns only
// on failure, with the exit status.
func runInit(specJSON string, argv []string) int {
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		return code
	}
	if len(argv) < 2 || argv[0] != "--" {
		return fail(initExitCode, initMarker+"usage: %s %s SPEC -- PROGRAM [ARG...]", initPath, initFlag)
	}
	argv = argv[1:]
	var spec initSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return fail(initExitCode, initMarker+"spec: %v", err)
	}
	for _, rl := range spec.Rlimits {
		lim := unix.Rlimit{Cur: rl.Value, Max: rl.Value}
		if err := unix.Setrlimit(rl.Resource, &lim); err != nil {
			return fail(initExitCode, initMarker+"rlimit %d: %v", rl.Resource, err)
		}
	}
	if err := restrictSelf(spec); err != nil {
		return fail(initExitCode, initMarker+"landlock: %v", err)
	}
	// The command starts with stdin, stdout and stderr only: not the
	// executable's descriptor bwrap bound from, nor its status pipe.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fail(initExitCode, initMarker+"close descriptors: %v", err)
	}
	// Resolved after Landlock, so that a program Landlock would not let
	// run is reported as such.
	prog, err := exec.LookPath(argv[0])
	if err != nil {
		code := 126
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, exec.ErrNotFound) {
			code = 127
		}
		return fail(code, "trio: cannot run %s: %v", argv[0], err)
	}
	err = syscall.Exec(prog, argv, os.Environ())
	code := 126
	if errors.Is(err, fs.ErrNotExist) {
		code = 127
	}
	return fail(code, "trio: cannot run %s: %v", argv[0], err)
}

// landlockConfig is the Landlock ABI this package was verified on (7:
// file system, TCP, signal and abstract-socket scoping), best effort so
// that an older kernel applies what it has.
var landlockConfig = landlock.V7

// restrictSelf lets this process tree read and execute everything it can
// see but write only in spec.Writable; with DenyTCP, no TCP bind or
// connect; and always, no signal to and no abstract UNIX socket of a
// process outside the sandbox.
func restrictSelf(spec initSpec) error {
	c := landlockConfig
	if !spec.DenyTCP {
		c.HandledAccessNet = 0
	}
	return c.BestEffort().Restrict(landlock.RODirs("/"), landlock.RWDirs(spec.Writable...))
}
