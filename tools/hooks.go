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
	// runs (or a person is asked); it may block the call or ask for a
	// confirmation, never allow what the policy denied.
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

// maxHookOutput bounds what is kept of a hook's stdout and stderr.
const maxHookOutput = 64 << 10

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
	// Dir is the working folder of hook commands: the folder of the
	// configuration file that declared them. Empty: the current folder.
	// When it lies inside a run's workspace, a hook runs there only if
	// its command names a file there (its script), pinned by SHA-256 when
	// the hooks were made and checked before every run of the hook: a
	// changed script is not run (a PreToolUse hook then blocks the call).
	// A hook that names no such file runs in an empty folder of its own
	// instead, so that nothing the Worker wrote is read as part of it.
	// The run makes the named files read-only (see agent.WithHooks).
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
// a minimal environment. A Hooks value is immutable and safe for
// concurrent use.
type Hooks struct {
	dir      string
	env      []string
	commands []hook
	// Bound per run by ForRun.
	runID, workspace string
	observe          func(HookRecord)
}

type hook struct {
	HookCommand
	match *regexp.Regexp // nil matches everything
	// files are the files the command names, hashed when the hooks were
	// made.
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
		hk := hook{HookCommand: c}
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
// every hook, and observe (when not nil) receives the record of every
// hook run, for the audit log and the trace. The files a command names
// through $CLAUDE_PROJECT_DIR (the workspace) are pinned now: a script of
// the workspace changed after this is not run.
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
	// Blocked says the hook blocked the call (exit 2, a block decision,
	// a failure or a timeout of a PreToolUse hook); Ask that it asked for
	// a confirmation.
	Blocked bool `json:"blocked,omitempty"`
	Ask     bool `json:"ask,omitempty"`
	// Reason is the hook's reason (its JSON reason, or stderr on exit 2).
	Reason string `json:"reason,omitempty"`
	// Note says where the hook ran when that was not its folder (an
	// empty folder, since its folder is inside the workspace and the
	// command names no pinned script there).
	Note     string        `json:"note,omitempty"`
	TimedOut bool          `json:"timed_out,omitempty"`
	Error    string        `json:"error,omitempty"`
	Duration time.Duration `json:"-"`
}

// MarshalJSON writes the duration as integer milliseconds.
func (r HookRecord) MarshalJSON() ([]byte, error) {
	type plain HookRecord
	return json.Marshal(struct {
		plain
		DurationMS int64 `json:"duration_ms"`
	}{plain(r), r.Duration.Milliseconds()})
}

// hookInput is the JSON a hook reads on stdin: Claude Code's field names,
// plus Trio's role and the policy's decision.
type hookInput struct {
	SessionID     string           `json:"session_id"`
	HookEventName string           `json:"hook_event_name"`
	Cwd           string           `json:"cwd"`
	ToolName      string           `json:"tool_name,omitempty"`
	ToolInput     json.RawMessage  `json:"tool_input,omitempty"`
	ToolUseID     string           `json:"tool_use_id,omitempty"`
	Role          string           `json:"role,omitempty"`
	Decision      *policy.Decision `json:"decision,omitempty"`
	ToolResponse  *Result          `json:"tool_response,omitempty"`
	StopReason    string           `json:"stop_reason,omitempty"`
	StopDetail    string           `json:"stop_detail,omitempty"`
}

// hookOutput is the JSON a hook may print on stdout: the classic
// decision/reason, or Claude Code's hookSpecificOutput.
type hookOutput struct {
	Decision           string `json:"decision"`
	Reason             string `json:"reason"`
	HookSpecificOutput struct {
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
	} `json:"hookSpecificOutput"`
}

// StopInfo is what Stop hooks are told about the run's end.
type StopInfo struct {
	Reason, Detail string
}

// Stop runs the Stop hooks once; their records go to the observer. A
// Stop hook cannot keep the run going: a block is recorded, not obeyed.
func (h *Hooks) Stop(ctx context.Context, info StopInfo) []HookRecord {
	if h == nil {
		return nil
	}
	var out []HookRecord
	for _, hk := range h.commands {
		if hk.Event != HookStop {
			continue
		}
		in := hookInput{StopReason: info.Reason, StopDetail: info.Detail}
		out = append(out, h.run(ctx, hk, in))
	}
	return out
}

