package policy

import (
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/scanner"
	"github.com/goccy/go-yaml/token"

	"github.com/trioagent/trio/internal/yamldecode"
)

//go:embed default.yaml
var defaultYAML []byte

var (
	defaultOnce   sync.Once
	defaultPolicy *Policy
)

// Default returns the built-in strict policy (default.yaml in this package,
// the same rules as configs/policy.strict.yaml): read-mostly, only Go and
// Python test and build commands, no shell, no network.
func Default() *Policy {
	defaultOnce.Do(func() {
		p, err := Parse("policy/default.yaml", defaultYAML)
		if err != nil {
			panic("policy: built-in default: " + err.Error())
		}
		defaultPolicy = p
	})
	return defaultPolicy
}

// Load reads and parses a policy file.
func Load(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load policy: %w", err)
	}
	return Parse(path, data)
}

// Parse parses a policy file; name is used in error messages and in
// Decision.Rule. Every problem (unknown key, wrong type, bad duration or
// size, malformed pattern, unknown version or mode) is a *FileError naming
// the line and the key.
func Parse(name string, data []byte) (*Policy, error) {
	if err := checkShape(name, data); err != nil {
		return nil, err
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, yamlError(name, nil, err)
	}
	if len(f.Docs) != 1 || f.Docs[0] == nil || f.Docs[0].Body == nil {
		if len(f.Docs) > 1 {
			return nil, &FileError{File: name, Msg: "more than one YAML document"}
		}
		return nil, &FileError{File: name, Line: 1, Msg: "empty policy file (version: 1 is required)"}
	}
	// Key by key, so that every mistake of the file is reported at once:
	// the keys that decode are built and checked too.
	var raw rawPolicy
	var errs []error
	for _, err := range yamldecode.All(f.Docs[0].Body, &raw) {
		errs = append(errs, yamlError(name, f, err))
	}
	p, err := build(name, f, &raw)
	if len(errs) == 0 {
		return p, err
	}
	if err != nil {
		errs = append(errs, unjoin(err)...)
	}
	slices.SortStableFunc(errs, func(a, b error) int {
		var ea, eb *FileError
		errors.As(a, &ea)
		errors.As(b, &eb)
		return cmp.Or(cmp.Compare(errLine(ea), errLine(eb)), cmp.Compare(errCol(ea), errCol(eb)))
	})
	return nil, errors.Join(slices.CompactFunc(errs, func(a, b error) bool { return a.Error() == b.Error() })...)
}

// unjoin is the errors errors.Join made err of, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func errLine(e *FileError) int {
	if e == nil {
		return 0
	}
	return e.Line
}

func errCol(e *FileError) int {
	if e == nil {
		return 0
	}
	return e.Column
}

// Bounds of a policy file: far beyond any real one, and small enough that
// the YAML parser (whose cost grows with the square of the nesting) stays
// fast on anything that passes them.
const (
	maxFileBytes = 256 << 10
	maxNesting   = 64
)

// checkShape refuses a file too large or nested too deep to be a policy,
// before the parser spends time on it. Block nesting costs indentation, so
// the size bounds it; flow nesting ([[[...]]]) is counted on the lexer's
// scanner's tokens as they come, which stops at the first level too deep.
func checkShape(name string, data []byte) error {
	if len(data) > maxFileBytes {
		return &FileError{File: name, Msg: fmt.Sprintf("the file is %d bytes; a policy file may hold at most %d", len(data), maxFileBytes)}
	}
	var sc scanner.Scanner
	sc.Init(string(data))
	depth := 0
	for {
		tks, err := sc.Scan()
		if err != nil {
			return nil // the end, or an error the parser will name
		}
		for _, tk := range tks {
			switch tk.Type {
			case token.SequenceStartType, token.MappingStartType:
				depth++
				if depth > maxNesting {
					return &FileError{File: name, Line: tk.Position.Line, Column: tk.Position.Column,
						Msg: fmt.Sprintf("nested more than %d levels deep", maxNesting)}
				}
			case token.SequenceEndType, token.MappingEndType:
				depth--
			}
		}
	}
}

