package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The engine parses an argv against a spec the way the program's own
// option parser would, and reports what each word is (its role). It knows
// option syntaxes, not programs: everything about a program is in its spec.
// Anything the spec does not expect — an unknown option, an abbreviation
// that is not a unique prefix, a value where none is taken, an operand in
// no place — is a mismatch, and a rule for the program then does not match.

// use is one word (or run of words) with the role the program gives it.
type use struct {
	word    string
	words   []string // for until, rest and command roles
	role    role
	opt     string // the option it is the value of ("" for an operand)
	appends bool   // the command gets the words xargs reads
}

// invocation is what a parse found.
type invocation struct {
	spec   *spec   // the innermost spec reached (a subcommand)
	path   []*spec // every spec on the way there (go, go build)
	uses   []use
	sets   []string
	given  []string // canonical names of the options given
	denied string   // why the command is forbidden outright ("" when it is not)
	by     string   // the option or subcommand that forbids it
	// canon is argv with abbreviated long options spelled out, so that deny
	// and ask rules written for the full name match the abbreviation too.
	canon []string
}

// mismatch says why an argv does not fit its spec.
type mismatch struct {
	spec *spec
	msg  string
}

func (m *mismatch) Error() string { return m.spec.name + ": " + m.msg }

func (s *spec) mismatch(format string, args ...any) error {
	return &mismatch{spec: s, msg: fmt.Sprintf(format, args...)}
}

func (inv *invocation) has(set string) bool { return slices.Contains(inv.sets, set) }

// program names what the invocation runs, for reasons: its spec, or (for
// the options a variable such as GOFLAGS holds, parsed without one) the
// first canonical word.
func (inv *invocation) program() string {
	switch {
	case inv.spec != nil:
		return inv.spec.name
	case len(inv.canon) > 0:
		return inv.canon[0]
	}
	return "the command"
}
func (inv *invocation) gave(name string) bool { return slices.Contains(inv.given, name) }

// parse parses a whole argv (argv[0] is the program).
func (s *spec) parse(argv []string) (*invocation, error) {
	inv := &invocation{canon: []string{argv[0]}}
	return inv, s.parseInto(inv, argv[1:])
}

func (s *spec) forbid(inv *invocation, why, by string) {
	if why != "" && inv.denied == "" {
		inv.denied, inv.by = why, by
	}
}

func (s *spec) isOption(a string) bool {
	if s.style == styleNone {
		return false
	}
	if s.style == styleSingle {
		_, ok := s.byName[a]
		return ok || (len(a) > 1 && a[0] == '-')
	}
	return len(a) > 1 && a[0] == '-'
}

func (s *spec) parseInto(inv *invocation, words []string) error {
	inv.spec = s
	inv.path = append(inv.path, s)
	s.forbid(inv, s.deny, s.name)
	inv.sets = append(inv.sets, s.sets...)
	var ops []string
	endOpts := false
	for i := 0; i < len(words); i++ {
		a := words[i]
		if !endOpts && a == "--" && s.style != styleSingle {
			endOpts = true
			inv.canon = append(inv.canon, a)
			continue
		}
		if endOpts || !s.isOption(a) {
			// Subcommands are chosen by the first operand, unless the spec has
			// operands of its own: then only an option chooses one
			// (python3 -m MODULE).
			if s.sub != nil && len(s.operands) == 0 {
				sub, ok := s.sub[a]
				if !ok {
					return s.mismatch("unknown subcommand %q", a)
				}
				inv.canon = append(inv.canon, a)
				return sub.parseInto(inv, words[i+1:])
			}
			if s.style == styleSingle && len(inv.given) > 0 {
				return s.mismatch("operand %q after the expression began", a)
			}
			ops = append(ops, a)
			inv.canon = append(inv.canon, a)
			if !s.interspersed && s.style != styleSingle {
				endOpts = true
			}
			continue
		}
		n, err := s.option(inv, words, i)
		if err != nil {
			return err
		}
		if n < 0 { // the option took the rest (a subcommand or rest)
			return nil
		}
		i = n
	}
	return s.operandsOf(inv, ops)
}

