package policy

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
)

// wideOpen is a policy that allows every program with a spec, so that
// only the specs and the path rules stand between a derived case and a
// run.
func wideOpen(t testing.TB) *Policy {
	t.Helper()
	ss, err := builtin()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("version: 1\npaths:\n  deny: [\".git/**\", \"**/.env\"]\n  read_only: [\"vendor/**\"]\ncommands:\n  read_only_dirs: [/usr]\n  allow:\n")
	for _, name := range slices.Sorted(mapsKeys(ss.programs)) {
		fmt.Fprintf(&b, "    - '%s *'\n", strings.ReplaceAll(name, "[", `\[`))
	}
	p, err := Parse("wide.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// derived is one case the generator built from a spec.
type derived struct {
	argv []string
	what string
}

// prefixes lists, for every spec reachable from the programs, the words
// that reach it (go build; python3 -m pytest).
func prefixes(ss *specSet) map[*spec][]string {
	out := map[*spec][]string{}
	var walk func(s *spec, words []string)
	walk = func(s *spec, words []string) {
		out[s] = words
		via := []string(nil)
		if len(s.operands) > 0 {
			// Subcommands of a spec with operands are chosen by an option.
			for _, o := range s.options {
				if o.role == roleSubcommand {
					via = []string{o.names[0]}
				}
			}
		}
		for _, n := range slices.Sorted(mapsKeys(s.sub)) {
			walk(s.sub[n], slices.Concat(words, via, []string{n}))
		}
	}
	for _, name := range slices.Sorted(mapsKeys(ss.programs)) {
		walk(ss.programs[name], []string{name})
	}
	return out
}

// spelled writes option name with value v the way the spec's style takes
// it, as one or two words.
func spelled(s *spec, o *option, name, v string) []string {
	switch {
	case s.style == styleSingle:
		return []string{name, v}
	case s.style == styleGo || strings.HasPrefix(name, "--"):
		return []string{name + "=" + v}
	case o.optional:
		return []string{name + v}
	}
	return []string{name, v}
}

// fillers are operands tried after a derived option until the spec
// accepts the argv: the case is about the option, not the operands.
var fillers = [][]string{nil, {"main.go"}, {"644", "main.go"}, {"main.go", "out"}, {"true"}, {"s/a/b/", "main.go"}, {"."}, {"x", "main.go"}}

// accepted returns argv with the first filler the spec parses, ignoring
// whether an option is forbidden (that is what the case tests).
func accepted(top *spec, argv []string) ([]string, bool) {
	for _, f := range fillers {
		a := slices.Concat(argv, f)
		if _, err := top.parse(a); err == nil {
			return a, true
		}
	}
	return nil, false
}

// deriveCases builds the adversarial cases the issue asks a generator
// for, from the specs alone: every write option pointed at .git/config, a
// read-only path and a path outside; every read option at a denied file;
// every code option with inline code; every script option and operand at
// a system script; every forbidden option, alone and through every
// abbreviation of its long names; every nested write (-ldflags=-o=...).
func deriveCases(t *testing.T, ss *specSet) (cases []derived, skipped []string) {
	pre := prefixes(ss)
	specs := slices.Collect(func(yield func(*spec) bool) {
		for s := range pre {
			if !yield(s) {
				return
			}
		}
	})
	sort.Slice(specs, func(i, j int) bool { return strings.Join(pre[specs[i]], " ") < strings.Join(pre[specs[j]], " ") })
	for _, s := range specs {
		words := pre[s]
		top := ss.lookup(words[0])
		// add adds argv with operands the spec accepts, and each variant:
		// the same words with the option spelled another way (an
		// abbreviation the spec may not know, so only the full spelling
		// must parse).
		add := func(what string, argv []string, variants ...[]string) {
			a, ok := accepted(top, argv)
			if !ok {
				skipped = append(skipped, strings.Join(argv, " "))
				return
			}
			cases = append(cases, derived{argv: a, what: what})
			for _, v := range variants {
				cases = append(cases, derived{argv: slices.Concat(v, a[len(argv):]), what: what + " as " + v[len(words)]})
			}
		}
		for _, o := range s.options {
			name := o.names[0]
			if o.deny != "" {
				v := []string(nil)
				if o.valued && !o.optional {
					v = []string{"x"}
					if len(o.until) > 0 {
						v = []string{"true", o.until[0]}
					}
				}
				for _, n := range o.names {
					var abbrevs [][]string
					if strings.HasPrefix(n, "--") {
						for k := 3; k < len(n); k++ {
							// A prefix that is itself an option is that
							// option, not an abbreviation (--text, --textconv).
							if _, exact := s.byName[n[:k]]; !exact {
								abbrevs = append(abbrevs, slices.Concat(words, spelledForbidden(s, o, n[:k], v)))
							}
						}
					}
					add("forbidden "+n, slices.Concat(words, spelledForbidden(s, o, n, v)), abbrevs...)
					// After an operand too, where operands are paths: go
					// vet and go test read flags there, and a spec that
					// took the flag for a path would let it through.
					// (After an interpreter's script, words are the
					// script's.)
					if pathOperands(s) {
						cases = append(cases, derived{argv: slices.Concat(words, []string{"."}, spelledForbidden(s, o, n, v)), what: "forbidden " + n + " after an operand"})
					}
				}
				continue
			}
			switch o.role {
			case roleWrite, roleWriteTree, roleDest:
				for _, v := range []string{".git/config", "vendor/x", "/tmp/trio-x"} {
					add("write "+name+" "+v, slices.Concat(words, spelled(s, o, name, v)))
				}
			case roleRead, roleInput, roleSource:
				add("read "+name, slices.Concat(words, spelled(s, o, name, ".env")))
			case roleCode:
				add("code "+name, slices.Concat(words, spelled(s, o, name, "import os")))
			case roleScript:
				add("script "+name, slices.Concat(words, spelled(s, o, name, "/usr/lib/x/evil.js")))
			case roleFlags:
				for _, fo := range o.flags.options {
					switch {
					case fo.deny != "":
						add("nested forbidden "+fo.names[0], slices.Concat(words, spelled(s, o, name, fo.names[0]+"=x")))
					case fo.role == roleWrite || fo.role == roleWriteTree:
						for _, v := range []string{".git/config", "vendor/x", "/tmp/trio-x"} {
							add("nested write "+fo.names[0], slices.Concat(words, spelled(s, o, name, fo.names[0]+"="+v)))
							add("nested write "+fo.names[0]+" with a blank", slices.Concat(words, spelled(s, o, name, fo.names[0]+" "+v)))
						}
					}
				}
			}
		}
		for _, d := range s.operands {
			switch d.role {
			case roleScript:
				add("script operand", slices.Concat(words, []string{"/usr/lib/python3/http/server.py"}))
			}
		}
		if s.deny != "" {
			add("forbidden subcommand", words)
		}
	}
	return cases, skipped
}

// pathOperands reports whether every operand of s is a path.
func pathOperands(s *spec) bool {
	for _, d := range s.operands {
		switch d.role {
		case roleRead, roleInput, rolePkgs, rolePkgsWrite, roleWrite, roleWriteTree, roleRev, rolePathspec:
		default:
			return false
		}
	}
	return len(s.operands) > 0
}

// spelledForbidden spells a forbidden option with its value, if any.
func spelledForbidden(s *spec, o *option, name string, v []string) []string {
	if len(v) == 1 {
		return spelled(s, o, name, v[0])
	}
	return append([]string{name}, v...)
}

// TestDerivedCases: every case derived from the specs is denied by a
// policy that allows every program, and the generator reaches most of
// what it tries (a spec whose options it cannot reach is a gap in it).
func TestDerivedCases(t *testing.T) {
	t.Parallel()
	ss, err := builtin()
	if err != nil {
		t.Fatal(err)
	}
	p := wideOpen(t)
	cases, skipped := deriveCases(t, ss)
	if len(cases) < 300 {
		t.Errorf("%d derived cases, want at least 300", len(cases))
	}
	if len(skipped) > len(cases)/5 {
		t.Errorf("the generator could not build %d of %d cases (%q...)", len(skipped), len(cases)+len(skipped), skipped[:min(5, len(skipped))])
	}
	for _, c := range cases {
		d := p.CheckCommand(Command{Argv: c.argv}, testScope)
		if d.Verdict != Deny {
			t.Errorf("%s: %q = %v (%s: %s)", c.what, c.argv, d.Verdict, d.Rule, d.Reason)
		}
	}
	t.Logf("%d derived cases denied, %d not buildable", len(cases), len(skipped))
}

// TestSpecExamples: every program spec carries examples, and a spec whose
// examples fail does not load, with the file and line of the spec.
func TestSpecExamples(t *testing.T) {
	t.Parallel()
	ss, err := builtin()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range slices.Sorted(mapsKeys(ss.programs)) {
		match, notMatch, options := 0, 0, 0
		ss.programs[name].walk(func(sp *spec) {
			n += len(sp.examples)
			options += len(sp.options)
			for _, e := range sp.examples {
				if e.match {
					match++
				} else {
					notMatch++
				}
			}
		})
		// A spec with options says at least one thing it refuses.
		if match == 0 || (options > 0 && notMatch == 0) {
			t.Errorf("%s: %d examples that must match and %d that must not", name, match, notMatch)
		}
	}
	if n < 200 {
		t.Errorf("%d spec examples, want at least 200", n)
	}
	for _, tt := range []struct {
		name, yaml, want string
	}{
		{"example must match", "programs:\n  foo:\n    options: [{names: [-a]}]\n    examples: {match: [\"foo -b\"]}\n",
			`x.yaml:3: foo.examples: "foo -b" must match, but foo: unknown option "-b" in "-b"`},
		{"example must not match", "programs:\n  foo:\n    options: [{names: [-a]}]\n    examples: {not_match: [\"foo -a\"]}\n",
			`x.yaml:3: foo.examples: "foo -a" must not match, but it is accepted`},
		{"unknown role", "programs:\n  foo:\n    options:\n      - {names: [-a], value: paths}\n",
			`x.yaml:4: programs.foo.options[0].value: unknown role "paths"`},
		{"unknown key", "programs:\n  foo:\n    option: []\n", `x.yaml:3`},
		{"bad option name", "programs:\n  foo:\n    options:\n      - {names: [-ab]}\n", `x.yaml:4: programs.foo.options[0]: option "-ab": gnu options are -x or --long`},
		{"two many operands", "programs:\n  foo:\n    operands: [{role: read, many: true}, {role: text, many: true}]\n", `x.yaml:3: programs.foo.operands: at most one operand`},
		{"bad value pattern", "programs:\n  foo:\n    options:\n      - {names: [-a], value: text, values: [\"(\"]}\n", `x.yaml:4: programs.foo.options[0].values`},
		{"unknown set", "programs:\n  foo:\n    options: [{set: nope}]\n", `x.yaml:3: programs.foo.options[0]: unknown option set "nope"`},
		{"command operand not last", "programs:\n  foo:\n    interspersed: false\n    operands: [{role: command}, {role: text}]\n", `a command operand must be the last`},
	} {
		one, err := parseSpecs("x.yaml", []byte(tt.yaml), nil)
		if err == nil {
			err = one.checkExamples()
		}
		var fe *FileError
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.As(err, &fe) {
			t.Errorf("%s: error %v, want a FileError containing %q", tt.name, err, tt.want)
		}
	}
}

// TestEngine: how argv is parsed against specs, one syntax at a time.
func TestEngine(t *testing.T) {
	t.Parallel()
	one, err := parseSpecs("engine.yaml", []byte(`
sets:
  ld:
    - {names: [-s]}
    - {names: [-o], value: write}
programs:
  g:
    abbrev: true
    options:
      - {names: [-v, --verbose]}
      - {names: [-o, --output], value: write}
      - {names: [--color], value: text, optional: true}
      - {names: [--ext-diff], deny: "runs a program"}
      - {names: [--exit-code]}
    operands: [{role: read, many: true}]
  gd:
    style: go
    options:
      - {names: [-race]}
      - {names: [-ldflags], value: "flags:ld", pattern_prefix: true}
    operands: [{role: pkgs, many: true}]
  f:
    style: single
    options:
      - {names: [-name], value: locate}
      - {names: [-exec], value: find-exec, until: [";", "+"]}
    operands: [{role: read, many: true}]
  w:
    interspersed: false
    options: [{names: [-n], value: text}]
    operands: [{role: text}, {role: command}]
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		argv   string
		uses   string // role:word, in order
		denied string
		err    string
	}{
		{argv: "g -vo out a b", uses: "write:out read:a read:b"},
		{argv: "g a --verb -ooo", uses: "write:oo read:a"},
		{argv: "g --out=x", uses: "write:x"},
		{argv: "g --color a", uses: "read:a"},
		{argv: "g --color=never a", uses: "text:never read:a"},
		{argv: "g --ext-d", denied: "runs a program"},
		{argv: "g --ex", err: "ambiguous"},
		{argv: "g --exi", uses: ""},
		{argv: "g -- -v", uses: "read:-v"},
		{argv: "g --verbose=1", err: "takes no value"},
		{argv: "g -x", err: `unknown option "-x"`},
		{argv: "g -o", err: "without a value"},
		{argv: "gd -race=false --ldflags=all=-s\\ -o\\ bin/x ./...", uses: "write:bin/x pkgs:./..."},
		{argv: "gd -ldflags=-x .", err: "unknown flag"},
		{argv: "gd -race=maybe .", err: "true or false"},
		{argv: "gd . -race", uses: "pkgs:. pkgs:-race"},
		{argv: "f . -name '*.go' -exec grep x {} ';'", uses: "locate:*.go find-exec:grep,x,{} read:."},
		{argv: "f . -exec rm {}", err: "without a closing"},
		{argv: "f . -name x y", err: "after the expression"},
		{argv: "w -n 5 10 go test -v", uses: "text:5 text:10 command:go,test,-v"},
		{argv: "w 10", err: "no command"},
	} {
		argv, perr := exampleArgv(tt.argv)
		if perr != nil {
			t.Fatalf("%s: %v", tt.argv, perr)
		}
		inv, err := one.lookup(argv[0]).parse(argv)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want %q", tt.argv, err, tt.err)
			}
			continue
		case err != nil:
			t.Errorf("%s: %v", tt.argv, err)
			continue
		case inv.denied != tt.denied:
			t.Errorf("%s: denied %q, want %q", tt.argv, inv.denied, tt.denied)
		}
		if tt.denied != "" {
			continue
		}
		var got []string
		for _, u := range inv.uses {
			w := u.word
			if u.words != nil {
				w = strings.Join(u.words, ",")
			}
			got = append(got, string(u.role)+":"+w)
		}
		if strings.Join(got, " ") != tt.uses {
			t.Errorf("%s: uses %q, want %q", tt.argv, strings.Join(got, " "), tt.uses)
		}
	}
}

// TestPolicyPrograms: a policy file's programs entry replaces a built-in
// spec (here narrowing sort to -u and -r), and a broken one is an error
// naming the policy file's line.
func TestPolicyPrograms(t *testing.T) {
	t.Parallel()
	p, err := Parse("narrow.yaml", []byte(`version: 1
commands:
  allow: ["sort *", "mytool *"]
programs:
  sort:
    options: [{names: [-u, -r]}]
    operands: [{role: read, many: true}]
    examples: {match: ["sort -u x"], not_match: ["sort -n x"]}
  mytool:
    options: [{names: [--out], value: write}]
    operands: [{role: read, many: true}]
`))
	if err != nil {
		t.Fatal(err)
	}
	runCommandCases(t, p, []cmdCase{
		{line: "sort -u a.txt", want: Allow},
		{line: "sort -n a.txt", want: Deny, rule: "spec-mismatch", why: "narrow.yaml"},
		{line: "mytool --out=/tmp/x a", want: Deny, rule: "path-outside-workspace"},
		{line: "mytool --frob a", want: Deny, rule: "spec-mismatch"},
		{line: "mytool a b", want: Allow},
		{line: "grep x a", want: Deny, rule: "default-deny"},
	})
	_, err = Parse("bad.yaml", []byte("version: 1\nprograms:\n  sort:\n    options: [{names: [-u]}]\n    examples: {match: [\"sort -n\"]}\n"))
	if err == nil || !strings.Contains(err.Error(), "bad.yaml:4") {
		t.Errorf("broken programs entry: %v, want an error naming bad.yaml:4", err)
	}
}

// TestShippedRulesHaveSpecs: every allow and ask rule of the shipped
// policies names a program with a spec (or a program by path, which has
// none), so that nothing they allow is matched by its pattern alone.
func TestShippedRulesHaveSpecs(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"policy.unattended.yaml", "policy.interactive.yaml", "policy.strict.yaml"} {
		p, err := Load("../configs/" + name)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.cmdAllow {
			if r.namesPath {
				continue
			}
			prog := r.words[0].g.text
			if !r.words[0].g.literal || p.specs.lookup(prog) == nil {
				t.Errorf("%s: %s names %q, which has no spec", name, r, prog)
			}
		}
	}
}
