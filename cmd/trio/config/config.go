// Package config reads trio.yaml, the configuration file of the trio
// command: the model endpoint, a model per role, budgets, the Worker's
// context window, the sandbox, the policy file, the runs folder and the
// price table.
//
// Decoding is strict: an unknown key, a value of the wrong type or a value
// out of range is an error that names the file and line. The package only
// reads and checks the file; the command turns it into library options.
// configs/trio.example.yaml documents every key.
package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/trioagent/trio/llm"
)

// Sandbox kinds.
const (
	SandboxAuto       = "auto"
	SandboxContainerd = "containerd"
	SandboxUserns     = "userns"
	SandboxLandlock   = "landlock"
	SandboxLocal      = "local"
)

// File is a parsed trio.yaml. Zero values mean "not set": the command then
// uses environment variables or the library's defaults.
type File struct {
	// Path is the file's path as given to Load (empty for Parse).
	Path string `yaml:"-"`
	// UserPath is the user-level file merged under this one, if any.
	UserPath string `yaml:"-"`
	// EnvFile is a .env file whose variables Trio sets in its own process
	// (never in a sandbox) when they are unset; a relative path is
	// relative to this file. Empty: no .env is read.
	EnvFile string `yaml:"env_file"`

	Endpoint Endpoint `yaml:"endpoint"`
	// Endpoints gives a role its own endpoint (keys: planner, worker,
	// critic, summarizer, test_designer), which replaces endpoint for that
	// role entirely: the Worker on Anthropic, the rest elsewhere.
	Endpoints map[string]Endpoint `yaml:"endpoints"`
	Models    Models              `yaml:"models"`
	// Temperature is sent with every request when set.
	Temperature *float64 `yaml:"temperature"`
	// MaxTokens caps every reply; 0 leaves it to the endpoint.
	MaxTokens int `yaml:"max_tokens"`
	// TokenParameter names, per model, the parameter that carries the
	// reply cap (max_tokens or max_completion_tokens), overriding the
	// default by name (llm.DefaultTokenParameter).
	TokenParameter map[string]string `yaml:"token_parameter"`
	// Reasoning is the reasoning_effort each role sends to an OpenAI
	// endpoint (default: the roles without their own).
	Reasoning Models  `yaml:"reasoning"`
	Budgets   Budgets `yaml:"budgets"`
	Window    Window  `yaml:"window"`
	Sandbox   Sandbox `yaml:"sandbox"`
	// Policy is the policy file; a relative path is relative to this file.
	Policy string `yaml:"policy"`
	// RunsDir is where run folders go; a relative path is relative to this file.
	RunsDir string `yaml:"runs_dir"`

	// Hooks are programs run around tool calls (extensions.go).
	Hooks Hooks `yaml:"hooks"`
	// MCP declares MCP servers whose tools the run offers (extensions.go).
	MCP MCP `yaml:"mcp"`
	// MCPServers declares MCP servers in the shape of Claude Code's
	// .mcp.json and Claude Desktop's config; MCPJSON imports such a file
	// (relative to this one). Both land in MCP.Servers (extensions.go).
	MCPServers map[string]MCPServer `yaml:"mcpServers"`
	MCPJSON    string               `yaml:"mcp_json"`
	// Telemetry exports each run's trace over OTLP (telemetry.go).
	Telemetry Telemetry `yaml:"telemetry"`
	// Checks turns on the lint check, the reviewer and re-planning
	// (checks.go).
	Checks Checks `yaml:"checks"`
	// Prices is the price table, keyed by model name as in models. Empty
	// by default: Trio invents no prices, so a run without a table reports
	// tokens but no money.
	Prices map[string]Price `yaml:"prices"`
}

// Price is one model's price per million tokens, in whatever currency the
// table is written in. Input and output are required; cached_input and
// cache_write default to input, so an unknown discount never makes a run
// look cheaper than it was.
type Price struct {
	Input       *float64 `yaml:"input"`
	CachedInput *float64 `yaml:"cached_input"`
	CacheWrite  *float64 `yaml:"cache_write"`
	Output      *float64 `yaml:"output"`
}

