package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/tools/testreport"
)

// Outcome is how a call through the gate ended.
type Outcome string

// Outcomes of a call.
const (
	OutcomeOK      Outcome = "ok"      // the tool ran and succeeded
	OutcomeError   Outcome = "error"   // the tool ran and failed, or failed to run
	OutcomeDenied  Outcome = "denied"  // the policy (or a person) refused it
	OutcomeInvalid Outcome = "invalid" // unknown tool or bad arguments
)

// Built-in rule names the gate uses in Records of calls the policy never saw.
const (
	RuleUnknownTool      = "unknown-tool"
	RuleInvalidArguments = "invalid-arguments"
)

// Record is the audit entry of one call: what was asked, what the policy
// decided, what a person answered and how it ended. The gate sends exactly
// one Record per call to every observer.
type Record struct {
	Time   time.Time `json:"time"`
	CallID string    `json:"call_id"`
	// Role is the caller's role ("worker", "critic"...), from the call's
	// context (WithCallerRole); "" when the caller did not say.
	Role    string   `json:"role,omitempty"`
	Tool    string   `json:"tool"`
	Effects []Effect `json:"effects,omitempty"`
	// Decision is the most restrictive decision over the tool and its
	// effects (the one that denied, or the one that asked).
	Decision policy.Decision `json:"decision"`
	// Answer is the person's answer when one was asked.
	Answer *policy.Answer `json:"answer,omitempty"`
	// AutoApproved is set when an "ask" passed because a person answered
	// "always" for the same rule earlier in this gate's life.
	AutoApproved bool    `json:"auto_approved,omitempty"`
	Outcome      Outcome `json:"outcome"`
	// Error is the argument problem (invalid) or the infrastructure failure.
	Error string `json:"error,omitempty"`
	// Duration is how long the tool ran (zero when it did not run); Waited
	// is how long the call waited for a person.
	Duration time.Duration `json:"-"`
	Waited   time.Duration `json:"-"`
}

// MarshalJSON writes durations as integer milliseconds.
func (r Record) MarshalJSON() ([]byte, error) {
	type plain Record
	return json.Marshal(struct {
		plain
		DurationMS int64 `json:"duration_ms"`
		WaitedMS   int64 `json:"waited_ms,omitempty"`
	}{plain(r), r.Duration.Milliseconds(), r.Waited.Milliseconds()})
}

type callerRoleKey struct{}

// WithCallerRole returns a copy of ctx that names the role making the calls
// ("worker", "critic"...): a gate that shares one policy among several
// callers then tells their calls apart in each Record.
func WithCallerRole(ctx context.Context, role string) context.Context {
	return context.WithValue(ctx, callerRoleKey{}, role)
}

type checkKey struct{}

// WithCheck returns a copy of ctx under which every command the
// workspace's tools run is one of the Critic's checks (sandbox.Command's
// Check): what it builds and runs must not depend on anything a command
// wrote into a build cache.
func WithCheck(ctx context.Context) context.Context {
	return context.WithValue(ctx, checkKey{}, true)
}

type testsJudgeKey struct{}

// WithTestsJudge returns a copy of ctx under which run_tests decides a
// result's OK with judge, from the parsed report and the exit status,
// instead of from them alone: a check that runs tests which must fail
// (the Critic's sentinels, package critic/sentinel) knows which failures
// an honest passing run shows. The report itself is kept whole.
func WithTestsJudge(ctx context.Context, judge func(rep testreport.Report, exitCode int) bool) context.Context {
	return context.WithValue(ctx, testsJudgeKey{}, judge)
}

func testsJudge(ctx context.Context) func(testreport.Report, int) bool {
	j, _ := ctx.Value(testsJudgeKey{}).(func(testreport.Report, int) bool)
	return j
}

// IsCheck reports whether ctx came from WithCheck.
func IsCheck(ctx context.Context) bool {
	on, _ := ctx.Value(checkKey{}).(bool)
	return on
}

// CallerRole is the role WithCallerRole put in ctx, or "".
func CallerRole(ctx context.Context) string {
	role, _ := ctx.Value(callerRoleKey{}).(string)
	return role
}

// Observer receives the Record of every call. Observe is called
// synchronously, from the goroutine that made the call; it must not block
// for long.
type Observer interface{ Observe(Record) }

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Record)

// Observe calls f(r).
func (f ObserverFunc) Observe(r Record) { f(r) }

// GateOption configures a Gate.
type GateOption func(*Gate)

// WithConfirmer sets who is asked when the policy says "ask". Without one,
// "ask" means deny.
func WithConfirmer(c policy.Confirmer) GateOption { return func(g *Gate) { g.confirmer = c } }