// scalar is one leaf of the file with its position; the decoder fills it
// and build checks its type, so messages speak of keys and lines, not Go
// types.
type scalar struct {
	set   bool
	kind  ast.NodeType
	value string
	line  int
	col   int
	key   string
}

func (s *scalar) UnmarshalYAML(n ast.Node) error {
	tk := n.GetToken()
	*s = scalar{set: true, kind: n.Type(), key: keyOf(n.GetPath())}
	if tk != nil {
		s.line, s.col = tk.Position.Line, tk.Position.Column
	}
	switch v := n.(type) {
	case *ast.StringNode:
		s.value = v.Value
	case *ast.LiteralNode:
		s.value = v.Value.Value
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		s.value = tk.Value
	case *ast.NullNode:
		s.set = false
	default:
		return &FileError{Line: s.line, Column: s.col, Key: s.key,
			Msg: fmt.Sprintf("want a single value, got %s", withArticle(n.Type().YAMLName()))}
	}
	return nil
}

type rawPolicy struct {
	Version   scalar `yaml:"version"`
	Mode      scalar `yaml:"mode"`
	Workspace scalar `yaml:"workspace"`
	Paths     struct {
		Deny     []scalar `yaml:"deny"`
		ReadOnly []scalar `yaml:"read_only"`
		Allow    []scalar `yaml:"allow"`
	} `yaml:"paths"`
	Commands struct {
		Allow        []scalar `yaml:"allow"`
		Ask          []scalar `yaml:"ask"`
		Deny         []scalar `yaml:"deny"`
		Shell        scalar   `yaml:"shell"`
		ReadOnlyDirs []scalar `yaml:"read_only_dirs"`
	} `yaml:"commands"`
	// Programs add program specs or replace built-in ones (specs/*.yaml).
	Programs map[string]*rawSpec `yaml:"programs"`
	Limits   struct {
		Timeout scalar `yaml:"timeout"`
		Memory  scalar `yaml:"memory"`
		CPUs    scalar `yaml:"cpus"`
		Pids    scalar `yaml:"pids"`
		Output  scalar `yaml:"output"`
		Disk    scalar `yaml:"disk"`
		File    scalar `yaml:"file"`
		Network scalar `yaml:"network"`
	} `yaml:"limits"`
	Confirm struct {
		Timeout scalar `yaml:"timeout"`
		Default scalar `yaml:"default"`
	} `yaml:"confirm"`
	Tools struct {
		Allow []scalar `yaml:"allow"`
		Ask   []scalar `yaml:"ask"`
		Deny  []scalar `yaml:"deny"`
	} `yaml:"tools"`
}

// Defaults applied when a file omits a key.
const (
	DefaultTimeout = 120 * time.Second
	DefaultMemory  = 1 << 30
	DefaultCPUs    = 0 // no CPU quota: it slows every build, and memory, pids, disk and the timeout bound a runaway command
	DefaultPids    = 256
	DefaultOutput  = 64 << 10
	DefaultDisk    = 4 << 30 // a project, its dependencies and a build cache fit; a runaway run does not fill the host
	// DefaultFile bounds one file the file tools write: far above any
	// source file a model writes, far below what fills a disk.
	DefaultFile           = 4 << 20
	DefaultConfirmTimeout = 5 * time.Minute
)

type builder struct {
	name string
	file *ast.File
	errs []error
}

// locate fills in the position of an item the decoder left empty (a null
// list item), from its key.
func (b *builder) locate(s *scalar, key string) {
	s.key = key
	if b.file == nil {
		return
	}
	p, err := yaml.PathString("$." + key)
	if err != nil {
		return
	}
	if n, err := p.FilterFile(b.file); err == nil && n != nil && n.GetToken() != nil {
		s.line, s.col = n.GetToken().Position.Line, n.GetToken().Position.Column
	}
}

func (b *builder) fail(s scalar, format string, args ...any) {
	b.errs = append(b.errs, &FileError{File: b.name, Line: s.line, Column: s.col, Key: s.key, Msg: fmt.Sprintf(format, args...)})
}

