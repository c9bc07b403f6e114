package tools

import (
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// globMatch reports whether the slash-separated relative path name matches
// pattern, with doublestar's grammar: "**" as a whole segment matches any
// number of segments (zero included), "{a,b}" alternatives, other segments
// as path.Match. A pattern without a slash matches the base name at any
// depth ("*.go" finds every Go file). A malformed pattern matches nothing;
// validGlob reports it.
func globMatch(pattern, name string) bool {
	if pattern == "" {
		return true
	}
	if !strings.Contains(pattern, "/") {
		name = path.Base(name)
	}
	ok, _ := doublestar.Match(pattern, name)
	return ok
}

// validGlob reports a malformed pattern.
func validGlob(pattern string) error {
	if !doublestar.ValidatePattern(pattern) {
		return doublestar.ErrBadPattern
	}
	return nil
}