// WithObserver adds an observer of every call's Record.
func WithObserver(o Observer) GateOption {
	return func(g *Gate) {
		if o != nil {
			g.observers = append(g.observers, o)
		}
	}
}

// WithHooks runs h's PreToolUse and PostToolUse hooks around every call
// the gate decodes (see Hooks). A PreToolUse block is a deny with the
// hook's reason, which the model reads; nil runs none.
func WithHooks(h *Hooks) GateOption { return func(g *Gate) { g.hooks = h } }

// WithScope tells the policy where the workspace is, for path arguments of
// commands.
func WithScope(s policy.Scope) GateOption { return func(g *Gate) { g.scope = s } }

// Gate is safe_execute: every call of every tool passes it. It decodes the
// arguments, clears the tool and each of its effects with the policy, asks a
// person when the policy says so, runs the tool and records the call.
// A Gate is safe for concurrent use.
type Gate struct {
	policy    *policy.Policy
	confirmer policy.Confirmer
	observers []Observer
	scope     policy.Scope
	hooks     *Hooks

	mu     sync.Mutex
	always map[string]bool // rules a person approved for the gate's life
	// asking serialises prompts (a one-slot semaphore, so that a waiting
	// call still sees its ctx end): a person answers one question at a
	// time, and an "always" answer then covers the calls that waited.
	asking chan struct{}
}

// NewGate returns a gate enforcing p.
func NewGate(p *policy.Policy, opts ...GateOption) *Gate {
	if p == nil {
		panic("tools.NewGate: nil policy")
	}
	g := &Gate{policy: p, always: make(map[string]bool), asking: make(chan struct{}, 1)}
	for _, o := range opts {
		o(g)
	}
	return g
}

// check is one decision and what it is about.
type check struct {
	d      policy.Decision
	effect *Effect // nil for the tool itself
}

// Call carries out one tool call from v. A problem the model can fix
// (unknown tool, bad arguments, denied, failed) is a Result with OK false;
// an infrastructure failure or a cancelled ctx is an error.
func (g *Gate) Call(ctx context.Context, v View, c Call) (Result, error) {
	rec := Record{Time: time.Now(), CallID: c.ID, Role: CallerRole(ctx), Tool: c.Name}
	res, err := g.call(ctx, v, c, &rec)
	if err != nil {
		rec.Outcome = OutcomeError
		rec.Error = err.Error()
	}
	for _, o := range g.observers {
		o.Observe(rec)
	}
	return res, err
}

func (g *Gate) call(ctx context.Context, v View, c Call, rec *Record) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	t, ok := v.Tool(c.Name)
	if !ok {
		msg := fmt.Sprintf("unknown tool %q; the tools you can call are: %s", c.Name, strings.Join(v.Names(), ", "))
		rec.Decision = policy.Decision{Verdict: policy.Deny, Rule: RuleUnknownTool, Reason: msg}
		rec.Outcome, rec.Error = OutcomeInvalid, msg
		return errorResult("%s", msg), nil
	}
	inv, err := t.Decode(c.Arguments)
	if err != nil {
		msg := fmt.Sprintf("%s: %v", c.Name, err)
		rec.Decision = policy.Decision{Verdict: policy.Deny, Rule: RuleInvalidArguments, Reason: msg}
		rec.Outcome, rec.Error = OutcomeInvalid, msg
		return errorResult("%s; fix the arguments and call again", msg), nil
	}
	rec.Effects = inv.Effects

	checks := g.judge(t, c.Name, inv.Effects)
	var hookContext string
	if g.hooks.Len() > 0 {
		// The hooks see the policy's verdict; theirs joins the checks, so
		// it can only make the outcome stricter. Arguments a hook changed
		// are decoded and judged again, as if the model had sent them.
		mode := ClaudePermissionMode(g.policy)
		pre := g.hooks.pre(ctx, c, rec.Role, worstOf(checks).d, mode)
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		hookContext = pre.context
		if pre.args != nil && pre.d.Verdict != policy.Deny {
			c.Arguments = pre.args
			if inv, err = t.Decode(c.Arguments); err != nil {
				msg := fmt.Sprintf("%s: a PreToolUse hook's updatedInput: %v", c.Name, err)
				rec.Decision = policy.Decision{Verdict: policy.Deny, Rule: RuleInvalidArguments, Reason: msg}
				rec.Outcome, rec.Error = OutcomeInvalid, msg
				return withHookContext(errorResult("%s", msg), hookContext), nil
			}
			rec.Effects = inv.Effects
			checks = g.judge(t, c.Name, inv.Effects)
		}
		if pre.d.Verdict != policy.Allow {
			checks = append(checks, check{d: pre.d})
		}
	}
	worst := worstOf(checks)
	rec.Decision = worst.d
	if worst.d.Verdict == policy.Ask {
		d, err := g.confirm(ctx, c.Name, checks, rec)
		if err != nil {
			return Result{}, err
		}
		worst.d = d
	}
	if worst.d.Verdict != policy.Allow {
		rec.Decision = worst.d
		rec.Outcome = OutcomeDenied
		return withHookContext(deniedResult(worst.d), hookContext), nil
	}

	start := time.Now()
	res, err := inv.Run(context.WithValue(ctx, gateKey{}, g))
	rec.Duration = time.Since(start)
	if err != nil {
		return res, fmt.Errorf("tool call %s (%s): %w", c.Name, c.ID, err)
	}
	if res.Duration == 0 {
		res.Duration = rec.Duration
	}
	if g.hooks.Len() > 0 {
		res = g.hooks.post(ctx, c, rec.Role, res, ClaudePermissionMode(g.policy))
		res = withHookContext(res, hookContext)
	}
	rec.Outcome = OutcomeError
	if res.OK {
		rec.Outcome = OutcomeOK
	}
	return res, nil
}

