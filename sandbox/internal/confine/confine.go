// Package confine is the sandboxes' helper inside the sandbox: the userns
// kind's init, which runs inside bubblewrap, restricts itself (rlimits,
// Landlock) and execs the command, and for both isolating kinds the
// helpers of a trusted build (the nest its test binaries run in) and the
// go command's cache program. It is a package of its own, with few
// imports, so that its init function runs before many of the packages a
// large program links initialise. Not before all: Go initialises the
// ready packages in import-path order, and go-landlock imports libcap's
// psx (kernel.org/...), so every ready package whose path sorts before
// that one goes first. In trio, 171 of 320 initialisers run before the
// helper's, which it reaches about 7 ms after exec (the whole program's
// start-up is about 20 ms) on a 2-core machine.
package confine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/trioagent/trio/sandbox/internal/gocacheprog"
)

// Path is where the sandbox binds the running executable, read-only, and
// Flag the argument that turns a process started there into the helper.
// Both must match, so no ordinary invocation of a program that links this
// package becomes the helper by accident.
const (
	Path = "/.trio/init"
	Flag = "--trio-userns-init"
)

// NestPath is a symlink to Path that a trusted build's go command runs
// the programs it builds through (go test -exec): started there, the
// helper confines the program further (see runNest).
const NestPath = "/.trio/nest"

// ExitCode is the helper's exit status when it could not confine the
// command; with Marker at the start of stderr it is a sandbox failure, not
// the command's.
const (
	ExitCode = 125
	Marker   = "trio-userns-init: "
)

// Spec is what the helper applies to itself before it runs the command.
// It travels as JSON in the helper's argv.
type Spec struct {
	// Writable folders for Landlock; everything else is read and execute
	// only.
	Writable []string `json:"w"`
	DenyTCP  bool     `json:"tcp,omitempty"`
	Rlimits  []Rlimit `json:"rl,omitempty"`
	// Ready, when positive, is a descriptor the helper writes one byte to
	// (and closes) once it is confined: bwrap has finished every mount by
	// then, so a caller that waits for it knows the layout is fixed.
	Ready int `json:"ready,omitempty"`
}

// Rlimit is one resource limit, soft and hard alike.
type Rlimit struct {
	Resource int    `json:"r"`
	Value    uint64 `json:"v"`
}

// The hook. Every binary that links this package (trio, an embedder's
// program, a test binary) is its own init helper: the sandbox binds
// /proc/self/exe at Path and starts it there with Flag, and this runs
// before main. Nothing else of the program runs in the sandbox, so an
// embedder calls nothing from main.
func init() {
	if len(os.Args) > 3 && os.Args[0] == Path && os.Args[1] == Flag {
		os.Exit(runInit(os.Args[2], os.Args[3:]))
	}
	if len(os.Args) > 1 && os.Args[0] == NestPath {
		os.Exit(runNest(os.Args[1:]))
	}
	// The go command's cache program (GOCACHEPROG), started by go
	// inside the sandbox with gocacheprog.Prog's command line.
	gocacheprog.Main(Path)
	// The landlock kind names this executable by its host path.
	if len(os.Args) > 1 && os.Args[1] == gocacheprog.Flag {
		if exe, err := os.Executable(); err == nil {
			gocacheprog.Main(exe)
		}
	}
	// Started from Path any other way, the program does not run: in the
	// containerd kind commands may execute the helper (not read it), and
	// must not reach the program's own main, which may hold an
	// embedder's settings.
	if exe, err := os.Readlink("/proc/self/exe"); err == nil && exe == Path {
		fmt.Fprintln(os.Stderr, Marker+"not a helper invocation")
		os.Exit(ExitCode)
	}
}

// runInit confines this process (Landlock over all its threads, then
// rlimits) and replaces it with argv[1:] (argv[0] is "--"). It returns only
// on failure, with the exit status.
func runInit(specJSON string, argv []string) int {
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		return code
	}
	if len(argv) < 2 || argv[0] != "--" {
		return fail(ExitCode, Marker+"usage: %s %s SPEC -- PROGRAM [ARG...]", Path, Flag)
	}
	argv = argv[1:]
	var spec Spec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return fail(ExitCode, Marker+"spec: %v", err)
	}
	if err := restrictSelf(spec); err != nil {
		return fail(ExitCode, Marker+"landlock: %v", err)
	}
	if spec.Ready > 0 {
		_, err := unix.Write(spec.Ready, []byte{'r'})
		unix.Close(spec.Ready)
		if err != nil {
			return fail(ExitCode, Marker+"ready: %v", err)
		}
	}
	// The command starts with stdin, stdout and stderr only: not the
	// executable's descriptor bwrap bound from, nor its status pipe.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fail(ExitCode, Marker+"close descriptors: %v", err)
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
	// Last, so that the limits bound the command and not this helper (a
	// race-enabled helper maps more than a small RLIMIT_DATA allows).
	for _, rl := range spec.Rlimits {
		lim := unix.Rlimit{Cur: rl.Value, Max: rl.Value}
		if err := unix.Setrlimit(rl.Resource, &lim); err != nil {
			return fail(ExitCode, Marker+"rlimit %d: %v", rl.Resource, err)
		}
	}
	err = syscall.Exec(prog, argv, os.Environ())
	code := 126
	if errors.Is(err, fs.ErrNotExist) {
		code = 127
	}
	return fail(code, "trio: cannot run %s: %v", argv[0], err)
}

