package tools

import (
	"path"
	"strings"
)

// globMatch reports whether the slash-separated relative path name matches
// pattern. "**" as a whole segment matches any number of segments (zero
// included); other segments follow path.Match. A pattern without a slash
// matches the base name at any depth ("*.go" finds every Go file).
// A malformed pattern matches nothing; validGlob reports it.
func globMatch(pattern, name string) bool {
	if pattern == "" {
		return true
	}
	if !strings.Contains(pattern, "/") {
		ok, _ := path.Match(pattern, path.Base(name))
		return ok
	}
	return matchSegs(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 0 && pat[0] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for i := range len(name) + 1 {
				if matchSegs(pat, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// validGlob reports whether every segment of pattern is well formed.
func validGlob(pattern string) error {
	for _, seg := range strings.Split(pattern, "/") {
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return err
		}
	}
	return nil
}