// worstOf is the most restrictive decision of checks; on a tie the last,
// most specific one (an effect's rather than the tool's default) is
// reported.
func worstOf(checks []check) check {
	worst := checks[0]
	for _, ch := range checks[1:] {
		if ch.d.Verdict <= worst.d.Verdict {
			worst = ch
		}
	}
	return worst
}

// gateKey carries the gate that runs a call to the tool, for the checks a
// tool makes below the paths the gate judged (hidden, writeCheck). One
// context value for both keeps Gate.Call's allocations down.
type gateKey struct{}

// callingGate is the gate running the call in ctx, or nil.
func callingGate(ctx context.Context) *Gate {
	g, _ := ctx.Value(gateKey{}).(*Gate)
	return g
}

// hidden reports whether the policy denies reading rel: tools that walk a
// folder (list_files, search_files) skip such paths, since the gate judged
// only the folder they were given.
func (g *Gate) hidden(rel string) bool {
	return g.policy.CheckPath(rel, policy.Read).Verdict == policy.Deny
}

// writeCheck is the policy's decision on writing rel: delete_file with
// recursive asks it about every entry of the tree it would remove, since
// the gate judged only the tree's top.
func (g *Gate) writeCheck(rel string) policy.Decision {
	return g.policy.CheckPath(rel, policy.Write)
}

// judge asks the policy about the tool and each of its effects.
func (g *Gate) judge(t Tool, tool string, effects []Effect) []check {
	checks := make([]check, 0, 1+len(effects))
	checks = append(checks, check{d: toolDecision(g.policy, t, tool)})
	for i := range effects {
		e := &effects[i]
		var d policy.Decision
		switch e.Kind {
		case EffectRead:
			d = g.policy.CheckPath(e.Path, policy.Read)
		case EffectWrite:
			d = g.policy.CheckPath(e.Path, policy.Write)
		case EffectExec:
			s := g.scope
			s.Dir = e.Dir
			if e.Links != nil {
				s.Links = e.Links
			}
			d = g.policy.CheckCommand(e.Command, s)
		default:
			d = policy.Decision{Verdict: policy.Deny, Rule: "unknown-effect",
				Reason: fmt.Sprintf("tool declared an effect of unknown kind %q", e.Kind)}
		}
		checks = append(checks, check{d: d, effect: e})
	}
	return checks
}

// confirm settles a call whose most restrictive decision is "ask" (no check
// denied). It returns an allow decision, or the deny decision to report. An
// error means ctx ended.
func (g *Gate) confirm(ctx context.Context, tool string, checks []check, rec *Record) (policy.Decision, error) {
	var pending []check
	seen := map[string]bool{}
	g.mu.Lock()
	for _, ch := range checks {
		if ch.d.Verdict != policy.Ask || seen[ch.d.Rule] {
			continue
		}
		seen[ch.d.Rule] = true
		if !g.always[ch.d.Rule] {
			pending = append(pending, ch)
		}
	}
	g.mu.Unlock()
	ask := rec.Decision
	if len(pending) == 0 {
		rec.AutoApproved = true
		return allowed(ask, "approved earlier with \"always\" for this rule"), nil
	}
	first := pending[0].d
	switch {
	case g.policy.Unattended():
		return denied(first, "the policy is unattended, so an action that needs confirmation is denied"), nil
	case g.confirmer == nil:
		return denied(first, "no one is available to confirm it, so it is denied"), nil
	}

	start := time.Now()
	defer func() { rec.Waited = time.Since(start) }()
	select {
	case g.asking <- struct{}{}:
		defer func() { <-g.asking }()
	case <-ctx.Done():
		return policy.Decision{}, ctx.Err()
	}
	for _, ch := range pending {
		g.mu.Lock()
		done := g.always[ch.d.Rule] // approved while this call waited its turn
		g.mu.Unlock()
		if done {
			continue
		}
		answer, why, err := g.ask(ctx, tool, ch)
		if err != nil {
			return policy.Decision{}, err
		}
		rec.Answer = &answer
		rec.Decision = ch.d
		switch answer {
		case policy.AnswerAlways:
			g.mu.Lock()
			g.always[ch.d.Rule] = true
			g.mu.Unlock()
		case policy.AnswerYes:
		default:
			return denied(ch.d, why), nil
		}
	}
	if rec.Answer == nil { // every pending rule was approved while waiting
		rec.AutoApproved = true
	}
	return allowed(ask, "confirmed"), nil
}

