package sandbox

import "errors"

var (
	// ErrClosed is returned by Exec after Close.
	ErrClosed = errors.New("sandbox is closed")
	// ErrOutsideWorkspace is returned when Command.Dir leaves the workspace.
	ErrOutsideWorkspace = errors.New("working directory outside the workspace")
	// ErrEmptyCommand is returned when Command.Argv is empty.
	ErrEmptyCommand = errors.New("empty command")
)
