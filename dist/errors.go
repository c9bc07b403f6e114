package dist

import "errors"

// ErrStale is a commit or a start by a session whose epoch is not the
// run's latest: another session took the run over, and this one must stop.
var ErrStale = errors.New("dist: stale epoch: another session took the run over")

// ErrDamaged is a commit, manifest or content that is not what its name or
// hash promises.
var ErrDamaged = errors.New("dist: damaged commit")