func build(name string, f *ast.File, raw *rawPolicy) (*Policy, error) {
	b := &builder{name: name, file: f}
	p := &Policy{
		name: name,
		limits: Limits{
			Timeout: DefaultTimeout, Memory: DefaultMemory, CPUs: DefaultCPUs,
			Pids: DefaultPids, Output: DefaultOutput, Disk: DefaultDisk, File: DefaultFile,
		},
		confirmTimeout: DefaultConfirmTimeout,
		workspace:      ".",
	}

	switch {
	case !raw.Version.set:
		b.errs = append(b.errs, &FileError{File: name, Line: 1, Key: "version", Msg: "required (version: 1)"})
	case raw.Version.kind != ast.IntegerType || raw.Version.value != "1":
		b.fail(raw.Version, "unknown version %q (this Trio reads version 1)", raw.Version.value)
	}
	if raw.Mode.set {
		switch m := b.str(raw.Mode); m {
		case "interactive":
		case "unattended":
			p.unattended = true
		default:
			b.fail(raw.Mode, "unknown mode %q (want interactive or unattended)", m)
		}
	}
	if raw.Workspace.set {
		if w := b.str(raw.Workspace); w == "" {
			b.fail(raw.Workspace, "empty workspace")
		} else {
			p.workspace = w
		}
	}

	p.pathDeny = b.pathRules("paths.deny", raw.Paths.Deny)
	p.pathReadOnly = b.pathRules("paths.read_only", raw.Paths.ReadOnly)
	p.pathAllow = b.pathRules("paths.allow", raw.Paths.Allow)
	p.hasPathAllow = raw.Paths.Allow != nil

	p.cmdDeny = b.commandRules("commands.deny", raw.Commands.Deny)
	p.cmdAsk = b.commandRules("commands.ask", raw.Commands.Ask)
	p.cmdAllow = b.commandRules("commands.allow", raw.Commands.Allow)
	if sh := raw.Commands.Shell; sh.set {
		switch {
		case sh.kind == ast.StringType && sh.value == "pipes":
			p.pipes = true
		case sh.kind == ast.BoolType:
			p.shell = b.boolean(sh)
		default:
			b.fail(sh, "want true, false or pipes, got %q", sh.value)
		}
	}
	p.specs = b.specs(raw.Programs)
	for i, s := range raw.Commands.ReadOnlyDirs {
		if !s.set {
			b.locate(&s, fmt.Sprintf("commands.read_only_dirs[%d]", i))
			b.fail(s, "empty directory (a bare ~ is null in YAML; quote it)")
			continue
		}
		d := b.str(s)
		switch {
		case d == "":
			b.fail(s, "empty directory")
		case !strings.HasPrefix(d, "/") && d != "~" && !strings.HasPrefix(d, "~/"):
			b.fail(s, "%q is not absolute (start it with / or ~/)", d)
		case d == "/":
			b.fail(s, `"/" would let arguments name the whole file system`)
		default:
			p.readOnlyDirs = append(p.readOnlyDirs, path.Clean(d))
		}
	}

	l := &raw.Limits
	if l.Timeout.set {
		p.limits.Timeout = b.duration(l.Timeout)
	}
	if l.Memory.set {
		p.limits.Memory = b.size(l.Memory)
	}
	if l.CPUs.set {
		v, err := strconv.ParseFloat(l.CPUs.value, 64)
		if (l.CPUs.kind != ast.IntegerType && l.CPUs.kind != ast.FloatType) || err != nil || !(v > 0) || math.IsInf(v, 0) {
			b.fail(l.CPUs, "want a positive number of CPUs, got %q", l.CPUs.value)
		}
		p.limits.CPUs = v
	}
	if l.Pids.set {
		v, err := strconv.ParseInt(l.Pids.value, 10, 64)
		if l.Pids.kind != ast.IntegerType || err != nil || v <= 0 {
			b.fail(l.Pids, "want a positive whole number, got %q", l.Pids.value)
		}
		p.limits.Pids = v
	}
	if l.Output.set {
		p.limits.Output = b.size(l.Output)
	}
	if l.Disk.set {
		p.limits.Disk = b.disk(l.Disk)
	}
	if l.File.set {
		if p.limits.File = b.size(l.File); p.limits.File != 0 && (p.limits.File < 1<<10 || p.limits.File > 1<<30) {
			b.fail(l.File, "want a size between 1KiB and 1GiB, got %q", l.File.value)
		}
	}
	if l.Network.set {
		p.limits.Network = b.boolean(l.Network)
	}

	if raw.Confirm.Timeout.set {
		p.confirmTimeout = b.duration(raw.Confirm.Timeout)
	}
	if raw.Confirm.Default.set {
		if d := b.str(raw.Confirm.Default); d != "deny" {
			b.fail(raw.Confirm.Default, "%q is not supported: an unanswered confirmation is always a no (write deny)", d)
		}
	}

	p.toolDeny = b.toolRules("tools.deny", raw.Tools.Deny)
	p.toolAsk = b.toolRules("tools.ask", raw.Tools.Ask)
	p.toolAllow = b.toolRules("tools.allow", raw.Tools.Allow)

	if len(b.errs) > 0 {
		return nil, errors.Join(b.errs...)
	}
	return p, nil
}