// option parses the option at words[i] and returns the index of the last
// word it used, or -1 when it used every remaining word.
func (s *spec) option(inv *invocation, words []string, i int) (int, error) {
	a := words[i]
	switch s.style {
	case styleSingle:
		o := s.byName[a]
		if o == nil {
			return 0, s.mismatch("unknown option %q", a)
		}
		inv.canon = append(inv.canon, a)
		if len(o.until) > 0 {
			j := i + 1
			for ; j < len(words); j++ {
				if slices.Contains(o.until, words[j]) && (words[j] != "+" || (j > i+1 && words[j-1] == "{}")) {
					break
				}
			}
			if j >= len(words) {
				return 0, s.mismatch("%s without a closing %s", a, strings.Join(o.until, " or "))
			}
			inv.canon = append(inv.canon, words[i+1:j+1]...)
			return j, s.record(inv, o, a, "", true, words[i+1:j])
		}
		if !o.valued {
			return i, s.record(inv, o, a, "", false, nil)
		}
		if i+1 >= len(words) {
			return 0, s.mismatch("%s without a value", a)
		}
		inv.canon = append(inv.canon, words[i+1])
		return i + 1, s.record(inv, o, a, words[i+1], true, nil)
	case styleGo:
		name := strings.TrimPrefix(a[1:], "-")
		if name == "" || name[0] == '-' || name[0] == '=' {
			return 0, s.mismatch("bad flag syntax %q", a)
		}
		n, val, hasVal := strings.Cut(name, "=")
		o := s.byName["-"+n]
		if o == nil {
			return 0, s.mismatch("unknown flag %q", "-"+n)
		}
		inv.canon = append(inv.canon, a)
		if !o.valued {
			if hasVal {
				if _, err := strconv.ParseBool(val); err != nil {
					return 0, s.mismatch("flag -%s takes true or false, not %q", n, val)
				}
			}
			return i, s.record(inv, o, "-"+n, "", false, nil)
		}
		return s.value(inv, o, "-"+n, val, hasVal, words, i)
	}
	if strings.HasPrefix(a, "--") {
		name, val, hasVal := strings.Cut(a, "=")
		o := s.byName[name]
		if o == nil && s.abbrev {
			full, err := s.expand(name)
			if err != nil {
				return 0, err
			}
			name, o = full, s.byName[full]
		}
		if o == nil {
			return 0, s.mismatch("unknown option %q", name)
		}
		if hasVal {
			inv.canon = append(inv.canon, name+"="+val)
		} else {
			inv.canon = append(inv.canon, name)
		}
		if !o.valued {
			if hasVal {
				return 0, s.mismatch("option %s takes no value", name)
			}
			return i, s.record(inv, o, name, "", false, nil)
		}
		if !hasVal && o.optional {
			return i, s.record(inv, o, name, "", false, nil)
		}
		return s.value(inv, o, name, val, hasVal, words, i)
	}
	inv.canon = append(inv.canon, a)
	for k := 1; k < len(a); k++ {
		name := "-" + a[k:k+1]
		o := s.byName[name]
		if o == nil {
			return 0, s.mismatch("unknown option %q in %q", name, a)
		}
		if !o.valued {
			if err := s.record(inv, o, name, "", false, nil); err != nil {
				return 0, err
			}
			continue
		}
		if k+1 < len(a) {
			return s.value(inv, o, name, a[k+1:], true, words, i)
		}
		if o.optional {
			return i, s.record(inv, o, name, "", false, nil)
		}
		return s.value(inv, o, name, "", false, words, i)
	}
	return i, nil
}

// value records a valued option whose value is val (hasVal) or the next
// word.
func (s *spec) value(inv *invocation, o *option, name, val string, hasVal bool, words []string, i int) (int, error) {
	if o.rest {
		rest := words[i+1:]
		if hasVal {
			rest = append([]string{val}, rest...)
		}
		inv.canon = append(inv.canon, words[i+1:]...)
		return -1, s.record(inv, o, name, "", true, rest)
	}
	if !hasVal {
		if i+1 >= len(words) {
			return 0, s.mismatch("%s without a value", name)
		}
		i++
		val = words[i]
		inv.canon = append(inv.canon, val)
	}
	if o.role == roleSubcommand {
		if err := s.record(inv, o, name, val, true, nil); err != nil {
			return 0, err
		}
		sub, ok := s.sub[val]
		if !ok {
			return 0, s.mismatch("%s %q has no spec", name, val)
		}
		return -1, sub.parseInto(inv, words[i+1:])
	}
	return i, s.record(inv, o, name, val, true, nil)
}

// expand spells out an abbreviated long option the way getopt_long does:
// a unique prefix of the spec's long options (allowed and forbidden alike)
// is that option; a prefix of several is refused.
func (s *spec) expand(name string) (string, error) {
	var hits []string
	for _, n := range s.longNames {
		if strings.HasPrefix(n, name) {
			hits = append(hits, n)
		}
	}
	switch {
	case len(hits) == 1:
		return hits[0], nil
	case len(hits) > 1:
		// getopt_long accepts a prefix of several names for one option;
		// the names of different options are ambiguous.
		o := s.byName[hits[0]]
		for _, h := range hits[1:] {
			if s.byName[h] != o {
				return "", s.mismatch("%s is ambiguous (%s)", name, strings.Join(hits, ", "))
			}
		}
		return hits[0], nil
	}
	return "", s.mismatch("unknown option %q", name)
}

