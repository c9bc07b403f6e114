package agent

import "errors"

// ErrNoRun is wrapped when a folder given to Resume holds no run.
var ErrNoRun = errors.New("no run to resume")

// ErrRunFinished is wrapped when Resume is given a run that already ended
// with a reason that cannot be continued; the stored report comes with it.
var ErrRunFinished = errors.New("run already finished")