// specs returns the built-in program specs with the file's programs
// entries in place of (or next to) them.
func (b *builder) specs(progs map[string]*rawSpec) *specSet {
	base, err := builtin()
	if err != nil {
		b.errs = append(b.errs, err)
		return nil
	}
	if len(progs) == 0 {
		return base
	}
	own, err := compileSpecFile(b.name, &rawSpecFile{Programs: progs})
	if err != nil {
		b.errs = append(b.errs, err)
		return nil
	}
	ss := base.with(own)
	if err := own.checkExamplesIn(ss); err != nil {
		b.errs = append(b.errs, err)
		return nil
	}
	return ss
}

func (b *builder) str(s scalar) string {
	if s.kind != ast.StringType && s.kind != ast.LiteralType {
		b.fail(s, "want a string, got %s %s", s.kind.YAMLName(), s.value)
		return ""
	}
	return s.value
}

func (b *builder) boolean(s scalar) bool {
	if s.kind != ast.BoolType {
		b.fail(s, "want true or false, got %q", s.value)
		return false
	}
	return s.value == "true" || s.value == "True" || s.value == "TRUE"
}

func (b *builder) duration(s scalar) time.Duration {
	d, err := time.ParseDuration(s.value)
	if s.kind != ast.StringType || err != nil || d <= 0 {
		b.fail(s, "want a positive duration such as 90s or 5m, got %q", s.value)
		return 0
	}
	return d
}

func (b *builder) size(s scalar) int64 {
	n, err := parseSize(s.value)
	if (s.kind != ast.StringType && s.kind != ast.IntegerType) || err != nil {
		b.fail(s, "want a size such as 512MiB, 1GiB or 65536, got %q", s.value)
		return 0
	}
	return n
}

// The range limits.disk accepts. Below the floor a build cache alone does
// not fit, so every command would fail for a reason unrelated to the work
// (and "4MB" for "4GB" is caught); above the ceiling the limit bounds
// nothing a host has. Zero (no limit) is not accepted: a run without a
// disk limit is for a person to choose in code, never by a typo.
const (
	minDisk = 64 << 20
	maxDisk = 1 << 40
)

func (b *builder) disk(s scalar) int64 {
	n := b.size(s)
	if n != 0 && (n < minDisk || n > maxDisk) {
		b.fail(s, "want a size between 64MiB and 1TiB, got %q", s.value)
		return 0
	}
	return n
}

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"TB", 1000 * 1000 * 1000 * 1000},
	{"B", 1},
}

// parseSize reads a positive byte count: a whole number with an optional
// unit B, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB (powers of
// 1000).
func parseSize(s string) (int64, error) {
	num, mult := s, int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 {
		return 0, errors.New("bad size")
	}
	if n > math.MaxInt64/mult {
		return 0, errors.New("size overflows")
	}
	return n * mult, nil
}

func (b *builder) ruleOf(list string, i int, s scalar) rule {
	if s.key == "" {
		s.key = fmt.Sprintf("%s[%d]", list, i)
	}
	return rule{list: list, src: s.value, line: s.line, file: b.name}
}

func (b *builder) commandRules(list string, ss []scalar) []*commandPattern {
	return compileRules(b, list, "pattern", ss, func(_ string, r rule) (*commandPattern, error) {
		return compileCommandPattern(r)
	})
}

