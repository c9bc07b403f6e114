package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/cmd/trio/config"
	"github.com/trioagent/trio/critic"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox/containerd"
	"github.com/trioagent/trio/summarizer"
	"github.com/trioagent/trio/tools"
)

// Environment variables the command reads.
const (
	envBaseURL = "OPENAI_BASE_URL"
	envModel   = "TRIO_MODEL"
	// envScript selects the scripted model (llm.LoadScript format), served
	// over loopback to the real OpenAI provider, instead of an endpoint.
	// For tests and demos; never needed with a real model.
	envScript = "TRIO_SCRIPT"
)

// loadConfig reads --config, else ./trio.yaml when it exists, else an
// empty configuration, with the user-level file merged under it
// (userconfig.go), and loads its env_file.
func loadConfig(path string) (*config.File, error) {
	f := &config.File{}
	if path == "" {
		if _, err := os.Stat(workspaceConfig); err == nil {
			path = workspaceConfig
		}
	}
	if path != "" {
		var err error
		if f, err = config.Load(path); err != nil {
			return nil, configError(err)
		}
	}
	f, err := withUserConfig(f)
	if err != nil {
		return nil, configError(err)
	}
	if env := f.EnvFile; env != "" {
		if !filepath.IsAbs(env) && f.Path != "" {
			env = filepath.Join(filepath.Dir(f.Path), env)
		}
		if err := loadEnvFile(env); err != nil {
			return nil, configError(fmt.Errorf("env_file: %w", err))
		}
	}
	return f, nil
}

// runsDir is --runs-dir, else runs_dir of the configuration, else ./runs.
func runsDir(g *globals, f *config.File) string {
	switch {
	case g.runsDir != "":
		return g.runsDir
	case f.RunsDir != "":
		return f.Resolve(f.RunsDir)
	}
	return "runs"
}

// loadPolicy is the --policy file, else the configuration's, else the
// built-in strict policy; unattended makes every ask a deny. It returns the
// file used ("" for the built-in one).
func loadPolicy(flag string, f *config.File, unattended bool) (*policy.Policy, string, error) {
	path, fromConfig := flag, false
	if path == "" && f.Policy != "" {
		path, fromConfig = f.Resolve(f.Policy), true
	}
	p := policy.Default()
	if path != "" {
		var err error
		if p, err = policy.Load(path); err != nil {
			if fromConfig && errors.Is(err, fs.ErrNotExist) {
				// Say where the path came from: a relative one is relative
				// to the configuration file, not to the current folder.
				err = fmt.Errorf("%w (the policy key of %s; a relative path is relative to that file's folder)", err, f.Path)
			}
			return nil, "", configError(err)
		}
	}
	if unattended {
		p = p.WithUnattended()
	}
	return p, path, nil
}

// noEndpoint is the guidance printed when no model is configured.
func noEndpoint(keyEnv string, missing []string) error {
	line := func(assign, comment string) string { return fmt.Sprintf("  %-45s # %s\n", "export "+assign, comment) }
	return configError(fmt.Errorf("no model endpoint is configured: missing %s.\n"+
		"Set, for OpenAI or any OpenAI-compatible server:\n%s%s%s"+
		"or give a configuration file: trio run --config trio.yaml (see configs/trio.example.yaml).\n"+
		"To watch Trio work without a model service, run: trio demo",
		strings.Join(missing, " and "),
		line(keyEnv+"=...", "the API key (a local server that needs none: any text)"),
		line(envModel+"=gpt-4.1-mini", "the model name"),
		line(envBaseURL+"=http://localhost:8000/v1", "optional: another server (default https://api.openai.com/v1)")))
}