// Price returns the price of a model from the table, with the defaults
// filled in, and whether the table has it.
func (f *File) Price(model string) (llm.Price, bool) {
	p, ok := f.Prices[model]
	if !ok || p.Input == nil || p.Output == nil {
		return llm.Price{}, false
	}
	out := llm.Price{Input: *p.Input, CachedInput: *p.Input, CacheWrite: *p.Input, Output: *p.Output}
	if p.CachedInput != nil {
		out.CachedInput = *p.CachedInput
	}
	if p.CacheWrite != nil {
		out.CacheWrite = *p.CacheWrite
	}
	return out, true
}

// MaxPrice bounds a price per million tokens: a larger one is a typo
// (a price per token written per million, or per thousand).
const MaxPrice = 100_000

// Endpoint kinds.
const (
	KindOpenAI    = "openai"
	KindAnthropic = "anthropic"
)

// Endpoint is a model service: an OpenAI-compatible one (kind openai, the
// default) or the Anthropic Messages API (kind anthropic).
type Endpoint struct {
	// Kind is openai (default) or anthropic.
	Kind    string `yaml:"kind"`
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv names the environment variable that holds the key. The key
	// itself never appears in the file.
	APIKeyEnv         string   `yaml:"api_key_env"`
	Timeout           Duration `yaml:"timeout"`
	MaxRetries        *int     `yaml:"max_retries"`
	StructuredOutputs string   `yaml:"structured_outputs"`
	// Stream asks for server-sent events (llm.OpenAIConfig.Stream).
	Stream bool `yaml:"stream"`
	// MaxReplyBytes caps one reply's body (llm.OpenAIConfig.MaxReplyBytes);
	// 0 is llm.DefaultMaxReplyBytes.
	MaxReplyBytes int64 `yaml:"max_reply_bytes"`
}

// Models names the model of each role; Default serves the roles not named.
type Models struct {
	Default      string `yaml:"default"`
	Planner      string `yaml:"planner"`
	Worker       string `yaml:"worker"`
	Critic       string `yaml:"critic"`
	Summarizer   string `yaml:"summarizer"`
	TestDesigner string `yaml:"test_designer"`
}

// PerRole returns the roles with their own model, keyed by the agent's role
// names.
func (m Models) PerRole() map[string]string {
	out := map[string]string{}
	for role, name := range map[string]string{
		"planner": m.Planner, "worker": m.Worker, "critic": m.Critic,
		"summarizer": m.Summarizer, "test_designer": m.TestDesigner,
	} {
		if name != "" {
			out[role] = name
		}
	}
	return out
}

// Set sets a role's name (a key of PerRole) and reports whether role is
// one.
func (m *Models) Set(role, name string) bool {
	switch role {
	case "planner":
		m.Planner = name
	case "worker":
		m.Worker = name
	case "critic":
		m.Critic = name
	case "summarizer":
		m.Summarizer = name
	case "test_designer":
		m.TestDesigner = name
	default:
		return false
	}
	return true
}

// Budgets bound one run; zero keeps the library's default.
type Budgets struct {
	MaxSteps        int      `yaml:"max_steps"`
	MaxTotalTurns   int      `yaml:"max_total_turns"`
	MaxRepairRounds int      `yaml:"max_repair_rounds"`
	MaxTokens       int      `yaml:"max_tokens"`
	MaxWallTime     Duration `yaml:"max_wall_time"`
	// MaxGoalBytes is the largest goal accepted (a larger goal exits 3).
	MaxGoalBytes int `yaml:"max_goal_bytes"`
}

// Ranges of the values a configuration may set (documented in
// configs/trio.example.yaml and the README). Values outside them are
// mistakes, not preferences: a retry count of a billion retries a dead
// endpoint for hours; a context window of 10 tokens cannot hold a prompt.
const (
	MaxRetries      = 20
	MinTimeout      = time.Second
	MaxTimeout      = time.Hour
	MaxWallTime     = 7 * 24 * time.Hour
	MinContextLimit = 1024
	MaxContextLimit = 10_000_000
	MaxReplyTokens  = 1_000_000
	MaxSteps        = 1000
	MaxTotalTurns   = 100_000
	MaxRepairRounds = 100
	MaxBudgetTokens = 1_000_000_000
	MaxGoalBytes    = 16 << 20
	MaxSummaryEvery = 1000
	MaxKeepRounds   = 100
)

