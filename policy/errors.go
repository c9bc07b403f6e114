package policy

import (
	"errors"
	"fmt"
)

// FileError is a problem in a policy file. It names the file, the line and
// column, and the key, so that a person can fix it without guessing.
type FileError struct {
	File   string
	Line   int
	Column int
	Key    string // dotted key, e.g. "limits.memory" or "commands.allow[2]"
	Msg    string
}

func (e *FileError) Error() string {
	s := e.File
	if e.Line > 0 {
		s += fmt.Sprintf(":%d", e.Line)
		if e.Column > 0 {
			s += fmt.Sprintf(":%d", e.Column)
		}
	}
	if e.Key != "" {
		s += ": " + e.Key
	}
	return s + ": " + e.Msg
}

// ErrEmptyCommand is returned by ParseCommand for a line with no command.
var ErrEmptyCommand = errors.New("empty command")