// ask puts one question to the confirmer. Any non-answer is "no"; why says
// which. The error is ctx's when the call itself was cancelled.
func (g *Gate) ask(ctx context.Context, tool string, ch check) (policy.Answer, string, error) {
	req := policy.ConfirmRequest{Tool: tool, Action: "call", Decision: ch.d, Timeout: g.policy.ConfirmTimeout()}
	if e := ch.effect; e != nil {
		req.Action = string(e.Kind)
		req.Path = e.Path
		if e.Kind == EffectExec {
			req.Command = e.Command.Line
			req.Argv = argv(e.Command)
		}
	}
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if req.Timeout > 0 {
		cctx, cancel = context.WithTimeout(ctx, req.Timeout)
	}
	defer cancel()
	answer, err := g.confirmer.Confirm(cctx, req)
	if ctx.Err() != nil {
		return policy.AnswerNo, "", ctx.Err()
	}
	switch {
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return policy.AnswerNo, fmt.Sprintf("no answer within %s, which counts as no", req.Timeout), nil
	case err != nil:
		return policy.AnswerNo, fmt.Sprintf("confirmation failed (%v), which counts as no", err), nil
	case answer == policy.AnswerNo:
		return policy.AnswerNo, "the person asked said no", nil
	case answer == policy.AnswerYes || answer == policy.AnswerAlways:
		return answer, "", nil
	}
	return policy.AnswerNo, fmt.Sprintf("unknown answer %d, which counts as no", answer), nil
}

func denied(d policy.Decision, why string) policy.Decision {
	return policy.Decision{Verdict: policy.Deny, Rule: d.Rule, Reason: joinReason(d.Reason, why)}
}

func allowed(d policy.Decision, why string) policy.Decision {
	return policy.Decision{Verdict: policy.Allow, Rule: d.Rule, Reason: joinReason(d.Reason, why)}
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// deniedResult tells the model what was refused and why, and invites it to
// take another way.
func deniedResult(d policy.Decision) Result {
	reason := d.Reason
	if reason == "" {
		reason = "not allowed"
	}
	return Result{
		OK:     false,
		Denied: true,
		Output: fmt.Sprintf("denied by policy: %s (rule: %s). Do not repeat this call; take another approach that the policy allows.", reason, d.Rule),
	}
}

// opaque is implemented by tools whose effects the policy cannot see (MCP
// tools: a server declares none). A tool that wraps another says so with
// Unwrap() Tool, so the gate still sees it.
type opaque interface{ opaqueEffects() string }

// RuleUnnamedOpaqueTool is the rule of the "ask" an opaque tool gets when
// no tools rule names it.
const RuleUnnamedOpaqueTool = "tools-unnamed-opaque"

// toolDecision is the policy's decision on the tool itself. A tool whose
// effects are unknown (an MCP tool) and that no tools rule names is "ask",
// not the policy's default allow: the policy never saw what it does, so a
// person must, and an unattended run denies it.
func toolDecision(p *policy.Policy, t Tool, name string) policy.Decision {
	d := p.CheckTool(name)
	for {
		w, ok := t.(interface{ Unwrap() Tool })
		if !ok {
			break
		}
		t = w.Unwrap()
	}
	o, ok := t.(opaque)
	if !ok || d.Verdict != policy.Allow || d.Rule != "tools-default-allow" {
		return d
	}
	return policy.Decision{Verdict: policy.Ask, Rule: RuleUnnamedOpaqueTool,
		Reason: fmt.Sprintf("no tools rule names %s and its effects are unknown (%s); name it in tools.allow, tools.ask or tools.deny", name, o.opaqueEffects())}
}