// ABI is the kernel's Landlock ABI version, 0 without Landlock: the
// sandboxes confine commands this way only when it is positive.
func ABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// landlockConfig is the Landlock ABI this package was verified on (7:
// file system, TCP, signal and abstract-socket scoping), best effort so
// that an older kernel applies what it has.
var landlockConfig = landlock.V7

// restrictSelf lets this process tree read and execute everything it can
// see but write only in spec.Writable; with DenyTCP, no TCP bind or
// connect; and always, no signal to and no abstract UNIX socket of a
// process outside the sandbox.
func restrictSelf(spec Spec) error {
	c := landlockConfig
	if !spec.DenyTCP {
		c.HandledAccessNet = 0
	}
	return c.BestEffort().Restrict(landlock.RODirs("/"), landlock.RWDirs(spec.Writable...))
}

// runNest runs argv[0], a program the go command built (a test binary),
// in a Landlock domain nested in the command's: it may write only a
// folder of /tmp of its own (its TMPDIR), HOME, /dev and the folder it was
// built in (where go test reads its test log), and, as for every nested
// domain, it cannot ptrace the go command or open its descriptors through
// /proc; from Landlock ABI 6 it cannot signal it either (before, it could
// stop or kill it, and what the go command was writing then fails the
// cache's check). So it cannot change what the go command builds, caches
// or reads back, nor write the workspace. It returns only
// on failure: the program never runs unconfined.
//
// go test passes no -test.testlogfile to a program it runs through
// -exec, and without the log it caches no result; the log's place is the
// folder the test binary was linked in, so for a test binary without the
// flag this adds it there. The go command that reads it is the same that
// would have named it.
func runNest(argv []string) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, Marker+format+"\n", args...)
		return ExitCode
	}
	prog, err := exec.LookPath(argv[0])
	if err != nil || !filepath.IsAbs(prog) {
		return fail("nest: %s: not a program the go command built", argv[0])
	}
	built := filepath.Dir(prog)
	if strings.HasSuffix(prog, ".test") && !slices.ContainsFunc(argv[1:], func(a string) bool {
		return strings.HasPrefix(a, "-test.testlogfile=")
	}) {
		argv = slices.Insert(argv, 1, "-test.testlogfile="+filepath.Join(built, "testlog.txt"))
	}
	// A TMPDIR named after the package's folder, not a random one: the
	// test log records the variables a test reads, and a new value every
	// run would leave no result cached.
	wd, _ := os.Getwd()
	sum := sha256.Sum256([]byte(wd + "\x00" + prog[len(built):]))
	tmp := filepath.Join(os.TempDir(), "trio-test-"+hex.EncodeToString(sum[:8]))
	// Made new here, whatever an earlier command left at that name (a
	// symlink to the workspace would take Landlock's rule along): while
	// a trusted build runs, no other process may write /tmp.
	if err := os.RemoveAll(tmp); err != nil {
		return fail("nest: %v", err)
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return fail("nest: %v", err)
	}
	if st, err := os.Lstat(tmp); err != nil || !st.IsDir() {
		return fail("nest: %s is not the folder just made", tmp)
	}
	// A go command a test runs reads the build's cache and writes only
	// its own: through the cache program the build has, read-only, or,
	// for a build on a plain GOCACHE (the containerd kind's overlay), the
	// helper serving that folder read-only.
	cacheProg := gocacheprog.ReadOnly(os.Getenv("GOCACHEPROG"), Path)
	if gocache := os.Getenv("GOCACHE"); cacheProg == "" && filepath.IsAbs(gocache) {
		cacheProg = gocacheprog.Prog(Path, "", gocache)
	}
	set := map[string]string{"TMPDIR": tmp, "GOCACHE": filepath.Join(tmp, "go-build"), "GOCACHEPROG": cacheProg}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		_, ok := set[k]
		return ok
	})
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	writable := []string{tmp, "/dev", built}
	if home := os.Getenv("HOME"); filepath.IsAbs(home) {
		writable = append(writable, home)
	}
	c := landlockConfig
	c.HandledAccessNet = 0 // the command's domain already has the network rules
	if err := c.BestEffort().Restrict(landlock.RODirs("/"), landlock.RWDirs(writable...)); err != nil {
		return fail("nest: landlock: %v", err)
	}
	// Nothing but stdin, stdout and stderr.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fail("nest: close descriptors: %v", err)
	}
	err = syscall.Exec(prog, argv, env)
	return fail("nest: cannot run %s: %v", argv[0], err)
}
