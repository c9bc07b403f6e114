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
