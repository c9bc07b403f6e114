package policy

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// A glob is compiled once, when the policy is parsed, into an anchored
// regular expression; matching is then a single regexp run (or a string
// comparison for globs without metacharacters).
type glob struct {
	src     string
	literal bool // src has no metacharacters; compare unescaped text
	text    string
	re      *regexp.Regexp
}

func (g glob) match(s string) bool {
	if g.literal {
		return s == g.text
	}
	return g.re.MatchString(s)
}

// compileWordGlob compiles a glob for one word: `*` matches any run of
// characters except `/`, `**` any run including `/`, `?` one character except
// `/`, `[...]` a class (`[!...]` or `[^...]` negated), `\` quotes the next
// character.
func compileWordGlob(src string) (glob, error) {
	var b strings.Builder
	b.WriteString("^")
	literal := true
	var text strings.Builder
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch c {
		case '\\':
			if i+1 >= len(src) {
				return glob{}, errors.New("trailing backslash")
			}
			i++
			b.WriteString(regexp.QuoteMeta(src[i : i+1]))
			text.WriteByte(src[i])
		case '*':
			literal = false
			if i+1 < len(src) && src[i+1] == '*' {
				for i+1 < len(src) && src[i+1] == '*' {
					i++
				}
				b.WriteString(".*")
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			literal = false
			b.WriteString("[^/]")
		case '[':
			literal = false
			n, cls, err := compileClass(src[i:])
			if err != nil {
				return glob{}, err
			}
			b.WriteString(cls)
			i += n - 1
		default:
			b.WriteString(regexp.QuoteMeta(src[i : i+1]))
			text.WriteByte(c)
		}
	}
	b.WriteString("$")
	if literal {
		return glob{src: src, literal: true, text: text.String()}, nil
	}
	re, err := regexp.Compile(b.String())
	if err != nil {
		return glob{}, fmt.Errorf("bad pattern: %w", err)
	}
	return glob{src: src, re: re}, nil
}

// compileClass translates the bracket expression at the start of s and
// returns how many bytes it used.
func compileClass(s string) (int, string, error) {
	var b strings.Builder
	b.WriteString("[")
	i := 1
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		b.WriteString("^/")
		i++
	}
	n := 0
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ']' && n > 0:
			b.WriteString("]")
			return i + 1, b.String(), nil
		case c == '\\':
			if i+1 >= len(s) {
				return 0, "", errors.New("trailing backslash in [...]")
			}
			i++
			b.WriteString(regexp.QuoteMeta(s[i : i+1]))
		case c == '-' && n > 0 && i+1 < len(s) && s[i+1] != ']':
			b.WriteString("-")
		case c == '/':
			return 0, "", errors.New("`/` inside [...]")
		default:
			if c == '[' || c == ']' || c == '^' || c == '-' {
				b.WriteString(`\` + string(c))
			} else {
				b.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
		n++
	}
	return 0, "", errors.New("unclosed [")
}

// compilePathGlob compiles a workspace path glob. Segments are separated by
// `/`; a segment that is exactly `**` matches zero or more whole segments
// (so "dir/**" matches "dir" itself and everything under it, "**/x" matches
// "x" at any depth); inside a segment the word-glob grammar applies, except
// that `**` must be a whole segment.
func compilePathGlob(src string) (glob, error) {
	if src == "" {
		return glob{}, errors.New("empty path glob")
	}
	if strings.HasPrefix(src, "/") {
		return glob{}, errors.New("path globs are workspace-relative; drop the leading /")
	}
	segs := strings.Split(strings.TrimSuffix(src, "/"), "/")
	var b strings.Builder
	b.WriteString("^")
	for i, seg := range segs {
		last := i == len(segs)-1
		switch {
		case seg == "**":
			switch {
			case len(segs) == 1:
				b.WriteString(".*")
			case i == 0:
				b.WriteString("(?:.*/)?")
			case last:
				b.WriteString("(?:/.*)?")
			default:
				b.WriteString("/(?:.*/)?")
			}
			continue
		case seg == "" || seg == "." || seg == "..":
			return glob{}, fmt.Errorf("segment %q not allowed (globs name cleaned workspace-relative paths)", seg)
		case strings.Contains(seg, "**"):
			return glob{}, fmt.Errorf("`**` must be a whole path segment in %q", seg)
		}
		if i > 0 && segs[i-1] != "**" {
			b.WriteString("/")
		}
		g, err := compileWordGlob(seg)
		if err != nil {
			return glob{}, err
		}
		if g.literal {
			b.WriteString(regexp.QuoteMeta(g.text))
		} else {
			b.WriteString(strings.TrimSuffix(strings.TrimPrefix(g.re.String(), "^"), "$"))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return glob{}, fmt.Errorf("bad pattern: %w", err)
	}
	return glob{src: src, re: re}, nil
}
