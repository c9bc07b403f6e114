package policy

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Program specs are data: what each program the policy knows accepts
// (options, whether they take a value, what each value and operand is) lives
// in specs/*.yaml, embedded here. The engine (engine.go) parses an argv
// against a spec; judge.go applies the policy to what the parse found.
//
//go:embed specs/*.yaml
var specFiles embed.FS

// role is what a word means to the program that receives it. The engine
// knows this small vocabulary; the specs say which word has which role.
type role string

const (
	roleText        role = "text"         // not a path (a pattern, a message, a number)
	roleRead        role = "read"         // a path the program reads
	roleLocate      role = "locate"       // a glob selecting files the program then reads (find -name, grep --include)
	roleWrite       role = "write"        // a path the program writes (below it, too, once "recursive" is set)
	roleWriteTree   role = "write-tree"   // a path the program writes with everything below it
	roleInput       role = "input"        // a file read, and rewritten once "in-place" is set (sed -i)
	roleSuffix      role = "suffix"       // the backup suffix of an in-place edit; with a / it names a path
	roleSource      role = "source"       // cp/ln/install source: read; written once "links" is set
	roleMove        role = "move"         // mv source: it goes away
	roleDest        role = "dest"         // where sources land (cp/mv/ln DEST, -t DIR)
	rolePkgs        role = "pkgs"         // Go package patterns (./..., ./cmd/x) or files, read
	rolePkgsWrite   role = "pkgs-write"   // Go package patterns whose files are rewritten (go fmt)
	roleScript      role = "script"       // a script an interpreter runs: in the workspace, or named by a rule
	roleCode        role = "code"         // inline code: only a rule naming the option literally allows it
	roleList        role = "list"         // a file of further arguments the policy cannot read (xargs -a, --files0-from)
	roleCommand     role = "command"      // the rest is a command, judged as what it runs
	roleShellCode   role = "shell-code"   // a command line for sh -c, judged as a line
	roleSedScript   role = "sed-script"   // a sed script, read command by command
	roleFindExec    role = "find-exec"    // find -exec CMD ... ; or {} +
	roleAssign      role = "assign"       // NAME=VALUE for the command that follows
	roleChdir       role = "chdir"        // a folder the program works in: relative words are judged from it
	roleRev         role = "rev"          // a git revision, or REV:PATH naming a file in history
	rolePathspec    role = "pathspec"     // a git pathspec; a glob selects files in history
	roleSubcommand  role = "subcommand"   // the value selects a subcommand spec (python3 -m MODULE)
	roleReplace     role = "replace"      // xargs -I: the string replaced by each input word
	roleFindExecDir role = "find-execdir" // find -execdir/-okdir: the command runs in each found file's folder
	roleFlags       role = "flags"        // written flags:SET, the value is split into words parsed against SET
)

var knownRoles = []role{roleText, roleRead, roleLocate, roleWrite, roleWriteTree, roleInput, roleSuffix, roleSource,
	roleMove, roleDest, rolePkgs, rolePkgsWrite, roleScript, roleCode, roleList, roleCommand, roleShellCode,
	roleSedScript, roleFindExec, roleFindExecDir, roleAssign, roleChdir, roleRev, rolePathspec, roleSubcommand, roleReplace}

// style is an option syntax.
type style string

const (
	styleGNU    style = "gnu"    // getopt_long: -abc clusters, -ovalue, --long[=value], -- ends options
	styleGo     style = "go"     // Go's flag package: -name or --name, -name=value or -name value
	styleSingle style = "single" // whole words only (find's expression: -name PAT, -exec ... ;)
	styleNone   style = "none"   // no options: every word is an operand (test, printf)
)

// spec is a compiled program (or subcommand) spec.
type spec struct {
	name         string // "go build"
	file         string
	line         int
	style        style
	abbrev       bool // long options may be abbreviated to a unique prefix, as getopt_long allows
	interspersed bool // options may follow operands
	filter       bool // reads files or standard input and writes standard output only
	deny         string
	sets         []string // set whenever the program runs (ln: links)
	atRoot       bool     // runs only in the workspace root (git: no nested or bare repository is found)
	creates      []string // files it writes in the folder it works in (go mod init: go.mod)
	options      []*option
	byName       map[string]*option
	longNames    []string // sorted, for abbreviations
	operands     []*operand
	sub          map[string]*spec
	env          []*envVar
	examples     []example
}