// endpointModel builds the model of every role from the configuration,
// with the environment filling what it leaves out: the endpoint's provider
// (OpenAI-compatible, or Anthropic with endpoint.kind anthropic) for the
// roles without one of their own, and each endpoints.<role>'s for its role.
func endpointModel(f *config.File) (llm.Model, error) {
	model := f.Models.Default
	if model == "" {
		model = os.Getenv(envModel)
	}
	perRole := f.Models.PerRole()
	routes := map[string]llm.Model{}
	for _, role := range config.Roles {
		e, ok := f.Endpoints[role]
		if !ok {
			continue
		}
		name := perRole[role]
		if name == "" {
			name = model
		}
		m, err := providerFor(e, f, name, nil, []string{role})
		if err != nil {
			return nil, err
		}
		routes[role] = m
	}
	if len(routes) == len(config.Roles) {
		return llm.Route(nil, routes), nil
	}
	var rest []string
	for _, role := range config.Roles {
		if _, ok := routes[role]; !ok {
			rest = append(rest, role)
		}
	}
	fallback, err := providerFor(f.Endpoint, f, model, perRole, rest)
	if err != nil {
		return nil, err
	}
	if len(routes) == 0 {
		return fallback, nil
	}
	return llm.Route(fallback, routes), nil
}

// providerFor builds one endpoint's provider for model (and the per-role
// names, for the endpoint shared by several roles), which serves roles.
func providerFor(e config.Endpoint, f *config.File, model string, perRole map[string]string, roles []string) (llm.Model, error) {
	anthropic := e.Kind == config.KindAnthropic
	efforts := f.Reasoning.PerRole()
	keyEnv := e.APIKeyEnv
	switch {
	case keyEnv != "":
	case anthropic:
		keyEnv = llm.DefaultAnthropicAPIKeyEnv
	default:
		keyEnv = llm.DefaultAPIKeyEnv
	}
	// An empty base URL is the SDK's environment variable's
	// (OPENAI_BASE_URL, ANTHROPIC_BASE_URL), else the service's.
	base := e.BaseURL
	var missing []string
	if os.Getenv(keyEnv) == "" {
		missing = append(missing, "the API key ($"+keyEnv+")")
	}
	if model == "" && len(perRole) < len(config.Roles) {
		missing = append(missing, "the model name ($"+envModel+", or models.default in trio.yaml)")
	}
	if len(missing) > 0 {
		if anthropic {
			return nil, configError(fmt.Errorf("the Anthropic endpoint (endpoint.kind anthropic) is missing %s; export %s=... and name the model in trio.yaml (models)",
				strings.Join(missing, " and "), keyEnv))
		}
		return nil, noEndpoint(keyEnv, missing)
	}
	maxRetries := 0
	if e.MaxRetries != nil {
		maxRetries = *e.MaxRetries
		if maxRetries == 0 {
			maxRetries = -1 // the provider's "none"
		}
	}
	var (
		m   llm.Model
		err error
	)
	if anthropic {
		m, err = llm.NewAnthropic(llm.AnthropicConfig{
			BaseURL: base, APIKeyEnv: keyEnv, Model: model, Models: perRole, MaxTokens: f.MaxTokens,
			Timeout: e.Timeout.Duration, MaxRetries: maxRetries, StructuredOutputs: e.StructuredOutputs, Stream: e.Stream,
			MaxReplyBytes: e.MaxReplyBytes,
			// The reasoning level is extended thinking's budget here.
			ThinkingBudget: llm.ThinkingBudgetOf(f.Reasoning.Default), ThinkingBudgetPerRole: thinkingBudgets(efforts),
		})
	} else {
		m, err = llm.NewOpenAI(llm.OpenAIConfig{
			BaseURL: base, APIKeyEnv: keyEnv, Model: model, Models: perRole, Temperature: f.Temperature, MaxTokens: f.MaxTokens,
			Timeout: e.Timeout.Duration, MaxRetries: maxRetries, StructuredOutputs: e.StructuredOutputs, Stream: e.Stream,
			MaxReplyBytes: e.MaxReplyBytes, TokenParameters: f.TokenParameter,
			ReasoningEffort: f.Reasoning.Default, ReasoningEffortPerRole: efforts,
		})
	}
	if err != nil {
		return nil, configError(err)
	}
	return m, nil
}

// thinkingBudgets maps each role's reasoning level to its Anthropic
// thinking budget.
func thinkingBudgets(efforts map[string]string) map[string]int {
	out := make(map[string]int, len(efforts))
	for role, e := range efforts {
		out[role] = llm.ThinkingBudgetOf(e)
	}
	return out
}

