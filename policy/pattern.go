package policy

import (
	"errors"
	"fmt"
	"strings"
)

// unknownWord stands for an argument whose value cannot be known when the
// policy judges a command: the file names find passes to -exec, the words
// xargs reads from its input, an unquoted glob in shell mode. It matches only
// a whole-word `*` in a pattern. It may carry the regions of the workspace
// it can name (see unknownIn). Real argv words cannot contain NUL, and
// CheckCommand denies those that do.
const unknownWord = "\x00"

// rule is one entry of a list in the policy file, kept as written so that a
// decision can quote it.
type rule struct {
	list string // "commands.allow", "paths.deny", ...
	src  string // the pattern as written
	line int    // line in the policy file; 0 when added by code
	file string
}

// String quotes the rule the way Decision.Rule shows it:
// commands.ask: "go get *" (policy.yaml:12).
func (r rule) String() string {
	s := fmt.Sprintf("%s: %q", r.list, r.src)
	if r.line > 0 {
		s += fmt.Sprintf(" (%s:%d)", r.file, r.line)
	}
	return s
}

// commandPattern is a command rule split into words.
type commandPattern struct {
	rule
	words []patternWord
	// namesPath is true when the first word names a program by path
	// ("./bin/tool", "/usr/bin/go"); only such patterns match a program
	// named by path.
	namesPath bool
	// starFirst is true when the first word is a whole-word `*`.
	starFirst bool
}

type patternWord struct {
	star bool // whole-word `*`: any number of words, including none
	g    glob
}

// hasLiteral reports whether the pattern names word w literally (not through
// a glob); interpreters' inline-code flags must be named this way.
func (p *commandPattern) hasLiteral(w string) bool {
	for _, pw := range p.words {
		if !pw.star && pw.g.literal && pw.g.text == w {
			return true
		}
	}
	return false
}

// hasLiterals reports whether the pattern names every word of ws literally.
func (p *commandPattern) hasLiterals(ws []string) bool {
	for _, w := range ws {
		if !p.hasLiteral(w) {
			return false
		}
	}
	return true
}

func compileCommandPattern(r rule) (*commandPattern, error) {
	words, err := splitPattern(r.src)
	if err != nil {
		return nil, err
	}
	if len(words) == 0 {
		return nil, errors.New("empty command pattern")
	}
	p := &commandPattern{rule: r}
	for _, w := range words {
		if w == "*" {
			// Consecutive stars are one star.
			if n := len(p.words); n > 0 && p.words[n-1].star {
				continue
			}
			p.words = append(p.words, patternWord{star: true})
			continue
		}
		g, err := compileWordGlob(w)
		if err != nil {
			return nil, fmt.Errorf("word %q: %w", w, err)
		}
		p.words = append(p.words, patternWord{g: g})
	}
	first := p.words[0]
	p.starFirst = first.star
	p.namesPath = !first.star && strings.Contains(words[0], "/")
	return p, nil
}

// splitPattern splits a pattern on unescaped blanks; a backslash keeps the
// next character (including a blank) in the word and is left in place for
// the glob compiler.
func splitPattern(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("trailing backslash")
			}
			cur.WriteByte(c)
			cur.WriteByte(s[i+1])
			i++
			in = true
		case c == ' ' || c == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case c == '\n' || c == '\r' || c == 0:
			return nil, fmt.Errorf("control character %q in pattern", c)
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// match reports whether argv matches the pattern as a whole. deny is true
// when the pattern is a deny rule: a leading `*` then also matches programs
// named by path (denying more is always safe); allow and ask rules match a
// program named by path only when they name that path.
func (p *commandPattern) match(argv []string, deny bool) bool {
	if len(argv) == 0 {
		return false
	}
	if strings.Contains(argv[0], "/") && !p.namesPath && !(deny && p.starFirst) {
		return false
	}
	return matchWords(p.words, argv)
}

// matchWords is glob matching over words with backtracking to the last
// star, linear in practice for the short patterns policies hold.
func matchWords(pat []patternWord, argv []string) bool {
	pi, ai := 0, 0
	starPi, starAi := -1, 0
	for ai < len(argv) {
		if pi < len(pat) {
			w := pat[pi]
			if w.star {
				starPi, starAi = pi, ai
				pi++
				continue
			}
			if !isUnknown(argv[ai]) && w.g.match(argv[ai]) {
				pi++
				ai++
				continue
			}
		}
		if starPi < 0 {
			return false
		}
		starAi++
		pi, ai = starPi+1, starAi
	}
	for pi < len(pat) && pat[pi].star {
		pi++
	}
	return pi == len(pat)
}