// record notes a given option and its value.
func (s *spec) record(inv *invocation, o *option, name, val string, hasVal bool, words []string) error {
	inv.given = append(inv.given, o.names...)
	s.forbid(inv, o.deny, s.name+" "+name)
	if o.role == roleList {
		s.forbid(inv, "reads further arguments from a file the policy cannot read; name them on the command line", s.name+" "+name)
	}
	inv.sets = append(inv.sets, o.sets...)
	if !hasVal {
		return nil
	}
	if words != nil {
		inv.uses = append(inv.uses, use{words: words, role: o.role, opt: name})
		return nil
	}
	if len(o.values) > 0 && !matchesAny(o.values, val) {
		return s.mismatch("%s %q is not a value the spec allows", name, val)
	}
	switch o.role {
	case roleFlags:
		if o.flags == nil {
			return s.mismatch("%s: broken flag set", name)
		}
		v := val
		if o.prefix && !strings.HasPrefix(v, "-") {
			if k := strings.IndexByte(v, '='); k > 0 && !strings.ContainsAny(v[:k], " \t") {
				v = v[k+1:]
			}
		}
		fw, err := splitFlags(v)
		if err != nil {
			return s.mismatch("%s %q: %v", name, val, err)
		}
		// The words inside the value are parsed as options only.
		for k := 0; k < len(fw); k++ {
			if !o.flags.isOption(fw[k]) {
				return o.flags.mismatch("%q in %s is not an option", fw[k], name)
			}
			n, err := o.flags.option(inv, fw, k)
			if err != nil {
				return err
			}
			if n < 0 {
				break
			}
			k = n
		}
		return nil
	case roleSubcommand:
		return nil
	}
	inv.uses = append(inv.uses, use{word: val, role: o.role, opt: name})
	return nil
}

func matchesAny(res []*regexp.Regexp, v string) bool {
	for _, re := range res {
		if re.MatchString(v) {
			return true
		}
	}
	return false
}

// operandsOf gives each operand its place: fixed operands first, the
// fixed ones after a "many" from the end, the rest to the "many"; a
// command takes every word from its place on.
func (s *spec) operandsOf(inv *invocation, ops []string) error {
	var descs []*operand
	for _, d := range s.operands {
		if !slices.ContainsFunc(d.unless, inv.gave) && (len(d.when) == 0 || slices.ContainsFunc(d.when, inv.gave)) {
			descs = append(descs, d)
		}
	}
	if len(slices.DeleteFunc(slices.Clone(descs), func(d *operand) bool { return !d.many })) > 1 {
		return s.mismatch("the spec's unless and when leave more than one many operand")
	}
	place := func(d *operand, w string) error {
		if len(d.values) > 0 && !matchesAny(d.values, w) {
			return s.mismatch("operand %q is not a value the spec allows", w)
		}
		if d.split != "" {
			w, _, _ = strings.Cut(w, d.split)
		}
		inv.uses = append(inv.uses, use{word: w, role: d.role})
		return nil
	}
	if n := len(descs); n > 0 && descs[n-1].role == roleCommand {
		k := 0
		for _, d := range descs[:n-1] {
			for k < len(ops) && (d.role != roleAssign || envName.MatchString(ops[k])) {
				if err := place(d, ops[k]); err != nil {
					return err
				}
				k++
				if !d.many {
					break
				}
			}
		}
		last := descs[n-1]
		if k >= len(ops) {
			if !last.optional {
				return s.mismatch("no command to run")
			}
			return nil
		}
		inv.uses = append(inv.uses, use{words: ops[k:], role: last.role, appends: last.appends})
		return nil
	}
	m := slices.IndexFunc(descs, func(d *operand) bool { return d.many })
	front, back := descs, []*operand(nil)
	if m >= 0 {
		front, back = descs[:m], descs[m+1:]
	}
	if m < 0 && len(ops) > len(front) {
		return s.mismatch("unexpected operand %q", ops[len(front)])
	}
	k := 0
	for _, d := range front {
		if k >= len(ops) {
			if !d.optional {
				return s.mismatch("missing %s operand", d.role)
			}
			continue
		}
		if err := place(d, ops[k]); err != nil {
			return err
		}
		k++
	}
	if m < 0 {
		return nil
	}
	end := len(ops) - len(back)
	if end < k {
		end = k
	}
	for _, w := range ops[k:end] {
		if err := place(descs[m], w); err != nil {
			return err
		}
	}
	for j, d := range back {
		if end+j >= len(ops) {
			if !d.optional {
				return s.mismatch("missing %s operand", d.role)
			}
			continue
		}
		if err := place(d, ops[end+j]); err != nil {
			return err
		}
	}
	return nil
}

// splitFlags splits a flag value into words the way cmd/go splits
// -ldflags and GOFLAGS: on blanks, with single and double quotes.
func splitFlags(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c", quote)
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}