// applyReasoning applies --reasoning values to cfg: LEVEL sets every
// role's reasoning_effort, ROLE=LEVEL one role's, later values winning.
func applyReasoning(cfg *config.File, values []string) error {
	for _, v := range values {
		role, level, perRole := strings.Cut(v, "=")
		if !perRole {
			level = role
		}
		if err := llm.CheckReasoningEffort(level); err != nil {
			return configError(fmt.Errorf("--reasoning %s: %w", v, err))
		}
		if !perRole {
			cfg.Reasoning = config.Models{Default: level}
			continue
		}
		if !cfg.Reasoning.Set(role, level) {
			return configError(fmt.Errorf("--reasoning %s: want LEVEL or ROLE=LEVEL, a role of %s", v, strings.Join(config.Roles, ", ")))
		}
	}
	return nil
}

// sandboxConfig describes the run's sandbox: kind is the --sandbox flag,
// else the configuration's, else the agent's default (auto); the agent
// opens it (containerd when it answers, else local with a warning).
func sandboxConfig(kind string, f *config.File) agent.SandboxConfig {
	if kind == "" {
		kind = f.Sandbox.Kind
	}
	cd := f.Sandbox.Containerd
	return agent.SandboxConfig{Kind: kind, Auto: f.Sandbox.Auto, Containerd: containerd.Config{
		Address: cd.Address, Namespace: cd.Namespace, RootFS: cd.RootFS, Image: cd.Image, UID: cd.UID, GID: cd.GID,
	}}
}

// agentOptions turns the configuration's budgets, window, checks and
// price table into options.
func agentOptions(f *config.File, workerModel string) []agent.Option {
	var opts []agent.Option
	if prices := rolePrices(f); len(prices) > 0 {
		opts = append(opts, agent.WithPrices(prices))
	}
	b := f.Budgets
	if b != (config.Budgets{}) {
		opts = append(opts, agent.WithBudgets(agent.Budgets{
			MaxSteps: b.MaxSteps, MaxTotalTurns: b.MaxTotalTurns, MaxRepairRounds: b.MaxRepairRounds,
			MaxTokens: b.MaxTokens, MaxWallTime: b.MaxWallTime.Duration, MaxGoalBytes: b.MaxGoalBytes,
		}))
	}
	if k := f.Checks.Lint; k.Enabled {
		opts = append(opts, agent.WithLint(agent.LintConfig{Enabled: true, Blocking: k.Blocking}))
	}
	if r := f.Checks.Review; r.Enabled {
		opts = append(opts, agent.WithReview(agent.ReviewConfig{Enabled: true, BlockAt: critic.Severity(r.BlockAt), MaxRounds: r.MaxRounds}))
	}
	if f.Checks.Replan {
		opts = append(opts, agent.WithReplan(true))
	}
	w := f.Window
	if w != (config.Window{}) {
		opts = append(opts, agent.WithWindow(summarizer.Config{
			Model: workerModel, ContextLimit: w.ContextLimit, ReplyReserve: w.ReplyReserve,
			SummaryEvery: w.SummaryEvery, KeepRounds: w.KeepRounds,
		}))
	}
	return opts
}

// roles are the agent's roles, each of which may have its own model.
var roles = []string{agent.RolePlanner, agent.RoleWorker, agent.RoleCritic, agent.RoleSummarizer, agent.RoleTestDesigner}

// rolePrices is the price of each role's model, for the roles whose model
// the price table has.
func rolePrices(f *config.File) map[string]llm.Price {
	per := f.Models.PerRole()
	out := map[string]llm.Price{}
	for _, role := range roles {
		model := per[role]
		if model == "" {
			model = f.Models.Default
		}
		if model == "" {
			model = os.Getenv(envModel)
		}
		if p, ok := f.Price(model); ok {
			out[role] = p
		}
	}
	return out
}

// workerModelName is the worker's model name, for the tokenizer.
func workerModelName(f *config.File) string {
	if f.Models.Worker != "" {
		return f.Models.Worker
	}
	if f.Models.Default != "" {
		return f.Models.Default
	}
	return os.Getenv(envModel)
}

// notRunFolder says that dir holds no run.
func notRunFolder(dir string) error {
	return fmt.Errorf("%s is not a run folder: it has no %s (a run folder is runs/<run-id>/, printed when the run started)", dir, agent.StateFile)
}