type option struct {
	names    []string
	role     role
	flags    *spec // for flags:SET
	valued   bool
	optional bool // the value may only be attached (--color[=WHEN], -i[SUFFIX])
	values   []*regexp.Regexp
	deny     string
	sets     []string
	rest     bool     // takes every remaining word (go test -args)
	until    []string // takes the words up to one of these (find -exec ... ;)
	prefix   bool     // the value may start with PATTERN= (go -gcflags=all=-N)
	line     int
}

type operand struct {
	role     role
	many     bool
	optional bool
	unless   []string
	when     []string
	split    string
	values   []*regexp.Regexp
	appends  bool // xargs: the command gets the words read from input
	line     int
}

type envVar struct {
	name   glob
	role   role
	flags  *spec
	values []*regexp.Regexp
	deny   string
}

// specSet is every program spec the policy knows, by name and alias.
type specSet struct {
	programs map[string]*spec
	aliases  []aliasSpec
	env      []*envVar // safe for every program
}

type aliasSpec struct {
	g glob
	s *spec
}

// lookup returns the spec for a program name (a bare name; programs named
// by path have none).
func (ss *specSet) lookup(name string) *spec {
	if ss == nil || strings.Contains(name, "/") {
		return nil
	}
	if s, ok := ss.programs[name]; ok {
		return s
	}
	for _, a := range ss.aliases {
		if a.g.match(name) {
			return a.s
		}
	}
	return nil
}

// with returns a copy of ss in which the programs of o replace those of ss.
func (ss *specSet) with(o *specSet) *specSet {
	c := &specSet{programs: map[string]*spec{}, env: slices.Concat(ss.env, o.env)}
	for k, v := range ss.programs {
		c.programs[k] = v
	}
	for k, v := range o.programs {
		c.programs[k] = v
	}
	for _, a := range o.aliases {
		c.aliases = append(c.aliases, a)
	}
	for _, a := range ss.aliases {
		if _, replaced := o.programs[a.s.root0()]; !replaced {
			c.aliases = append(c.aliases, a)
		}
	}
	return c
}

func (s *spec) root0() string {
	name, _, _ := strings.Cut(s.name, " ")
	return name
}

var (
	builtinOnce  sync.Once
	builtinSpecs *specSet
	builtinErr   error
)

// builtin returns the embedded specs, compiled once; a broken embedded
// spec is a bug that every test shows.
func builtin() (*specSet, error) {
	builtinOnce.Do(func() {
		ss := &specSet{programs: map[string]*spec{}}
		names, _ := fs.Glob(specFiles, "specs/*.yaml")
		sort.Strings(names)
		var errs []error
		for _, n := range names {
			data, _ := specFiles.ReadFile(n)
			one, err := parseSpecs("policy/"+n, data, nil)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			ss = ss.with(one)
		}
		if len(errs) > 0 {
			builtinErr = errors.Join(errs...)
			return
		}
		if err := ss.checkExamples(); err != nil {
			builtinErr = err
			return
		}
		builtinSpecs = ss
	})
	return builtinSpecs, builtinErr
}

// Raw YAML shapes. Every node records its line so that a problem found
// after decoding still names file:line.

type rawSpecFile struct {
	Env      map[string]*rawEnv   `yaml:"env"`
	Sets     map[string][]*rawOpt `yaml:"sets"`
	Programs map[string]*rawSpec  `yaml:"programs"`
}

type rawSpec struct {
	line         int
	Aliases      []string            `yaml:"aliases"`
	About        string              `yaml:"about"`
	Style        string              `yaml:"style"`
	Abbrev       bool                `yaml:"abbrev"`
	Interspersed *bool               `yaml:"interspersed"`
	Filter       bool                `yaml:"filter"`
	Deny         string              `yaml:"deny"`
	Sets         []string            `yaml:"sets"`
	AtRoot       bool                `yaml:"workspace_root"`
	Creates      []string            `yaml:"creates"`
	Options      []*rawOpt           `yaml:"options"`
	Operands     []*rawOperand       `yaml:"operands"`
	Subcommands  map[string]*rawSpec `yaml:"subcommands"`
	Env          map[string]*rawEnv  `yaml:"env"`
	Examples     struct {
		Match    []string `yaml:"match"`
		NotMatch []string `yaml:"not_match"`
	} `yaml:"examples"`
}

