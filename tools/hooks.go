package tools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
)

// Hook events, named as in Claude Code's hooks contract (which Codex and
// goose follow), so that users' existing hook programs work unchanged.
const (
	// HookPreToolUse runs after the policy judged a call and before it
	// runs (or a person is asked); it may block the call, ask for a
	// confirmation or change the call's arguments (which the policy then
	// judges again), never allow what the policy denied or asks about.
	HookPreToolUse = "PreToolUse"
	// HookPostToolUse runs after a call ran and sees its result; a block
	// turns the result into an error the model reads.
	HookPostToolUse = "PostToolUse"
	// HookStop runs once when a run stops; it cannot keep the run going.
	HookStop = "Stop"
)

// DefaultHookTimeout is a hook's time limit when its configuration sets
// none (Claude Code's default).
const DefaultHookTimeout = 60 * time.Second

// maxHookOutput bounds what is kept of a hook's stdout and stderr;
// maxHookRecordOutput what of its stdout goes to its record.
const (
	maxHookOutput       = 64 << 10
	maxHookRecordOutput = 4 << 10
)

// HookCommand is one hook program, as configured.
type HookCommand struct {
	// Event is HookPreToolUse, HookPostToolUse or HookStop.
	Event string
	// Matcher is a regular expression matched against the whole tool name
	// ("run_command", "mcp__github__.*") and against Claude Code's names
	// for the tool (claudecode.yaml: "Bash" matches run_command and
	// run_tests, "Edit|Write" edit_file and write_file); "" or "*" matches
	// every tool. Stop hooks ignore it.
	Matcher string
	// Command is a shell command line, run by /bin/sh -c on the host.
	Command string
	// Timeout bounds one run of the hook (DefaultHookTimeout when zero).
	// A PreToolUse hook that runs out of time blocks the call.
	Timeout time.Duration
}

// HookConfig configures Hooks.
type HookConfig struct {
	Commands []HookCommand
	// Dir is the folder of the configuration file that declared the
	// hooks (empty: the current folder). A hook of a run runs in the run's
	// workspace, as Claude Code runs hooks in the project; a relative
	// word of its command that names a file of Dir (its script:
	// "./hooks/guard.sh") is made absolute, so it still names that file.
	// The files a command names are pinned by SHA-256 (those of Dir when
	// the hooks are made, those of the workspace when they are bound to a
	// run) and checked before every run of the hook: a changed script in
	// the workspace, or one that appeared there after the session
	// started, is not run (a PreToolUse hook then blocks the call). The
	// run makes the named files read-only (see agent.WithHooks). Hooks
	// not bound to a run run in Dir.
	Dir string
	// Env adds KEY=VALUE entries to the hooks' environment, which is
	// otherwise the sandbox's allow-listed base (sandbox.BaseEnv, with
	// the host's PATH and HOME) and TRIO_RUN_ID, TRIO_WORKSPACE,
	// TRIO_HOOK_EVENT and, as Claude Code sets it, CLAUDE_PROJECT_DIR (the
	// workspace): never the model's API key or other secrets. A command
	// naming its script through $CLAUDE_PROJECT_DIR has it pinned when the
	// hooks are bound to a run (ForRun), like a script named literally.
	Env []string
}

// Hooks runs the user's hook programs around tool calls (see WithHooks)
// and when a run stops (Stop). Hook programs are the user's own code,
// declared in trio.yaml: they run on the host, not in the sandbox, with
// a minimal environment. The hooks of one event that match a call run in
// parallel, as Claude Code runs them; their answers are combined in a
// fixed way (see pre). A Hooks value is immutable and safe for
// concurrent use.
type Hooks struct {
	dir      string
	env      []string
	commands []hook
	// Bound per run by ForRun and WithSession.
	runID, workspace string
	observe          func(HookRecord)
	session          HookSession
}

type hook struct {
	HookCommand
	// line is the command as run: its relative words that name files of
	// the hooks' folder made absolute, since it runs in the workspace.
	line  string
	match *regexp.Regexp // nil matches everything
	// files are the files the command names, hashed when the hooks were
	// made (and, for the workspace's, when they were bound to a run).
	files []pinnedFile
}