func (b *builder) pathRules(list string, ss []scalar) []pathRule {
	return compileRules(b, list, "glob", ss, func(src string, r rule) (pathRule, error) {
		g, err := compilePathGlob(src)
		return pathRule{rule: r, g: g}, err
	})
}

func (b *builder) toolRules(list string, ss []scalar) []pathRule {
	return compileRules(b, list, "pattern", ss, func(src string, r rule) (pathRule, error) {
		g, err := compileWordGlob(src)
		if err == nil && strings.ContainsAny(src, " \t/") {
			err = errors.New("tool names have no blanks or slashes")
		}
		return pathRule{rule: r, g: g}, err
	})
}

// compileRules compiles the entries of one rule list. An empty entry, or
// one that does not compile, is reported on its line ("empty glob",
// `pattern "x[": ...`) and left out: the file then fails to load.
func compileRules[T any](b *builder, list, what string, ss []scalar, compile func(src string, r rule) (T, error)) []T {
	var out []T
	for i, s := range ss {
		if !s.set {
			b.locate(&s, fmt.Sprintf("%s[%d]", list, i))
			b.fail(s, "empty %s", what)
			continue
		}
		src := b.str(s)
		if src == "" {
			if s.kind == ast.StringType {
				b.fail(s, "empty %s", what)
			}
			continue
		}
		v, err := compile(src, b.ruleOf(list, i, s))
		if err != nil {
			b.fail(s, "%s %q: %v", what, src, err)
			continue
		}
		out = append(out, v)
	}
	return out
}

// keyOf turns a go-yaml path ("$.limits.cpus", "$.commands.allow[1]") into
// the dotted key a person reads.
func keyOf(p string) string {
	p = strings.TrimPrefix(p, "$")
	return strings.TrimPrefix(p, ".")
}

// yamlError turns a go-yaml error into a *FileError with the line and, when
// the offending node can be found, its key.
func yamlError(name string, f *ast.File, err error) error {
	var fe *FileError
	if errors.As(err, &fe) {
		fe.File = name
		return fe
	}
	var ye yaml.Error
	if !errors.As(err, &ye) {
		return &FileError{File: name, Msg: err.Error()}
	}
	out := &FileError{File: name, Msg: ye.GetMessage()}
	tk := ye.GetToken()
	if tk != nil {
		out.Line, out.Column = tk.Position.Line, tk.Position.Column
		out.Key = keyAt(f, tk)
	}
	var te *yaml.TypeError
	var ue *yaml.UnexpectedNodeTypeError
	var uf *yaml.UnknownFieldError
	switch {
	case errors.As(err, &uf):
		out.Msg = uf.Message + " (check the spelling; see docs/policy.md for every key)"
	case errors.As(err, &ue):
		out.Msg = fmt.Sprintf("want a %s, got %s", ue.Expected.YAMLName(), withArticle(ue.Actual.YAMLName()))
	case errors.As(err, &te):
		out.Msg = fmt.Sprintf("wrong type: got %s", te.SrcType)
	case strings.Contains(out.Msg, "could not find alias"):
		out.Msg += " (a pattern that starts with * must be quoted)"
	}
	return out
}

func withArticle(s string) string {
	if s == "int" {
		return "an integer"
	}
	if s != "" && strings.ContainsRune("aeiou", rune(s[0])) {
		return "an " + s
	}
	return "a " + s
}

// keyAt finds the key of the node that holds tk.
func keyAt(f *ast.File, tk *token.Token) string {
	if f == nil {
		return ""
	}
	var found string
	for _, d := range f.Docs {
		ast.Walk(visitor(func(n ast.Node) bool {
			if found != "" {
				return false
			}
			if mv, ok := n.(*ast.MappingValueNode); ok && mv.Key != nil && mv.Key.GetToken() == tk {
				found = keyOf(mv.Key.GetPath())
				if found == "" {
					found = mv.Key.String()
				}
				return false
			}
			if n.GetToken() == tk {
				found = keyOf(n.GetPath())
				return false
			}
			return true
		}), d)
	}
	return found
}

type visitor func(ast.Node) bool

func (v visitor) Visit(n ast.Node) ast.Visitor {
	if n == nil || !v(n) {
		return nil
	}
	return v
}
