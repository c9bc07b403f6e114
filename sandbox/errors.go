package sandbox

import "errors"

var (
	// ErrClosed is returned by Exec after Close.
	ErrClosed = errors.New("sandbox is closed")
	// ErrOutsideWorkspace is returned when Command.Dir leaves the workspace.
	ErrOutsideWorkspace = errors.New("working directory outside the workspace")
	// ErrEmptyCommand is returned when Command.Argv is empty.
	ErrEmptyCommand = errors.New("empty command")
	// ErrUnavailable means a kind cannot run here, or not on this
	// workspace (containerd unreachable, no bubblewrap, no Landlock, a
	// denied path Landlock cannot hide). Every kind's error for it wraps
	// this one, so callers test errors.Is(err, ErrUnavailable) whatever
	// the kind; the message says what to do instead.
	ErrUnavailable = errors.New("unavailable")
	// ErrConfig means a kind's settings or a RunSpec are unusable; every
	// kind's error for it wraps this one.
	ErrConfig = errors.New("invalid sandbox config")
	// ErrUnknownKind means no kind of that name is registered.
	ErrUnknownKind = errors.New("unknown sandbox kind")
)

// Error is a failure of one kind at one step, as os.PathError is of one
// path: [Open] and [Available] return one wrapping the kind's error, so
// callers find the kind with errors.As and the cause with errors.Is
// (ErrUnavailable, ErrConfig).
type Error struct {
	Kind string // "containerd", "userns", "landlock", "local"...
	Op   string // "open", "check", "prune"
	Err  error
}

// Error reads "<op> <kind> sandbox: <err>".
func (e *Error) Error() string { return e.Op + " " + e.Kind + " sandbox: " + e.Err.Error() }

// Unwrap returns the kind's error.
func (e *Error) Unwrap() error { return e.Err }