// inspectRun is agent.Inspect with the command's exit codes: a folder that
// holds no run or a damaged checkpoint is a usage error (3), a checkpoint
// that cannot be read a failure (1).
func inspectRun(dir string) (*agent.Report, error) {
	st, err := agent.Inspect(dir)
	switch {
	case errors.Is(err, agent.ErrNoRun):
		return nil, configError(notRunFolder(dir))
	case errors.Is(err, agent.ErrInvalidInput):
		return nil, configError(err) // a damaged checkpoint: the message names it
	case err != nil:
		return nil, failure(err)
	}
	return st, nil
}

// resolveRun finds a run folder from an id or a path.
func resolveRun(arg, runs string) (string, error) {
	if st, err := os.Stat(arg); err == nil && st.IsDir() {
		return filepath.Clean(arg), nil
	}
	dir := filepath.Join(runs, arg)
	if _, err := os.Stat(filepath.Join(dir, agent.StateFile)); err != nil {
		var ids []string
		if entries, err := os.ReadDir(runs); err == nil {
			for _, e := range entries {
				if e.IsDir() {
					ids = append(ids, e.Name())
				}
			}
		}
		hint := "no runs there"
		if len(ids) > 0 {
			slices.Sort(ids)
			hint = "runs there: " + strings.Join(ids[max(0, len(ids)-5):], ", ")
		}
		return "", configError(fmt.Errorf("no run %q: not a folder, and %s has no run of that id (%s)", arg, runs, hint))
	}
	return dir, nil
}

// extensionOptions turns the configuration's hooks and MCP servers into
// options: the hooks, and each server's tools for the roles it names.
// It starts the host servers now, so that one that does not start is a
// configuration error (exit 3) before the run begins; a stdio server with
// host: true runs on the host: the user is warned, and asked first when a
// person can answer (cf not nil). A stdio server without host: true is
// handed to the agent, which starts it in the run's sandbox once the
// policy's command rules allow its command line, and so is a URL server,
// which the run connects to from the host once the policy's tools rules
// allow mcp__<server> (see agent.WithMCPServers, tools.Gate.ConnectMCP).
// The returned function closes the servers
// connected here. warn prints a warning.
func extensionOptions(ctx context.Context, f *config.File, cf policy.Confirmer, warn func(string)) ([]agent.Option, func(), error) {
	var opts []agent.Option
	if hooks := hookCommands(f.Hooks); len(hooks) > 0 {
		absDir, _ := filepath.Abs(configDir(f))
		h, err := tools.NewHooks(tools.HookConfig{Commands: hooks, Dir: absDir})
		if err != nil {
			return nil, func() {}, configError(fmt.Errorf("%s: hooks: %w", f.Path, err))
		}
		opts = append(opts, agent.WithHooks(h))
	}
	servers, err := declaredServers(f)
	if err != nil {
		return nil, func() {}, err
	}
	var conns []*tools.MCPConn
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	for _, d := range servers {
		if d.inSandbox() || len(d.srv.Command) == 0 {
			// In the run's sandbox, or (a URL) from the host once the
			// policy's tools rules allow mcp__<server>: the run connects
			// both and writes the decision to its audit log.
			opts = append(opts, agent.WithMCPServers(d.roles, d.srv))
			continue
		}
		c, err := d.connectHere(ctx, f, cf, warn)
		if err != nil {
			return nil, closeAll, err
		}
		conns = append(conns, c)
		if ts := c.Tools(); len(ts) > 0 {
			opts = append(opts, agent.WithToolsFor(d.roles, ts...))
		}
	}
	return opts, closeAll, nil
}

// configDir is the folder of the configuration file ("." without one).
func configDir(f *config.File) string {
	if f.Path == "" {
		return "."
	}
	return filepath.Dir(f.Path)
}

// declared is one MCP server of the configuration, ready to connect.
type declared struct {
	name, key string
	roles     []string
	host      bool
	srv       tools.MCPServer
}

// inSandbox reports whether the server is a stdio server that runs in the
// run's sandbox (no host: true).
func (d declared) inSandbox() bool { return len(d.srv.Command) > 0 && !d.host }

