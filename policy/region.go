package policy

import "strings"

// A region is a set of workspace paths that a command argument may name: a
// cleaned relative path, a shell glob whose expansion is known only at run
// time, or either with everything below it (what a recursive rm or find's
// roots reach). Regions are compared with the path globs of paths.deny and
// paths.read_only by asking whether some path lies in both. "?" and "[...]"
// count as "*", so the answer errs towards yes: a stricter decision.
type region []regionSeg

type regionSeg struct {
	any  bool // a whole "**" segment: any number of segments
	toks []segTok
	// dot applies the shell's rule that a name starting with "." is matched
	// only by a literal "." (so "*" never expands to ".env" or "..").
	dot bool
}

type segTok struct {
	star bool
	c    byte
}

// Tags of the regions an unknown word carries (see unknownIn).
const (
	regionGlob    = "g:" // a shell glob, workspace-relative and cleaned
	regionPattern = "p:" // a path glob in the policy's syntax ("dir/**")
	regionOutside = "x:" // only outside the workspace
)

// literalRegion is the region of one cleaned workspace-relative path.
func literalRegion(rel string) region {
	if rel == "." || rel == "" {
		return nil
	}
	segs := strings.Split(rel, "/")
	r := make(region, len(segs))
	for i, s := range segs {
		toks := make([]segTok, len(s))
		for k := 0; k < len(s); k++ {
			toks[k] = segTok{c: s[k]}
		}
		r[i] = regionSeg{toks: toks}
	}
	return r
}

// shellRegion is the region of a cleaned shell glob: sh has no "**", and
// its globs never match a leading "." with anything but a literal ".".
func shellRegion(glob string) region {
	if glob == "." || glob == "" {
		return nil
	}
	var r region
	for _, s := range strings.Split(glob, "/") {
		r = append(r, regionSeg{toks: segTokens(s, false), dot: true})
	}
	return r
}

// patternRegion is the region of a path glob in the policy's syntax.
func patternRegion(glob string) region {
	var r region
	for _, s := range strings.Split(strings.TrimSuffix(glob, "/"), "/") {
		if s == "**" {
			r = append(r, regionSeg{any: true})
			continue
		}
		r = append(r, regionSeg{toks: segTokens(s, true)})
	}
	return r
}

// segTokens reads one segment; escapes says whether `\` quotes.
func segTokens(s string, escapes bool) []segTok {
	var toks []segTok
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && escapes && i+1 < len(s):
			i++
			toks = append(toks, segTok{c: s[i]})
		case c == '*' || c == '?':
			toks = append(toks, segTok{star: true})
		case c == '[':
			if j := strings.IndexByte(s[i+1:], ']'); j >= 0 {
				i += j + 1
				if j == 0 { // "[]...]": the first ] is a member
					if k := strings.IndexByte(s[i+1:], ']'); k >= 0 {
						i += k + 1
					}
				}
				toks = append(toks, segTok{star: true})
				continue
			}
			toks = append(toks, segTok{c: c})
		default:
			toks = append(toks, segTok{c: c})
		}
	}
	return toks
}

// below is r and everything under it.
func (r region) below() region {
	return append(r[:len(r):len(r)], regionSeg{any: true})
}

// meets reports whether some path lies in both regions (g must not use the
// dot rule; r may).
func (r region) meets(g region) bool { return r.meet(g, false) }

// names is meets, but only when some letter or digit of that path comes
// from literal text in both: "*.pem" names "**/*.pem" and ".e*" names
// "**/.env", while "*" and "src/*" only happen to cover them, as a
// recursive read does.
func (r region) names(g region) bool { return r.meet(g, true) }