// pre runs the PreToolUse hooks matching the call; the first that blocks
// or asks decides. The decision returned is the hooks' check for the gate
// (Allow when none objects).
func (h *Hooks) pre(ctx context.Context, c Call, role string, d policy.Decision) policy.Decision {
	ok := policy.Decision{Verdict: policy.Allow, Rule: "hooks", Reason: "no hook objected"}
	if h == nil {
		return ok
	}
	ask := ok
	for _, hk := range h.matching(HookPreToolUse, c.Name) {
		rec := h.run(ctx, hk, hookInput{ToolName: c.Name, ToolInput: hookToolInput(c.Name, c.Arguments, h.workspace), ToolUseID: c.ID, Role: role, Decision: &d})
		rule := fmt.Sprintf("hooks.%s: %q", HookPreToolUse, hk.Command)
		switch {
		case rec.Blocked:
			return policy.Decision{Verdict: policy.Deny, Rule: rule, Reason: "blocked by a PreToolUse hook: " + orNone(rec.Reason)}
		case rec.Ask && ask.Verdict == policy.Allow:
			ask = policy.Decision{Verdict: policy.Ask, Rule: rule, Reason: "a PreToolUse hook asks for confirmation: " + orNone(rec.Reason)}
		}
	}
	return ask
}

// post runs the PostToolUse hooks matching the call with its result; a
// block makes the result an error whose output ends with the reason.
func (h *Hooks) post(ctx context.Context, c Call, role string, res Result) Result {
	if h == nil {
		return res
	}
	for _, hk := range h.matching(HookPostToolUse, c.Name) {
		r := res
		rec := h.run(ctx, hk, hookInput{ToolName: c.Name, ToolInput: hookToolInput(c.Name, c.Arguments, h.workspace), ToolUseID: c.ID, Role: role, ToolResponse: &r})
		if rec.Blocked {
			res.OK = false
			res.Output = strings.TrimSpace(res.Output + "\n\nA PostToolUse hook objected to this result: " + orNone(rec.Reason))
		}
	}
	return res
}

// matching are the hooks of event whose matcher matches the tool by its
// name or one of Claude Code's names for it.
func (h *Hooks) matching(event, tool string) []hook {
	var out []hook
	names := hookNames(tool)
	for _, hk := range h.commands {
		if hk.Event == event && (hk.match == nil || slices.ContainsFunc(names, hk.match.MatchString)) {
			out = append(out, hk)
		}
	}
	return out
}

// run runs one hook and reads its verdict: exit 0 continues (unless its
// JSON says block or deny), exit 2 blocks with stderr as the reason. For
// PreToolUse a hook that fails otherwise or runs out of time also blocks:
// a guard that cannot answer must not wave a call through. For the other
// events such a failure is recorded and the run goes on.
func (h *Hooks) run(ctx context.Context, hk hook, in hookInput) HookRecord {
	rec := HookRecord{Time: time.Now(), Event: hk.Event, Command: hk.Command, Tool: in.ToolName, CallID: in.ToolUseID, Role: in.Role}
	in.SessionID, in.HookEventName, in.Cwd = h.runID, hk.Event, h.workspace
	stdin, err := json.Marshal(in)
	if err != nil {
		rec.Error = err.Error()
		rec.Blocked = hk.Event == HookPreToolUse
		rec.Reason = "the hook's input could not be encoded"
		h.emit(rec)
		return rec
	}
	dir, note, err := h.workDir(hk)
	if err != nil {
		rec.ExitCode, rec.Error = -1, err.Error()
		rec.Blocked = hk.Event == HookPreToolUse
		rec.Reason = "the hook was not run: " + err.Error()
		h.emit(rec)
		return rec
	}
	if note != "" {
		rec.Note = note
		defer os.RemoveAll(dir)
	}
	cctx, cancel := context.WithTimeout(ctx, hk.Timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, "/bin/sh", "-c", hk.Command)
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
	switch {
	case rec.ExitCode == 2:
		rec.Blocked = true
		rec.Reason = strings.TrimSpace(stderr.String())
	case rec.ExitCode != 0: // failed, timed out or cancelled
		rec.Blocked = hk.Event == HookPreToolUse
		if rec.Reason == "" {
			rec.Reason = fmt.Sprintf("the hook failed with exit code %d: %s", rec.ExitCode, strings.TrimSpace(stderr.String()))
		}
	case strings.EqualFold(out.Decision, "block") || out.HookSpecificOutput.PermissionDecision == "deny":
		rec.Blocked = true
		rec.Reason = firstOf(out.Reason, out.HookSpecificOutput.PermissionDecisionReason)
	case out.HookSpecificOutput.PermissionDecision == "ask":
		rec.Ask = true
		rec.Reason = firstOf(out.HookSpecificOutput.PermissionDecisionReason, out.Reason)
	default:
		// "allow" and "approve" are not honoured: a hook may tighten the
		// policy, never loosen it.
		rec.Reason = firstOf(out.Reason, out.HookSpecificOutput.PermissionDecisionReason)
	}
	h.emit(rec)
	return rec
}