// pinnedFile is a file and its SHA-256 (hex) at one moment.
type pinnedFile struct{ path, sum string }

// NewHooks checks cfg: an unknown event, an empty command, a bad matcher
// or a negative timeout is an error naming the hook.
func NewHooks(cfg HookConfig) (*Hooks, error) {
	dir := cfg.Dir
	if dir == "" {
		dir = "."
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("tools: hooks folder: %w", err)
	}
	h := &Hooks{dir: dir, env: append([]string(nil), cfg.Env...)}
	for i, c := range cfg.Commands {
		switch c.Event {
		case HookPreToolUse, HookPostToolUse, HookStop:
		default:
			return nil, fmt.Errorf("tools: hook %d: unknown event %q (want %s, %s or %s)", i+1, c.Event, HookPreToolUse, HookPostToolUse, HookStop)
		}
		if strings.TrimSpace(c.Command) == "" {
			return nil, fmt.Errorf("tools: hook %d (%s): empty command", i+1, c.Event)
		}
		if c.Timeout < 0 {
			return nil, fmt.Errorf("tools: hook %d (%s): negative timeout", i+1, c.Event)
		}
		if c.Timeout == 0 {
			c.Timeout = DefaultHookTimeout
		}
		hk := hook{HookCommand: c, line: absoluteFiles(dir, c.Command)}
		if c.Matcher != "" && c.Matcher != "*" {
			re, err := regexp.Compile("^(?:" + c.Matcher + ")$")
			if err != nil {
				return nil, fmt.Errorf("tools: hook %d (%s): matcher %q: %w", i+1, c.Event, c.Matcher, err)
			}
			hk.match = re
		}
		for _, f := range CommandFiles(dir, c.Command) {
			sum, err := FileSHA256(f)
			if err != nil {
				return nil, fmt.Errorf("tools: hook %d (%s): %w", i+1, c.Event, err)
			}
			hk.files = append(hk.files, pinnedFile{path: f, sum: sum})
		}
		h.commands = append(h.commands, hk)
	}
	return h, nil
}

// ForRun returns a copy of h bound to one run: its id and workspace go to
// every hook, which runs in the workspace, and observe (when not nil)
// receives the record of every hook run, for the audit log and the trace.
// The files of the workspace a command names (through
// $CLAUDE_PROJECT_DIR, or relative to the workspace) are pinned now: a
// script of the workspace changed after this, or one that appears there
// later, is not run.
func (h *Hooks) ForRun(runID, workspace string, observe func(HookRecord)) *Hooks {
	cp := *h
	cp.runID, cp.workspace, cp.observe = runID, workspace, observe
	if workspace == "" {
		return &cp
	}
	cp.commands = slices.Clone(h.commands)
	for i := range cp.commands {
		hk := &cp.commands[i]
		hk.files = slices.Clone(hk.files)
		for _, f := range ProjectCommandFiles(h.dir, hk.Command, workspace) {
			if slices.ContainsFunc(hk.files, func(p pinnedFile) bool { return p.path == f }) {
				continue
			}
			if sum, err := FileSHA256(f); err == nil {
				hk.files = append(hk.files, pinnedFile{path: f, sum: sum})
			}
		}
	}
	return &cp
}

// HookSession is what a run tells its hooks beyond its id and workspace,
// in the fields Claude Code's hooks read.
type HookSession struct {
	// TranscriptPath is given as transcript_path. The agent gives its
	// run's history.jsonl: the Worker's conversation, one message a line
	// (Trio's message format, not Claude Code's).
	TranscriptPath string
	// PermissionMode is given as permission_mode to Stop hooks
	// (ClaudePermissionMode of the run's policy); tool hooks read the
	// mode of the policy of the gate that runs them.
	PermissionMode string
}

// WithSession returns a copy of h that gives s to its hooks.
func (h *Hooks) WithSession(s HookSession) *Hooks {
	cp := *h
	cp.session = s
	return &cp
}