// Window is the Worker's context window; zero keeps the library's default.
// SummaryEvery, when set, is a fixed summary cadence in Worker turns; zero
// keeps the cost-driven one, which weighs the price table.
type Window struct {
	ContextLimit int `yaml:"context_limit"`
	ReplyReserve int `yaml:"reply_reserve"`
	SummaryEvery int `yaml:"summary_every"`
	KeepRounds   int `yaml:"keep_rounds"`
}

// Sandbox says where commands run.
type Sandbox struct {
	// Kind is auto (default), containerd, userns, landlock or local (no
	// isolation).
	Kind string `yaml:"kind"`
	// Auto lists the isolating kinds auto tries, in order (default:
	// containerd, userns, landlock): a team that wants namespaces may
	// leave landlock out, and then a machine without them asks for local
	// instead.
	Auto       []string   `yaml:"auto"`
	Containerd Containerd `yaml:"containerd"`
}

// Containerd configures the containerd sandbox.
type Containerd struct {
	Address   string `yaml:"address"`
	Namespace string `yaml:"namespace"`
	// RootFS is host (default) or image.
	RootFS string `yaml:"rootfs"`
	Image  string `yaml:"image"`
	UID    uint32 `yaml:"uid"`
	GID    uint32 `yaml:"gid"`
}

// Duration is a Go duration written as a string ("90s", "5m").
type Duration struct {
	time.Duration
	raw string
}

// UnmarshalYAML keeps the text; Parse checks it and names the line.
func (d *Duration) UnmarshalYAML(b []byte) error {
	var s string
	if err := yaml.Unmarshal(b, &s); err != nil {
		return err
	}
	d.raw = s
	return nil
}

// Error is a problem in a configuration file, naming the file, line and key.
type Error struct {
	File string
	Line int
	Key  string
	Msg  string
}

func (e *Error) Error() string {
	s := e.File
	if e.Line > 0 {
		s += fmt.Sprintf(":%d", e.Line)
	}
	if e.Key != "" {
		s += ": " + e.Key
	}
	return s + ": " + e.Msg
}

// Load reads and parses path.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	f, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	f.Path = path
	return f, nil
}

// Parse parses a configuration; name is used in errors. Every problem is
// an *Error (several are joined) naming the line.
func Parse(name string, data []byte) (*File, error) {
	astf, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, yamlError(name, err)
	}
	var f File
	if len(astf.Docs) > 1 {
		return nil, &Error{File: name, Msg: "more than one YAML document"}
	}
	if len(astf.Docs) == 0 || astf.Docs[0] == nil || astf.Docs[0].Body == nil {
		return &f, nil // an empty file sets nothing
	}
	// Every key that decodes is checked too: all mistakes at once.
	derrs := decodeAll(name, astf.Docs[0].Body, &f)
	c := checker{name: name, file: astf}
	c.check(&f)
	if errs := append(derrs, c.errs...); len(errs) > 0 {
		byLine(errs)
		return nil, errors.Join(errs...)
	}
	return &f, nil
}

// Resolve returns p relative to the directory of the configuration file
// (unchanged when absolute, empty, or the file has no path).
func (f *File) Resolve(p string) string {
	if p == "" || filepath.IsAbs(p) || f.Path == "" {
		return p
	}
	return filepath.Join(filepath.Dir(f.Path), p)
}

type checker struct {
	name string
	file *ast.File
	errs []error
}

func (c *checker) line(key string) int {
	p, err := yaml.PathString("$." + key)
	if err != nil {
		return 0
	}
	n, err := p.FilterFile(c.file)
	if err != nil || n == nil || n.GetToken() == nil {
		return 0
	}
	return n.GetToken().Position.Line
}

func (c *checker) fail(key, format string, args ...any) {
	c.failAt(key, key, format, args...)
}

// failAt is fail for a key whose YAML path differs from its name (a map
// key with dots, quoted in the path).
func (c *checker) failAt(path, key, format string, args ...any) {
	c.errs = append(c.errs, &Error{File: c.name, Line: c.line(path), Key: key, Msg: fmt.Sprintf(format, args...)})
}