type rawOpt struct {
	line     int
	Set      string   `yaml:"set"`
	Names    []string `yaml:"names"`
	Value    string   `yaml:"value"`
	Optional bool     `yaml:"optional"`
	Values   []string `yaml:"values"`
	Deny     string   `yaml:"deny"`
	Sets     []string `yaml:"sets"`
	Rest     bool     `yaml:"rest"`
	Until    []string `yaml:"until"`
	Prefix   bool     `yaml:"pattern_prefix"`
}

type rawOperand struct {
	line     int
	Role     string   `yaml:"role"`
	Many     bool     `yaml:"many"`
	Optional bool     `yaml:"optional"`
	Unless   []string `yaml:"unless"`
	When     []string `yaml:"when"`
	Split    string   `yaml:"split"`
	Values   []string `yaml:"values"`
	Appends  bool     `yaml:"appends_input"`
}

type rawEnv struct {
	line   int
	Value  string   `yaml:"value"`
	Values []string `yaml:"values"`
	Deny   string   `yaml:"deny"`
}

func lineOf(n ast.Node) int {
	if tk := n.GetToken(); tk != nil {
		return tk.Position.Line
	}
	return 0
}

// The UnmarshalYAML methods decode through a local type (so as not to
// recurse) and keep the node's line.

func (r *rawSpec) UnmarshalYAML(n ast.Node) error {
	type plain rawSpec
	var p plain
	if err := yaml.NodeToValue(n, &p, yaml.Strict()); err != nil {
		return err
	}
	*r = rawSpec(p)
	r.line = lineOf(n)
	return nil
}

func (r *rawOpt) UnmarshalYAML(n ast.Node) error {
	type plain rawOpt
	var p plain
	if err := yaml.NodeToValue(n, &p, yaml.Strict()); err != nil {
		return err
	}
	*r = rawOpt(p)
	r.line = lineOf(n)
	return nil
}

func (r *rawOperand) UnmarshalYAML(n ast.Node) error {
	type plain rawOperand
	var p plain
	if err := yaml.NodeToValue(n, &p, yaml.Strict()); err != nil {
		return err
	}
	*r = rawOperand(p)
	r.line = lineOf(n)
	return nil
}

func (r *rawEnv) UnmarshalYAML(n ast.Node) error {
	type plain rawEnv
	var p plain
	if err := yaml.NodeToValue(n, &p, yaml.Strict()); err != nil {
		return err
	}
	*r = rawEnv(p)
	r.line = lineOf(n)
	return nil
}

// parseSpecs reads one spec file. base, when set, is the spec set a
// policy file's programs extend (their sets are looked up there too).
func parseSpecs(name string, data []byte, base *specSet) (*specSet, error) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, yamlError(name, nil, err)
	}
	if len(f.Docs) != 1 || f.Docs[0].Body == nil {
		return nil, &FileError{File: name, Line: 1, Msg: "want one YAML document with programs:"}
	}
	var raw rawSpecFile
	if err := yaml.NodeToValue(f.Docs[0].Body, &raw, yaml.Strict()); err != nil {
		return nil, yamlError(name, f, err)
	}
	return compileSpecFile(name, &raw)
}

type specCompiler struct {
	file string
	sets map[string][]*rawOpt
	errs []error
	// flagSpecs caches the specs built for flags:SET.
	flagSpecs map[string]*spec
}