// Files are the files the hook commands name (their scripts), absolute
// and sorted: what a run makes read-only when it lies in its workspace.
func (h *Hooks) Files() []string {
	if h == nil {
		return nil
	}
	var out []string
	for _, hk := range h.commands {
		for _, f := range hk.files {
			out = append(out, f.path)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Len is the number of hook commands.
func (h *Hooks) Len() int {
	if h == nil {
		return 0
	}
	return len(h.commands)
}

// HookRecord is what one run of a hook did.
type HookRecord struct {
	Time     time.Time `json:"time"`
	Event    string    `json:"event"`
	Command  string    `json:"command"`
	Tool     string    `json:"tool,omitempty"`
	CallID   string    `json:"call_id,omitempty"`
	Role     string    `json:"role,omitempty"`
	ExitCode int       `json:"exit_code"`
	// Blocked says the hook blocked the call (exit 2, a block or deny
	// decision, a failure or a timeout of a PreToolUse hook); Ask that it
	// asked for a confirmation; Allow that it said allow (which never
	// loosens the policy's decision).
	Blocked bool `json:"blocked,omitempty"`
	Ask     bool `json:"ask,omitempty"`
	Allow   bool `json:"allow,omitempty"`
	// Reason is the hook's reason (its JSON reason, or stderr on exit 2).
	Reason string `json:"reason,omitempty"`
	// UpdatedInput is a PreToolUse hook's hookSpecificOutput.updatedInput:
	// the call ran with it, judged again by the policy.
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
	// Context is hookSpecificOutput.additionalContext, added to the
	// call's result the model reads.
	Context string `json:"additional_context,omitempty"`
	// Stop says the hook answered "continue": false, which stops the
	// run (agent.StopHookStopped) with StopReason; a PreToolUse hook's
	// call is then not run.
	Stop       bool   `json:"stop,omitempty"`
	StopReason string `json:"stop_reason,omitempty"`
	// SystemMessage is the hook's systemMessage, for the person.
	SystemMessage string `json:"system_message,omitempty"`
	// Output is the start of the hook's stdout, unless the hook answered
	// "suppressOutput": true (then Suppressed).
	Output     string        `json:"output,omitempty"`
	Suppressed bool          `json:"suppressed,omitempty"`
	TimedOut   bool          `json:"timed_out,omitempty"`
	Error      string        `json:"error,omitempty"`
	Duration   time.Duration `json:"-"`
}

// MarshalJSON writes the duration as integer milliseconds.
func (r HookRecord) MarshalJSON() ([]byte, error) {
	type plain HookRecord
	return json.Marshal(struct {
		plain
		DurationMS int64 `json:"duration_ms"`
	}{plain(r), r.Duration.Milliseconds()})
}

// hookInput is the JSON a hook reads on stdin: Claude Code's field names
// (tool_name is Claude Code's name for the tool where it has one), plus
// Trio's tool name, role and the policy's decision.
type hookInput struct {
	SessionID      string           `json:"session_id"`
	TranscriptPath string           `json:"transcript_path"`
	Cwd            string           `json:"cwd"`
	PermissionMode string           `json:"permission_mode,omitempty"`
	HookEventName  string           `json:"hook_event_name"`
	ToolName       string           `json:"tool_name,omitempty"`
	ToolInput      json.RawMessage  `json:"tool_input,omitempty"`
	ToolUseID      string           `json:"tool_use_id,omitempty"`
	ToolResponse   *Result          `json:"tool_response,omitempty"`
	StopHookActive *bool            `json:"stop_hook_active,omitempty"`
	TrioToolName   string           `json:"trio_tool_name,omitempty"`
	Role           string           `json:"role,omitempty"`
	Decision       *policy.Decision `json:"decision,omitempty"`
	StopReason     string           `json:"stop_reason,omitempty"`
	StopDetail     string           `json:"stop_detail,omitempty"`
}

// hookOutput is the JSON a hook may print on stdout (exit 0): Claude
// Code's common fields, the classic decision/reason, and
// hookSpecificOutput.
type hookOutput struct {
	Continue           *bool  `json:"continue"`
	StopReason         string `json:"stopReason"`
	SuppressOutput     bool   `json:"suppressOutput"`
	SystemMessage      string `json:"systemMessage"`
	Decision           string `json:"decision"`
	Reason             string `json:"reason"`
	HookSpecificOutput struct {
		PermissionDecision       string          `json:"permissionDecision"`
		PermissionDecisionReason string          `json:"permissionDecisionReason"`
		UpdatedInput             json.RawMessage `json:"updatedInput"`
		AdditionalContext        string          `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

// StopInfo is what Stop hooks are told about the run's end.
type StopInfo struct {
	Reason, Detail string
}

// Stop runs the Stop hooks once, in parallel; their records go to the
// observer. A Stop hook cannot keep the run going: a block is recorded,
// not obeyed.
func (h *Hooks) Stop(ctx context.Context, info StopInfo) []HookRecord {
	if h == nil {
		return nil
	}
	active := false
	in := hookInput{StopReason: info.Reason, StopDetail: info.Detail, StopHookActive: &active, PermissionMode: h.session.PermissionMode}
	return h.runAll(ctx, h.matching(HookStop, ""), in)
}

// preHooks is what the PreToolUse hooks of a call decided.
type preHooks struct {
	// d is the hooks' check for the gate: Allow when none objects.
	d policy.Decision
	// args are the call's arguments after the hooks' updatedInput; nil
	// when no hook changed them.
	args json.RawMessage
	// context is the hooks' additionalContext, for the result.
	context string
}

// pre runs the PreToolUse hooks matching the call, in parallel, and
// combines their answers in the order they are configured, whatever
// order they finish in: a stop (continue: false) wins, then a block
// (deny), then an ask; the reason is the first such hook's. Every
// updatedInput is applied in turn (a later hook's keys override an
// earlier one's); the additionalContexts are joined. mode is the gate
// policy's permission_mode.
func (h *Hooks) pre(ctx context.Context, c Call, role string, d policy.Decision, mode string) preHooks {
	out := preHooks{d: policy.Decision{Verdict: policy.Allow, Rule: "hooks", Reason: "no hook objected"}}
	if h == nil {
		return out
	}
	recs := h.runAll(ctx, h.matching(HookPreToolUse, c.Name), h.toolInput(c, role, mode, &d, nil))
	var stop, deny, ask *HookRecord
	var contexts []string
	args := c.Arguments
	for i := range recs {
		rec := &recs[i]
		switch {
		case rec.Stop && stop == nil:
			stop = rec
		case rec.Blocked && deny == nil:
			deny = rec
		case rec.Ask && ask == nil:
			ask = rec
		}
		if rec.Context != "" {
			contexts = append(contexts, rec.Context)
		}
		if len(rec.UpdatedInput) > 0 {
			if a, err := hookUpdatedArgs(c.Name, args, rec.UpdatedInput, h.workspace); err == nil {
				args, out.args = a, a
			}
		}
	}
	rule := func(rec *HookRecord) string { return fmt.Sprintf("hooks.%s: %q", HookPreToolUse, rec.Command) }
	switch {
	case stop != nil:
		out.d = policy.Decision{Verdict: policy.Deny, Rule: rule(stop), Reason: "a PreToolUse hook stopped the run: " + orNone(stop.StopReason)}
	case deny != nil:
		out.d = policy.Decision{Verdict: policy.Deny, Rule: rule(deny), Reason: "blocked by a PreToolUse hook: " + orNone(deny.Reason)}
	case ask != nil:
		out.d = policy.Decision{Verdict: policy.Ask, Rule: rule(ask), Reason: "a PreToolUse hook asks for confirmation: " + orNone(ask.Reason)}
	}
	out.context = strings.Join(contexts, "\n")
	return out
}

// post runs the PostToolUse hooks matching the call with its result, in
// parallel: a block makes the result an error whose output ends with the
// reasons (in the hooks' configured order), and additionalContext is
// added to the output the model reads.
func (h *Hooks) post(ctx context.Context, c Call, role string, res Result, mode string) Result {
	if h == nil {
		return res
	}
	r := res
	recs := h.runAll(ctx, h.matching(HookPostToolUse, c.Name), h.toolInput(c, role, mode, nil, &r))
	var reasons, contexts []string
	for _, rec := range recs {
		if rec.Blocked {
			reasons = append(reasons, orNone(rec.Reason))
		}
		if rec.Context != "" {
			contexts = append(contexts, rec.Context)
		}
	}
	if len(reasons) > 0 {
		res.OK = false
		res.Output = strings.TrimSpace(res.Output + "\n\nA PostToolUse hook objected to this result: " + strings.Join(reasons, "; "))
	}
	return withHookContext(res, strings.Join(contexts, "\n"))
}

// withHookContext adds the hooks' additionalContext to what the model
// reads of res.
func withHookContext(res Result, context string) Result {
	if context != "" {
		res.Output = strings.TrimSpace(res.Output + "\n\nContext from a hook:\n" + context)
	}
	return res
}

// toolInput is a tool hook's input for call c.
func (h *Hooks) toolInput(c Call, role, mode string, d *policy.Decision, res *Result) hookInput {
	return hookInput{ToolName: claudeToolName(c.Name), TrioToolName: c.Name, ToolInput: hookToolInput(c.Name, c.Arguments, h.workspace),
		ToolUseID: c.ID, Role: role, Decision: d, ToolResponse: res, PermissionMode: firstOf(mode, h.session.PermissionMode)}
}

// matching are the hooks of event whose matcher matches the tool by its
// name or one of Claude Code's names for it; a command configured twice
// runs once (as Claude Code dedups identical commands).
func (h *Hooks) matching(event, tool string) []hook {
	var out []hook
	names := hookNames(tool)
	for _, hk := range h.commands {
		if hk.Event != event || slices.ContainsFunc(out, func(o hook) bool { return o.Command == hk.Command }) {
			continue
		}
		if event == HookStop || hk.match == nil || slices.ContainsFunc(names, hk.match.MatchString) {
			out = append(out, hk)
		}
	}
	return out
}

// runAll runs hks at once with the same input and returns their records
// in hks' order, handed to the observer in that order once all are done.
func (h *Hooks) runAll(ctx context.Context, hks []hook, in hookInput) []HookRecord {
	recs := make([]HookRecord, len(hks))
	var wg sync.WaitGroup
	for i, hk := range hks {
		wg.Go(func() { recs[i] = h.run(ctx, hk, in) })
	}
	wg.Wait()
	for _, rec := range recs {
		if h.observe != nil {
			h.observe(rec)
		}
	}
	return recs
}

// run runs one hook and reads its verdict: exit 0 continues (unless its
// JSON says block, deny, ask or continue: false), exit 2 blocks with
// stderr as the reason. For PreToolUse a hook that fails otherwise or
// runs out of time also blocks: a guard that cannot answer must not wave
// a call through. For the other events such a failure is recorded and
// the run goes on.
func (h *Hooks) run(ctx context.Context, hk hook, in hookInput) HookRecord {
	rec := HookRecord{Time: time.Now(), Event: hk.Event, Command: hk.Command, Tool: in.TrioToolName, CallID: in.ToolUseID, Role: in.Role}
	in.SessionID, in.HookEventName, in.Cwd, in.TranscriptPath = h.runID, hk.Event, h.workspace, h.session.TranscriptPath
	stdin, err := json.Marshal(in)
	if err != nil {
		rec.Error = err.Error()
		rec.Blocked = hk.Event == HookPreToolUse
		rec.Reason = "the hook's input could not be encoded"
		return rec
	}
	dir, err := h.workDir(hk)
	if err != nil {
		rec.ExitCode, rec.Error = -1, err.Error()
		rec.Blocked = hk.Event == HookPreToolUse
		rec.Reason = "the hook was not run: " + err.Error()
		return rec
	}
	cctx, cancel := context.WithTimeout(ctx, hk.Timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, "/bin/sh", "-c", hk.line)
	cmd.Dir = dir
	cmd.Env = h.environ(hk.Event)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr limitedBuffer
	stdout.max, stderr.max = maxHookOutput, maxHookOutput
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Its own process group, killed whole: a hook's children must not
	// outlive it and keep the pipes open.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	start := time.Now()
	err = cmd.Run()
	rec.Duration = time.Since(start)
	var exitErr *exec.ExitError
	switch {
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		rec.TimedOut, rec.ExitCode = true, -1
		rec.Reason = fmt.Sprintf("the hook did not answer within %s", hk.Timeout)
	case ctx.Err() != nil:
		rec.ExitCode, rec.Error = -1, ctx.Err().Error()
		rec.Reason = "the call was cancelled while its hook ran"
	case errors.As(err, &exitErr):
		rec.ExitCode = exitErr.ExitCode()
	case err != nil:
		rec.ExitCode, rec.Error = -1, err.Error()
		rec.Reason = "the hook could not run: " + err.Error()
	}
	var out hookOutput
	if rec.ExitCode == 0 && !rec.TimedOut {
		if s := strings.TrimSpace(stdout.String()); strings.HasPrefix(s, "{") {
			_ = json.Unmarshal([]byte(s), &out) // plain text output means "continue"
		}
	}
	if out.SuppressOutput {
		rec.Suppressed = true
	} else if s := stdout.String(); s != "" {
		rec.Output = s[:min(len(s), maxHookRecordOutput)]
	}
	rec.SystemMessage = out.SystemMessage
	hs := out.HookSpecificOutput
	switch {
	case rec.ExitCode == 2:
		rec.Blocked = true
		rec.Reason = strings.TrimSpace(stderr.String())
		return rec // Claude Code reads no JSON on exit 2
	case rec.ExitCode != 0: // failed, timed out or cancelled
		rec.Blocked = hk.Event == HookPreToolUse
		if rec.Reason == "" {
			rec.Reason = fmt.Sprintf("the hook failed with exit code %d: %s", rec.ExitCode, strings.TrimSpace(stderr.String()))
		}
		return rec
	case strings.EqualFold(out.Decision, "block") || hs.PermissionDecision == "deny":
		rec.Blocked = true
		rec.Reason = firstOf(hs.PermissionDecisionReason, out.Reason)
	case hs.PermissionDecision == "ask":
		rec.Ask = true
		rec.Reason = firstOf(hs.PermissionDecisionReason, out.Reason)
	default:
		// "allow" and "approve" are recorded, not obeyed: a hook may
		// tighten the policy, never loosen it.
		rec.Allow = hs.PermissionDecision == "allow" || strings.EqualFold(out.Decision, "approve")
		rec.Reason = firstOf(hs.PermissionDecisionReason, out.Reason)
	}
	if out.Continue != nil && !*out.Continue {
		rec.Stop, rec.StopReason = true, out.StopReason
	}
	rec.Context = hs.AdditionalContext
	if u := bytes.TrimSpace(hs.UpdatedInput); len(u) > 0 && string(u) != "null" && hk.Event == HookPreToolUse {
		var obj map[string]json.RawMessage
		if json.Unmarshal(u, &obj) != nil || obj == nil {
			rec.Blocked = true
			rec.Reason = "its updatedInput is not a JSON object: " + string(u[:min(len(u), 200)])
		} else {
			rec.UpdatedInput = json.RawMessage(u)
		}
	}
	return rec
}

// environ is the hooks' environment: the sandbox's allow-listed base and
// the run's facts. The host's HOME is kept (a hook is the user's own
// program and may read its own configuration), secrets are not. Hooks run
// on the host in the workspace, which the Worker writes: PYTHONSAFEPATH
// keeps Python from importing the working folder's or the script's
// folder's modules (python3 -m black would otherwise load a black.py the
// Worker wrote); HookConfig.Env, or the hook's own command, can unset it.
func (h *Hooks) environ(event string) []string {
	home, _ := os.UserHomeDir()
	base := sandbox.BaseEnv(os.Getenv("PATH"), home, os.TempDir())
	return sandbox.MergeEnv(base, append([]string{
		"TRIO_RUN_ID=" + h.runID, "TRIO_WORKSPACE=" + h.workspace, "TRIO_HOOK_EVENT=" + event,
		"CLAUDE_PROJECT_DIR=" + h.workspace, "PYTHONSAFEPATH=1",
	}, h.env...))
}

// argsJSON is the call's arguments as a JSON value for the hook's input
// (a malformed one as a string, so the input stays valid JSON).
func argsJSON(raw json.RawMessage) json.RawMessage {
	if json.Valid(raw) {
		return raw
	}
	b, _ := json.Marshal(string(raw))
	return b
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "(no reason given)"
	}
	return s
}

// limitedBuffer keeps the first max bytes written to it. The buffer is a
// field, not embedded: an embedded bytes.Buffer's ReadFrom would let
// io.Copy (os/exec's copy of a pipe) fill it past max.
type limitedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string { return b.buf.String() }

// workDir is the folder hk runs in: the run's workspace (the hooks'
// folder when they are not bound to a run). Every file the command names
// in the workspace must be one pinned when the session started and
// unchanged since; an error names the one that is not.
func (h *Hooks) workDir(hk hook) (string, error) {
	if h.workspace == "" {
		return h.dir, nil
	}
	if err := h.checkPinned(hk); err != nil {
		return "", err
	}
	for _, f := range ProjectCommandFiles(h.dir, hk.Command, h.workspace) {
		if _, in := RelInside(h.workspace, f); !in {
			continue
		}
		if !slices.ContainsFunc(hk.files, func(p pinnedFile) bool { return p.path == f }) {
			return "", fmt.Errorf("it names %s in the workspace, which was not there when the session started: a hook's script must be there before the session, to be pinned", f)
		}
	}
	return h.workspace, nil
}

// checkPinned is nil when every pinned file of hk that lies in the
// workspace is unchanged.
func (h *Hooks) checkPinned(hk hook) error {
	for _, f := range hk.files {
		if _, in := RelInside(h.workspace, f.path); !in {
			continue
		}
		sum, err := FileSHA256(f.path)
		if err != nil {
			return fmt.Errorf("its script %s cannot be read now: %w", f.path, err)
		}
		if sum != f.sum {
			return fmt.Errorf("its script %s changed since the session started (sha256 %s, pinned %s)", f.path, short(sum), short(f.sum))
		}
	}
	return nil
}

func short(sum string) string { return sum[:min(12, len(sum))] }

// FileSHA256 is the hex SHA-256 of the file at path (symlinks followed).
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	hs := sha256.New()
	if _, err := io.Copy(hs, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(hs.Sum(nil)), nil
}

// CommandFiles are the files a shell command line names: each literal
// word of it that is, relative to dir or absolute, an existing regular
// file (symlinks followed), as a clean absolute path. A command name
// without a slash (found in PATH) and the target of an output
// redirection (written, not run) name none; neither does a line that
// does not parse.
func CommandFiles(dir, line string) []string { return commandFiles(dir, line, nil) }

// ProjectCommandFiles are the files line names as a hook of a run in
// workspace, declared in dir: $CLAUDE_PROJECT_DIR stands for workspace,
// as it does when the hook runs; a relative word names a file of dir when
// there is one (it is made absolute before the hook runs), else one of
// the workspace, the hook's working folder.
func ProjectCommandFiles(dir, line, workspace string) []string {
	return commandFiles(workspace, absoluteFiles(dir, line), map[string]string{"CLAUDE_PROJECT_DIR": workspace})
}

// commandFiles is CommandFiles with the variables of env expanded where a
// word names them ($NAME, ${NAME}); a word with any other expansion names
// no file.
func commandFiles(dir, line string, env map[string]string) []string {
	var words []string
	fileWords(line, env, func(_ *syntax.Word, lit string) { words = append(words, lit) })
	return NamedFiles(dir, words)
}

// absoluteFiles is line with each relative literal word that names a
// file of dir (as CommandFiles finds them) replaced by its absolute path,
// quoted, so that the line names the same files in any working folder.
func absoluteFiles(dir, line string) string {
	type repl struct {
		from, to uint
		s        string
	}
	var rs []repl
	fileWords(line, nil, func(w *syntax.Word, lit string) {
		if lit == "" || filepath.IsAbs(lit) || strings.HasPrefix(lit, "-") {
			return
		}
		p := filepath.Join(dir, lit)
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			return
		}
		if q, err := syntax.Quote(p, syntax.LangPOSIX); err == nil {
			rs = append(rs, repl{w.Pos().Offset(), w.End().Offset(), q})
		}
	})
	for i := len(rs) - 1; i >= 0; i-- {
		r := rs[i]
		if r.from <= r.to && int(r.to) <= len(line) {
			line = line[:r.from] + r.s + line[r.to:]
		}
	}
	return line
}

// fileWords calls fn, in the line's order, with each literal word (see
// literalWord) that may name a file: not a command name without a slash,
// not an output redirection's target or a here-document. Words with
// other expansions are not given, but the commands inside them are
// walked.
func fileWords(line string, env map[string]string, fn func(w *syntax.Word, lit string)) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(line), "")
	if err != nil {
		return
	}
	var visit func(n syntax.Node) bool
	visit = func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Redirect:
			switch n.Op {
			case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.RdrAllClob,
				syntax.AppAll, syntax.AppAllClob, syntax.DplOut, syntax.DplIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
				return false
			}
		case *syntax.CallExpr:
			for _, a := range n.Assigns {
				syntax.Walk(a, visit)
			}
			for i, w := range n.Args {
				if lit, ok := literalWord(w, env); ok && i == 0 && !strings.Contains(lit, "/") {
					continue // looked up in PATH
				}
				syntax.Walk(w, visit)
			}
			return false
		case *syntax.Word:
			if lit, ok := literalWord(n, env); ok {
				fn(n, lit)
				return false
			}
		}
		return true
	}
	syntax.Walk(f, visit)
}

// literalWord is w's value when no expansion is in it but plain ones of
// env's variables.
func literalWord(w *syntax.Word, env map[string]string) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.ParamExp:
			v, ok := plainParam(p, env)
			if !ok {
				return "", false
			}
			b.WriteString(v)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
					b.WriteString(q.Value)
				case *syntax.ParamExp:
					v, ok := plainParam(q, env)
					if !ok {
						return "", false
					}
					b.WriteString(v)
				default:
					return "", false
				}
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// plainParam is env's value of a plain $NAME or ${NAME}.
func plainParam(p *syntax.ParamExp, env map[string]string) (string, bool) {
	if p.Param == nil || p.Excl || p.Length || p.Width || p.Index != nil || p.Slice != nil || p.Repl != nil || p.Names != 0 || p.Exp != nil {
		return "", false
	}
	v, ok := env[p.Param.Value]
	return v, ok
}

// NamedFiles are the words (an argv) that name existing regular files,
// relative to dir or absolute, as clean absolute paths, sorted, once each.
// Options ("-x", "--name") are not files.
func NamedFiles(dir string, words []string) []string {
	var out []string
	for _, w := range words {
		if w == "" || strings.HasPrefix(w, "-") {
			continue
		}
		p := w
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			out = append(out, abs)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// RelInside reports whether p names an entry inside the folder dir (or
// dir itself) and returns its slash-separated path relative to dir. Both
// are compared with dir's symlinks resolved and p's folder's resolved,
// never p's own last element: a symlink named p inside dir is inside,
// wherever it points.
func RelInside(dir, p string) (string, bool) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	if r, err := filepath.EvalSymlinks(d); err == nil {
		d = r
	}
	a, err := filepath.Abs(p)
	if err != nil {
		return "", false
	}
	parent, base := filepath.Dir(a), filepath.Base(a)
	if r, err := filepath.EvalSymlinks(parent); err == nil {
		parent = r
	}
	if a == filepath.Dir(a) { // the root
		parent, base = a, ""
	}
	full := filepath.Join(parent, base)
	if r, err := filepath.EvalSymlinks(full); err == nil && r == d {
		full = d // dir itself, through a link
	}
	rel, err := filepath.Rel(d, full)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}