// prices checks the price table: every entry has an input and an output
// price, and no price is negative, not a number or absurdly large.
func (c *checker) prices(ps map[string]Price) {
	for _, model := range slices.Sorted(maps.Keys(ps)) {
		p := ps[model]
		// Model names hold dots (gpt-4.1): quote the path segment.
		path := "prices.'" + model + "'"
		key := "prices." + model
		if p.Input == nil {
			c.failAt(path, key, "want input, the price per million uncached prompt tokens")
		}
		if p.Output == nil {
			c.failAt(path, key, "want output, the price per million completion tokens")
		}
		for _, fld := range []struct {
			name string
			v    *float64
		}{{"input", p.Input}, {"cached_input", p.CachedInput}, {"cache_write", p.CacheWrite}, {"output", p.Output}} {
			if fld.v != nil && (math.IsNaN(*fld.v) || *fld.v < 0 || *fld.v > MaxPrice) {
				c.failAt(path+"."+fld.name, key+"."+fld.name, "want a price per million tokens from 0 to %d, got %v", MaxPrice, *fld.v)
			}
		}
	}
}

// duration parses a duration and checks it is within [lo, hi].
func (c *checker) duration(key string, d *Duration, lo, hi time.Duration) {
	if d.raw == "" {
		return
	}
	v, err := time.ParseDuration(d.raw)
	if err != nil || v <= 0 {
		c.fail(key, "want a positive duration such as 90s or 5m, got %q", d.raw)
		return
	}
	if v < lo || v > hi {
		c.fail(key, "want a duration from %s to %s, got %s", lo, hi, d.raw)
		return
	}
	d.Duration = v
}

// between checks 0 ≤ v ≤ hi (0 keeps the default).
func (c *checker) between(key string, v, hi int) {
	if v < 0 || v > hi {
		c.fail(key, "want a whole number from 0 to %d, got %d", hi, v)
	}
}

func (c *checker) oneOf(key, v string, want ...string) {
	if v == "" {
		return
	}
	for _, w := range want {
		if v == w {
			return
		}
	}
	c.fail(key, "want one of %s, got %q", strings.Join(want, ", "), v)
}

// Roles are the keys of endpoints (the agent's role names).
var Roles = []string{"planner", "worker", "critic", "summarizer", "test_designer"}

func (c *checker) endpoint(at string, e *Endpoint) {
	c.oneOf(at+".kind", e.Kind, KindOpenAI, KindAnthropic)
	if e.BaseURL != "" && !strings.HasPrefix(e.BaseURL, "http://") && !strings.HasPrefix(e.BaseURL, "https://") {
		c.fail(at+".base_url", "want an http:// or https:// URL, got %q", e.BaseURL)
	}
	if e.APIKeyEnv != "" && !envName(e.APIKeyEnv) {
		c.fail(at+".api_key_env", "want the NAME of an environment variable (letters, digits, _), got %q; never put the key itself here", e.APIKeyEnv)
	}
	c.duration(at+".timeout", &e.Timeout, MinTimeout, MaxTimeout)
	if e.MaxRetries != nil {
		c.between(at+".max_retries", *e.MaxRetries, MaxRetries)
	}
	c.oneOf(at+".structured_outputs", e.StructuredOutputs, "auto", "on", "off")
	if e.MaxReplyBytes < 0 || e.MaxReplyBytes > llm.MaxReplyBytesLimit {
		c.fail(at+".max_reply_bytes", "want a number of bytes from 0 (the default, %d) to %d, got %d", llm.DefaultMaxReplyBytes, llm.MaxReplyBytesLimit, e.MaxReplyBytes)
	}
}

