package eval

import "errors"

// ErrInvalidSuite is wrapped by every error about a suite's files; the
// message names the file (and the line, for YAML).
var ErrInvalidSuite = errors.New("invalid eval suite")

// ErrLocked is wrapped when another eval holds the output folder.
var ErrLocked = errors.New("eval output folder in use")

// ErrLayout is wrapped when the suite lies inside the output folder, where
// the task workspaces are made: a run could read the hidden tests there.
var ErrLayout = errors.New("eval folders overlap")