func (sc *specCompiler) fail(line int, key, format string, args ...any) {
	sc.errs = append(sc.errs, &FileError{File: sc.file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

func compileSpecFile(name string, raw *rawSpecFile) (*specSet, error) {
	sc := &specCompiler{file: name, sets: raw.Sets, flagSpecs: map[string]*spec{}}
	ss := &specSet{programs: map[string]*spec{}}
	ss.env = sc.envVars("env", raw.Env, "")
	progs := make([]string, 0, len(raw.Programs))
	for p := range raw.Programs {
		progs = append(progs, p)
	}
	sort.Strings(progs)
	for _, p := range progs {
		r := raw.Programs[p]
		if r == nil {
			sc.fail(1, "programs."+p, "empty program spec")
			continue
		}
		if strings.ContainsAny(p, " /") || p == "" {
			sc.fail(r.line, "programs."+p, "a program name has no blanks or slashes")
			continue
		}
		s := sc.spec(p, "programs."+p, r, styleGNU)
		ss.programs[p] = s
		for _, a := range r.Aliases {
			g, err := compileWordGlob(a)
			if err != nil {
				sc.fail(r.line, "programs."+p+".aliases", "alias %q: %v", a, err)
				continue
			}
			ss.aliases = append(ss.aliases, aliasSpec{g: g, s: s})
		}
	}
	if len(sc.errs) > 0 {
		return nil, errors.Join(sc.errs...)
	}
	return ss, nil
}

func (sc *specCompiler) spec(name, key string, r *rawSpec, inherit style) *spec {
	s := &spec{name: name, file: sc.file, line: r.line, style: inherit, abbrev: r.Abbrev, filter: r.Filter,
		deny: r.Deny, sets: r.Sets, atRoot: r.AtRoot, creates: r.Creates, byName: map[string]*option{}}
	if r.Style != "" {
		switch st := style(r.Style); st {
		case styleGNU, styleGo, styleSingle, styleNone:
			s.style = st
		default:
			sc.fail(r.line, key+".style", "unknown style %q (want gnu, go, single or none)", r.Style)
		}
	}
	s.interspersed = s.style == styleGNU
	if r.Interspersed != nil {
		s.interspersed = *r.Interspersed
	}
	sc.options(s, key, r.Options, 0)
	for i, o := range r.Operands {
		s.operands = append(s.operands, sc.operand(fmt.Sprintf("%s.operands[%d]", key, i), o))
	}
	sc.checkOperands(s, key)
	s.env = sc.envVars(key+".env", r.Env, s.style)
	if len(r.Subcommands) > 0 {
		s.sub = map[string]*spec{}
		for n, sr := range r.Subcommands {
			if sr == nil {
				sc.fail(r.line, key+".subcommands."+n, "empty subcommand spec")
				continue
			}
			s.sub[n] = sc.spec(name+" "+n, key+".subcommands."+n, sr, s.style)
		}
	}
	for _, m := range r.Examples.Match {
		s.examples = append(s.examples, example{line: m, match: true, at: r.line})
	}
	for _, m := range r.Examples.NotMatch {
		s.examples = append(s.examples, example{line: m, at: r.line})
	}
	for n := range s.byName {
		if strings.HasPrefix(n, "--") {
			s.longNames = append(s.longNames, n)
		}
	}
	sort.Strings(s.longNames)
	return s
}

func (sc *specCompiler) options(s *spec, key string, raws []*rawOpt, depth int) {
	for i, r := range raws {
		k := fmt.Sprintf("%s.options[%d]", key, i)
		if r == nil {
			sc.fail(s.line, k, "empty option")
			continue
		}
		if r.Set != "" {
			set, ok := sc.sets[r.Set]
			switch {
			case !ok:
				sc.fail(r.line, k, "unknown option set %q", r.Set)
			case depth > 4:
				sc.fail(r.line, k, "option sets nest too deeply")
			case len(r.Names) > 0 || r.Value != "":
				sc.fail(r.line, k, "an entry with set: names nothing else")
			default:
				sc.options(s, k+"("+r.Set+")", set, depth+1)
			}
			continue
		}
		o := sc.option(k, r, s.style)
		if o == nil {
			continue
		}
		for _, n := range o.names {
			if _, dup := s.byName[n]; dup {
				sc.fail(r.line, k, "option %s listed twice in %s", n, s.name)
				continue
			}
			s.byName[n] = o
		}
		s.options = append(s.options, o)
	}
}

func (sc *specCompiler) option(key string, r *rawOpt, st style) *option {
	o := &option{names: r.Names, optional: r.Optional, deny: r.Deny, sets: r.Sets, rest: r.Rest, until: r.Until,
		prefix: r.Prefix, line: r.line}
	if len(r.Names) == 0 {
		sc.fail(r.line, key, "an option needs names")
		return nil
	}
	for _, n := range r.Names {
		switch {
		case st == styleGNU && !(len(n) == 2 && n[0] == '-' && n[1] != '-') && !(len(n) > 3 && strings.HasPrefix(n, "--")):
			sc.fail(r.line, key, "option %q: gnu options are -x or --long", n)
		case st == styleGo && !(len(n) > 1 && n[0] == '-' && n[1] != '-'):
			sc.fail(r.line, key, "option %q: go options are written -name (--name is accepted too)", n)
		case st == styleSingle && (n == "" || strings.ContainsAny(n, " \t")):
			sc.fail(r.line, key, "option %q: a whole word", n)
		}
	}
	if r.Value != "" {
		o.valued = true
		if set, ok := strings.CutPrefix(r.Value, "flags:"); ok {
			o.role = roleFlags
			o.flags = sc.flagSpec(set, st, r.line, key)
		} else {
			o.role = sc.role(r.line, key+".value", r.Value)
		}
	} else if r.Optional || r.Rest || len(r.Until) > 0 || len(r.Values) > 0 {
		sc.fail(r.line, key, "optional, rest, until and values need a value: role")
	}
	o.values = sc.regexps(r.line, key+".values", r.Values)
	return o
}

// flagSpec builds the spec of an option set whose words come inside one
// value (-ldflags, GOFLAGS).
func (sc *specCompiler) flagSpec(set string, st style, line int, key string) *spec {
	if s, ok := sc.flagSpecs[set]; ok {
		return s
	}
	raws, ok := sc.sets[set]
	if !ok {
		sc.fail(line, key, "unknown option set %q", set)
		return nil
	}
	s := &spec{name: set, file: sc.file, line: line, style: st, byName: map[string]*option{}}
	sc.flagSpecs[set] = s
	sc.options(s, "sets."+set, raws, 1)
	return s
}

func (sc *specCompiler) role(line int, key, v string) role {
	r := role(v)
	if !slices.Contains(knownRoles, r) {
		sc.fail(line, key, "unknown role %q (see docs/policy.md, Program specs)", v)
	}
	return r
}

func (sc *specCompiler) regexps(line int, key string, src []string) []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, v := range src {
		re, err := regexp.Compile("^(?:" + v + ")$")
		if err != nil {
			sc.fail(line, key, "value pattern %q: %v", v, err)
			continue
		}
		out = append(out, re)
	}
	return out
}

func (sc *specCompiler) operand(key string, r *rawOperand) *operand {
	if r == nil {
		sc.fail(0, key, "empty operand")
		return &operand{role: roleText}
	}
	return &operand{role: sc.role(r.line, key+".role", r.Role), many: r.Many, optional: r.Optional, unless: r.Unless, when: r.When,
		split: r.Split, values: sc.regexps(r.line, key+".values", r.Values), appends: r.Appends, line: r.line}
}

// checkOperands enforces the shapes the engine assigns without guessing: at
// most one "many" (it takes what the fixed operands around it leave), and
// a command last.
func (sc *specCompiler) checkOperands(s *spec, key string) {
	many := 0
	for i, o := range s.operands {
		if o.many && len(o.unless) == 0 && len(o.when) == 0 {
			many++
		}
		if o.role == roleCommand && s.interspersed {
			sc.fail(o.line, key, "a spec with a command operand must set interspersed: false")
		}
		if o.role == roleCommand && i != len(s.operands)-1 {
			sc.fail(o.line, key, "a %s operand must be the last", o.role)
		}
		for _, u := range slices.Concat(o.unless, o.when) {
			if _, ok := s.byName[u]; !ok {
				sc.fail(o.line, key, "unless names %q, which is not an option of %s", u, s.name)
			}
		}
	}
	if many > 1 {
		sc.fail(s.line, key+".operands", "at most one operand without unless or when may be many")
	}
}

func (sc *specCompiler) envVars(key string, raws map[string]*rawEnv, st style) []*envVar {
	names := make([]string, 0, len(raws))
	for n := range raws {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []*envVar
	for _, n := range names {
		r := raws[n]
		if r == nil {
			r = &rawEnv{}
		}
		g, err := compileWordGlob(n)
		if err != nil {
			sc.fail(r.line, key+"."+n, "variable name %q: %v", n, err)
			continue
		}
		v := &envVar{name: g, role: roleText, deny: r.Deny, values: sc.regexps(r.line, key+"."+n, r.Values)}
		if r.Value != "" {
			if set, ok := strings.CutPrefix(r.Value, "flags:"); ok {
				v.role = roleFlags
				v.flags = sc.flagSpec(set, st, r.line, key+"."+n)
			} else {
				v.role = sc.role(r.line, key+"."+n+".value", r.Value)
			}
		}
		out = append(out, v)
	}
	return out
}

// example is an argv line a spec must (match) or must not accept.
type example struct {
	line  string
	match bool
	at    int
}

// checkExamples parses every spec's examples: a spec whose examples fail
// does not load. Paths are not judged here (no policy is involved), only
// the grammar: a must-match example parses with no forbidden option; a
// must-not-match one does not.
func (ss *specSet) checkExamples() error { return ss.checkExamplesIn(ss) }

// checkExamplesIn checks the examples of ss's programs, resolving each
// example's program in all (wrappers name other programs).
func (ss *specSet) checkExamplesIn(all *specSet) error {
	var errs []error
	for _, name := range slices.Sorted(mapsKeys(ss.programs)) {
		ss.programs[name].walk(func(s *spec) {
			for _, ex := range s.examples {
				argv, err := exampleArgv(ex.line)
				if err != nil {
					errs = append(errs, &FileError{File: s.file, Line: ex.at, Key: s.name + ".examples", Msg: fmt.Sprintf("%q: %v", ex.line, err)})
					continue
				}
				top := all.lookup(argv[0])
				if top == nil {
					errs = append(errs, &FileError{File: s.file, Line: ex.at, Key: s.name + ".examples", Msg: fmt.Sprintf("%q: no spec for %s", ex.line, argv[0])})
					continue
				}
				inv, perr := top.parse(argv)
				ok := perr == nil && inv.denied == ""
				if ok != ex.match {
					why := "it is accepted"
					if perr != nil {
						why = perr.Error()
					} else if inv.denied != "" {
						why = "denied: " + inv.denied
					}
					want := "must match"
					if !ex.match {
						want = "must not match"
					}
					errs = append(errs, &FileError{File: s.file, Line: ex.at, Key: s.name + ".examples",
						Msg: fmt.Sprintf("%q %s, but %s", ex.line, want, why)})
				}
			}
		})
	}
	return errors.Join(errs...)
}

// wraps reports whether the program, or a subcommand of it, runs another
// command it is given (env, xargs, sh -c, find -exec, git -c alias...):
// such a program's arguments must be understood to know what runs.
func (s *spec) wraps() bool {
	runs := func(r role) bool {
		return r == roleCommand || r == roleShellCode || r == roleFindExec || r == roleFindExecDir
	}
	found := false
	s.walk(func(x *spec) {
		for _, o := range x.options {
			found = found || runs(o.role)
		}
		for _, op := range x.operands {
			found = found || runs(op.role)
		}
	})
	return found
}

func (s *spec) walk(f func(*spec)) {
	f(s)
	for _, n := range slices.Sorted(mapsKeys(s.sub)) {
		s.sub[n].walk(f)
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// exampleArgv reads an example as a plain command line.
func exampleArgv(line string) ([]string, error) {
	f, err := parseShell(line)
	if err != nil {
		return nil, err
	}
	argv, ok := simpleArgv(f)
	if !ok {
		return nil, errors.New("not one plain command")
	}
	return argv, nil
}

// String is how a reason names a spec: "go build (policy/specs/go.yaml:12)".
func (s *spec) String() string {
	return fmt.Sprintf("%s (%s:%d)", s.name, path.Clean(s.file), s.line)
}