// declaredServers are the configuration's MCP servers, sorted by name,
// with their ${VAR} references, environment variables and header values
// looked up in the host's environment.
func declaredServers(f *config.File) ([]declared, error) {
	var out []declared
	for _, name := range f.MCP.ServerNames() {
		s, err := f.MCP.Servers[name].Expanded(os.LookupEnv)
		if err != nil {
			return nil, configError(fmt.Errorf("%s: %w", f.Path, err))
		}
		key := s.Key
		if key == "" {
			key = "mcp.servers." + name
		}
		d := declared{name: name, key: key, roles: s.Roles, host: s.Host,
			srv: tools.MCPServer{Name: name, URL: s.URL, SSE: s.SSE(), CallTimeout: s.Timeout.Duration, StartTimeout: s.StartupTimeout.Duration}}
		if len(d.roles) == 0 {
			d.roles = []string{agent.RoleWorker}
		}
		if s.Command != "" {
			d.srv.Command = append([]string{s.Command}, s.Args...)
		}
		if s.Host {
			// On the host it runs in the configuration's folder; in the
			// sandbox, at the workspace's root.
			d.srv.Dir = configDir(f)
		}
		for _, v := range s.EnvVars {
			if val, ok := os.LookupEnv(v); ok {
				d.srv.Env = append(d.srv.Env, v+"="+val)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(s.Env)) {
			d.srv.Env = append(d.srv.Env, k+"="+s.Env[k])
		}
		for h, v := range s.Headers {
			if d.srv.Headers == nil {
				d.srv.Headers = map[string]string{}
			}
			d.srv.Headers[h] = v
		}
		for h, v := range s.EnvHeaders {
			val := os.Getenv(v)
			if val == "" {
				return nil, configError(fmt.Errorf("%s: %s.env_headers.%s: $%s is not set (it holds the header's value)", f.Path, d.key, h, v))
			}
			if d.srv.Headers == nil {
				d.srv.Headers = map[string]string{}
			}
			d.srv.Headers[h] = val
		}
		out = append(out, d)
	}
	return out, nil
}

// connectHere connects a URL server, or starts a host: true one on this
// machine after warning (and asking, when cf is not nil).
func (d declared) connectHere(ctx context.Context, f *config.File, cf policy.Confirmer, warn func(string)) (*tools.MCPConn, error) {
	if len(d.srv.Command) > 0 {
		line := strings.Join(d.srv.Command, " ")
		warn(fmt.Sprintf("MCP server %s runs on this machine as you, outside the sandbox (host: true): %s", d.name, line))
		if cf != nil {
			ans, err := cf.Confirm(ctx, policy.ConfirmRequest{Tool: tools.MCPPrefix + d.name, Action: "start an MCP server on the host, outside the sandbox",
				Command: line, Argv: d.srv.Command, Decision: policy.Decision{Verdict: policy.Ask, Rule: d.key + ".host", Reason: "an MCP server is code; on the host it runs as you"}})
			if err != nil || (ans != policy.AnswerYes && ans != policy.AnswerAlways) {
				return nil, configError(fmt.Errorf("%s: %s: not started: the person asked did not approve it", f.Path, d.key))
			}
		}
	}
	c, err := tools.ConnectMCP(ctx, d.srv)
	if err != nil {
		return nil, configError(fmt.Errorf("%s: %s: %w", f.Path, d.key, err))
	}
	for _, skip := range c.Skipped {
		warn(fmt.Sprintf("MCP server %s: tool left out: %s", d.name, skip))
	}
	return c, nil
}

// hookCommands flattens the configuration's hooks, event by event.
func hookCommands(h config.Hooks) []tools.HookCommand {
	var out []tools.HookCommand
	for _, ev := range []struct {
		name string
		ms   []config.HookMatcher
	}{{tools.HookPreToolUse, h.PreToolUse}, {tools.HookPostToolUse, h.PostToolUse}, {tools.HookStop, h.Stop}} {
		for _, m := range ev.ms {
			for _, c := range m.Hooks {
				out = append(out, tools.HookCommand{Event: ev.name, Matcher: m.Matcher, Command: c.Command, Timeout: c.Timeout.Duration})
			}
		}
	}
	return out
}