func (c *checker) check(f *File) {
	c.endpoint("endpoint", &f.Endpoint)
	for _, role := range slices.Sorted(maps.Keys(f.Endpoints)) {
		if !slices.Contains(Roles, role) {
			c.fail("endpoints."+role, "want a role: %s", strings.Join(Roles, ", "))
			continue
		}
		e := f.Endpoints[role]
		c.endpoint("endpoints."+role, &e)
		f.Endpoints[role] = e // the parsed durations
	}
	if t := f.Temperature; t != nil && (math.IsNaN(*t) || *t < 0 || *t > 2) {
		c.fail("temperature", "want a number from 0 to 2, got %v", *t)
	}
	c.between("max_tokens", f.MaxTokens, MaxReplyTokens)
	for _, model := range slices.Sorted(maps.Keys(f.TokenParameter)) {
		if tp := f.TokenParameter[model]; tp != llm.TokenParamMaxTokens && tp != llm.TokenParamMaxCompletionTokens {
			// Model names hold dots (gpt-5.1): quote the path segment.
			c.failAt("token_parameter.'"+model+"'", "token_parameter."+model, "want %s or %s, got %q",
				llm.TokenParamMaxTokens, llm.TokenParamMaxCompletionTokens, tp)
		}
	}
	c.oneOf("reasoning.default", f.Reasoning.Default, llm.ReasoningEfforts...)
	per := f.Reasoning.PerRole()
	for _, role := range slices.Sorted(maps.Keys(per)) {
		c.oneOf("reasoning."+role, per[role], llm.ReasoningEfforts...)
	}
	b := &f.Budgets
	c.between("budgets.max_steps", b.MaxSteps, MaxSteps)
	c.between("budgets.max_total_turns", b.MaxTotalTurns, MaxTotalTurns)
	c.between("budgets.max_repair_rounds", b.MaxRepairRounds, MaxRepairRounds)
	c.between("budgets.max_tokens", b.MaxTokens, MaxBudgetTokens)
	c.duration("budgets.max_wall_time", &b.MaxWallTime, MinTimeout, MaxWallTime)
	c.between("budgets.max_goal_bytes", b.MaxGoalBytes, MaxGoalBytes)
	w := f.Window
	if w.ContextLimit != 0 && (w.ContextLimit < MinContextLimit || w.ContextLimit > MaxContextLimit) {
		c.fail("window.context_limit", "want a whole number from %d to %d (or 0 for the default), got %d", MinContextLimit, MaxContextLimit, w.ContextLimit)
	}
	c.between("window.reply_reserve", w.ReplyReserve, MaxReplyTokens)
	c.between("window.summary_every", w.SummaryEvery, MaxSummaryEvery)
	c.between("window.keep_rounds", w.KeepRounds, MaxKeepRounds)
	if w.ContextLimit > 0 && w.ReplyReserve >= w.ContextLimit {
		c.fail("window.reply_reserve", "%d leaves no room in context_limit %d", w.ReplyReserve, w.ContextLimit)
	}
	c.prices(f.Prices)
	c.oneOf("sandbox.kind", f.Sandbox.Kind, SandboxAuto, SandboxContainerd, SandboxUserns, SandboxLandlock, SandboxLocal)
	for i, k := range f.Sandbox.Auto {
		c.oneOf(fmt.Sprintf("sandbox.auto[%d]", i), k, SandboxContainerd, SandboxUserns, SandboxLandlock)
	}
	cd := f.Sandbox.Containerd
	c.oneOf("sandbox.containerd.rootfs", cd.RootFS, "host", "image")
	if cd.RootFS == "image" && cd.Image == "" {
		c.fail("sandbox.containerd.image", "rootfs image needs an image reference or an OCI tarball path")
	}
	if (cd.UID == 0) != (cd.GID == 0) {
		c.fail("sandbox.containerd.uid", "set both uid and gid, or neither (automatic)")
	}
	c.checkExtensions(f)
	c.checkTelemetry(&f.Telemetry)
	c.checkChecks(&f.Checks)
}

func envName(s string) bool {
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}

func yamlError(name string, err error) error {
	var ye yaml.Error
	if !errors.As(err, &ye) {
		return &Error{File: name, Msg: err.Error()}
	}
	out := &Error{File: name, Msg: ye.GetMessage()}
	if tk := ye.GetToken(); tk != nil {
		out.Line = tk.Position.Line
	}
	var uf *yaml.UnknownFieldError
	if errors.As(err, &uf) {
		out.Msg = uf.Message + " (see configs/trio.example.yaml for every key)"
	}
	return out
}