func (r region) meet(g region, needLit bool) bool {
	// A dense memo: states are (i, j, lit), each visited once, so the
	// cost is linear in len(r)*len(g) (one side is a policy's pattern,
	// a few segments) without a map's allocations.
	const (
		unseen = iota
		visiting
		no
		yes
	)
	cols := len(g) + 1
	memo := make([]uint8, (len(r)+1)*cols*2)
	var rec func(i, j int, lit bool) bool
	rec = func(i, j int, lit bool) bool {
		k := (i*cols + j) * 2
		if lit {
			k++
		}
		switch memo[k] {
		case visiting, no:
			return false
		case yes:
			return true
		}
		memo[k] = visiting
		var res bool
		switch {
		case i == len(r) && j == len(g):
			res = lit || !needLit
		case i < len(r) && r[i].any:
			res = rec(i+1, j, lit) || (j < len(g) && rec(i, j+1, lit))
		case j < len(g) && g[j].any:
			res = rec(i, j+1, lit) || (i < len(r) && rec(i+1, j, lit))
		case i < len(r) && j < len(g):
			res = (!lit && needLit && segMeets(r[i].toks, g[j].toks, r[i].dot, true) && rec(i+1, j+1, true)) ||
				(segMeets(r[i].toks, g[j].toks, r[i].dot, false) && rec(i+1, j+1, lit))
		}
		memo[k] = no
		if res {
			memo[k] = yes
		}
		return res
	}
	return rec(0, 0, false)
}

// segMeets reports whether one non-empty name matches both segment globs;
// with dot, a leading "." must come from a literal "." in a; with needLit,
// some character must be literal in both.
func segMeets(a, b []segTok, dot, needLit bool) bool {
	// A dense memo over (i, j, first, lit), as in meet.
	const (
		unseen = iota
		visiting
		no
		yes
	)
	cols := len(b) + 1
	memo := make([]uint8, (len(a)+1)*cols*4)
	var rec func(i, j int, first, lit bool) bool
	rec = func(i, j int, first, lit bool) bool {
		k := (i*cols + j) * 4
		if first {
			k += 2
		}
		if lit {
			k++
		}
		switch memo[k] {
		case visiting, no:
			return false
		case yes:
			return true
		}
		memo[k] = visiting
		aStar := i < len(a) && a[i].star
		bStar := j < len(b) && b[j].star
		var res bool
		switch {
		case i == len(a) && j == len(b):
			res = !first && (lit || !needLit)
		case aStar && rec(i+1, j, first, lit), bStar && rec(i, j+1, first, lit):
			res = true
		case aStar && j < len(b) && !bStar:
			res = !(dot && first && b[j].c == '.') && b[j].c != '/' && rec(i, j+1, false, lit)
		case bStar && i < len(a) && !aStar:
			res = rec(i+1, j, false, lit)
		case aStar && bStar:
			res = first && rec(i, j, false, lit) // both stars take one ordinary character
		case i < len(a) && j < len(b):
			// Only a letter or digit written in both counts as naming:
			// "*.go" meets ".env.*" in ".env.go", but through a "." alone.
			res = a[i].c == b[j].c && rec(i+1, j+1, false, lit || isAlnum(a[i].c))
		}
		memo[k] = no
		if res {
			memo[k] = yes
		}
		return res
	}
	return rec(0, 0, true, false)
}

var dotDot = literalRegion("..")[0].toks

// mayClimb reports whether a segment of a shell glob can expand to "..".
func (r region) mayClimb() bool {
	for _, s := range r {
		if !s.any && segMeets(s.toks, dotDot, s.dot, false) && !isLiteral(s.toks) {
			return true
		}
	}
	return false
}

func isLiteral(toks []segTok) bool {
	for _, t := range toks {
		if t.star {
			return false
		}
	}
	return true
}

// unknownIn is a word known only at run time that names a path in one of
// regions (tagged strings, see regionGlob); with none, it may be anything.
func unknownIn(regions ...string) string {
	return unknownWord + strings.Join(regions, unknownWord)
}

func isUnknown(w string) bool { return strings.HasPrefix(w, unknownWord) }

// regionsOf decodes the regions an unknown word carries; ok is false when
// the word may name any path.
func regionsOf(w string) (rs []region, ok bool) {
	if w == unknownWord {
		return nil, false
	}
	for _, t := range strings.Split(w[len(unknownWord):], unknownWord) {
		switch {
		case strings.HasPrefix(t, regionGlob):
			rs = append(rs, shellRegion(t[len(regionGlob):]))
		case strings.HasPrefix(t, regionPattern):
			rs = append(rs, patternRegion(t[len(regionPattern):]))
		}
	}
	return rs, true
}

// escapeGlob quotes the glob characters of a literal path.
func escapeGlob(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if strings.IndexByte(`*?[\`, p[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
