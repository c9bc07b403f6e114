package agent

import "errors"

// ErrNoRun is wrapped when a folder given to Resume holds no run.
var ErrNoRun = errors.New("no run to resume")

// ErrRunFinished is wrapped when Resume is given a run that already ended
// with a reason that cannot be continued; the stored report comes with it.
var ErrRunFinished = errors.New("run already finished")

// ErrInvalidOption is wrapped by New's (and Resume's) error when an option
// cannot be used: a usage error of the caller, not a failure of a run.
var ErrInvalidOption = errors.New("invalid option")

// optionError keeps an option's own message and wraps ErrInvalidOption.
type optionError struct{ err error }

func (e optionError) Error() string   { return e.err.Error() }
func (e optionError) Unwrap() []error { return []error{e.err, ErrInvalidOption} }

// ErrLocked is wrapped (by a *LockedError) when a run folder or a workspace
// is in use by another session: a second resume of one run, or two runs on
// one workspace.
var ErrLocked = errors.New("in use by another session")

// ErrInvalidInput is wrapped when what a run is given cannot be used: a
// goal that is too large or not text, a workspace that is a file, a runs
// folder that cannot be written, or a run folder whose records are damaged
// (state.json, a JSONL file torn in the middle, a missing calls.jsonl).
// Like ErrInvalidOption it is the caller's to fix, not a failure of a run.
var ErrInvalidInput = errors.New("invalid input")

// inputError keeps its own message and wraps ErrInvalidInput.
type inputError struct{ err error }

func (e inputError) Error() string   { return e.err.Error() }
func (e inputError) Unwrap() []error { return []error{e.err, ErrInvalidInput} }

func invalidInput(err error) error {
	if err == nil || errors.Is(err, ErrInvalidInput) {
		return err
	}
	return inputError{err}
}

// ErrNoSnapshot is wrapped by Diff when a run folder has no snapshot of
// the workspace as the run started (a run made before snapshots existed).
var ErrNoSnapshot = errors.New("no starting snapshot of the workspace")

// ErrWorkspaceUsed is wrapped (with ErrInvalidInput) when Run is given a
// workspace that holds files another run left there; WithReuseWorkspace
// accepts it.
var ErrWorkspaceUsed = errors.New("workspace holds another run's files")