func (h *Hooks) emit(rec HookRecord) {
	if h.observe != nil {
		h.observe(rec)
	}
}

// environ is the hooks' environment: the sandbox's allow-listed base and
// the run's facts. The host's HOME is kept (a hook is the user's own
// program and may read its own configuration), secrets are not.
func (h *Hooks) environ(event string) []string {
	home, _ := os.UserHomeDir()
	base := sandbox.BaseEnv(os.Getenv("PATH"), home, os.TempDir())
	return sandbox.MergeEnv(base, append([]string{
		"TRIO_RUN_ID=" + h.runID, "TRIO_WORKSPACE=" + h.workspace, "TRIO_HOOK_EVENT=" + event,
		"CLAUDE_PROJECT_DIR=" + h.workspace,
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

// workDir is the folder hk runs in: the hooks' folder, unless it lies
// inside the run's workspace. Then the command must name a file there,
// unchanged since the hooks were made (an error otherwise names it); a
// command that names none runs in a new empty folder, which the caller
// removes (note says so).
func (h *Hooks) workDir(hk hook) (dir, note string, err error) {
	if h.workspace == "" {
		return h.dir, "", nil
	}
	if _, in := RelInside(h.workspace, h.dir); !in {
		// Its folder is the user's; a script it names in the workspace
		// (through $CLAUDE_PROJECT_DIR) must still be the pinned one.
		if err := h.checkPinned(hk); err != nil {
			return "", "", err
		}
		return h.dir, "", nil
	}
	if err := h.checkPinned(hk); err != nil {
		return "", "", err
	}
	pinned := slices.ContainsFunc(hk.files, func(f pinnedFile) bool {
		_, in := RelInside(h.workspace, f.path)
		return in
	})
	if pinned {
		return h.dir, "", nil
	}
	empty, err := os.MkdirTemp("", "trio-hook-")
	if err != nil {
		return "", "", fmt.Errorf("an empty working folder: %w", err)
	}
	return empty, fmt.Sprintf("ran in an empty folder: its folder %s is inside the workspace and the command names no script there to pin", h.dir), nil
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
// file (symlinks followed), as a clean absolute path. A line that does
// not parse names none.
func CommandFiles(dir, line string) []string { return commandFiles(dir, line, nil) }

// ProjectCommandFiles is CommandFiles for a hook of a run in workspace:
// $CLAUDE_PROJECT_DIR in the line stands for workspace, as it does when
// the hook runs.
func ProjectCommandFiles(dir, line, workspace string) []string {
	return commandFiles(dir, line, map[string]string{"CLAUDE_PROJECT_DIR": workspace})
}

// commandFiles is CommandFiles with the variables of env expanded where a
// word names them ($NAME, ${NAME}); a word with any other expansion names
// no file.
func commandFiles(dir, line string, env map[string]string) []string {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(line), "")
	if err != nil {
		return nil
	}
	var words []string
	syntax.Walk(f, func(n syntax.Node) bool {
		if w, ok := n.(*syntax.Word); ok {
			if lit, ok := literalWord(w, env); ok {
				words = append(words, lit)
			}
			return false
		}
		return true
	})
	return NamedFiles(dir, words)
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
