package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
)

// Errors of the scripted model, for errors.Is.
var (
	// ErrScriptExhausted: a role asked for more replies than its script holds.
	ErrScriptExhausted = errors.New("script exhausted")
	// ErrScriptDiverged: a reply's expect did not match the conversation.
	ErrScriptDiverged = errors.New("run diverged from the script")
)

// ScriptExhaustedCode is the error code with which a scripted model served
// over HTTP (llmtest) says ErrScriptExhausted; the OpenAI provider's error
// for a reply with this code wraps ErrScriptExhausted again.
const ScriptExhaustedCode = "script_exhausted"

// Scripted is a [Model] that replays a YAML script: a list of replies per
// agent role, handed out in order. It is deterministic (tool call IDs are
// call_<role>_<turn>_<i>, turn and i counting from 1) and safe for
// concurrent use. The script format:
//
//	roles:
//	  planner:
//	    - output: {steps: [...], test_command: "go test ./..."}  # JSON text in Content
//	  worker:
//	    - content: "I'll write the file"
//	      tool_calls:
//	        - {name: write_file, arguments: {path: main.go, content: "package main\n"}}
//	        - {name: read_file, arguments_raw: '{"path": '}  # sent as written
//	      usage: {prompt_tokens: 120, completion_tokens: 30}  # else len/4
//	      expect: "README"      # the newest user/tool message must contain it
//	      finish_reason: length # else tool_calls or stop
//
// Unknown keys are errors naming file:line.
type Scripted struct {
	name  string
	roles map[string][]scriptedReply

	mu     sync.Mutex
	cursor map[string]int
}

var _ Model = (*Scripted)(nil)

type scriptedReply struct {
	line   int
	msg    Message // without tool call IDs
	usage  *Usage
	finish string
	expect string
}

type scriptFile struct {
	Roles map[string][]scriptReply `yaml:"roles"`
}

type scriptReply struct {
	Content      string       `yaml:"content"`
	Output       any          `yaml:"output"`
	ToolCalls    []scriptCall `yaml:"tool_calls"`
	Usage        *scriptUsage `yaml:"usage"`
	FinishReason string       `yaml:"finish_reason"`
	Expect       string       `yaml:"expect"`
}

type scriptCall struct {
	Name         string  `yaml:"name"`
	Arguments    any     `yaml:"arguments"`
	ArgumentsRaw *string `yaml:"arguments_raw"`
}

type scriptUsage struct {
	PromptTokens     int `yaml:"prompt_tokens"`
	CompletionTokens int `yaml:"completion_tokens"`
}

// LoadScript reads and parses a script file; errors name path:line.
func LoadScript(path string) (*Scripted, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	return ParseScript(path, data)
}

// ParseScript parses a script; name (usually the file path) prefixes every
// error, with the line where known.
func ParseScript(name string, data []byte) (*Scripted, error) {
	var f scriptFile
	if err := yaml.UnmarshalWithOptions(data, &f, yaml.Strict()); err != nil {
		return nil, yamlError(name, err)
	}
	if len(f.Roles) == 0 {
		return nil, fmt.Errorf("script %s: no roles (want a top-level roles: map of role to replies)", name)
	}
	ast, _ := parser.ParseBytes(data, 0)
	lineOf := func(path string) int {
		if ast == nil {
			return 0
		}
		p, err := yaml.PathString(path)
		if err != nil {
			return 0
		}
		n, err := p.FilterFile(ast)
		if err != nil || n == nil || n.GetToken() == nil {
			return 0
		}
		return n.GetToken().Position.Line
	}
	s := &Scripted{name: name, roles: map[string][]scriptedReply{}, cursor: map[string]int{}}
	for _, role := range slices.Sorted(maps.Keys(f.Roles)) {
		replies := f.Roles[role]
		if len(replies) == 0 {
			return nil, fmt.Errorf("%s: role %s has no replies", loc(name, lineOf("$.roles."+role)), role)
		}
		for i, r := range replies {
			line := lineOf(fmt.Sprintf("$.roles.%s[%d]", role, i))
			where := fmt.Sprintf("%s: role %s reply %d", loc(name, line), role, i+1)
			sr, err := r.compile()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			sr.line = line
			s.roles[role] = append(s.roles[role], sr)
		}
	}
	return s, nil
}

func (r scriptReply) compile() (scriptedReply, error) {
	out := scriptedReply{msg: Message{Role: RoleAssistant, Content: r.Content}, finish: r.FinishReason, expect: r.Expect}
	if r.Output != nil {
		if r.Content != "" || len(r.ToolCalls) > 0 {
			return out, errors.New("output excludes content and tool_calls")
		}
		b, err := json.Marshal(r.Output)
		if err != nil {
			return out, fmt.Errorf("output: %w", err)
		}
		out.msg.Content = string(b)
	}
	for j, c := range r.ToolCalls {
		if c.Name == "" {
			return out, fmt.Errorf("tool_calls[%d]: name is required", j)
		}
		tc := ToolCall{Name: c.Name}
		switch {
		case c.ArgumentsRaw != nil && c.Arguments != nil:
			return out, fmt.Errorf("tool_calls[%d] (%s): give arguments or arguments_raw, not both", j, c.Name)
		case c.ArgumentsRaw != nil:
			tc.Arguments = *c.ArgumentsRaw
		case c.Arguments != nil:
			b, err := json.Marshal(c.Arguments)
			if err != nil {
				return out, fmt.Errorf("tool_calls[%d] (%s): arguments: %w", j, c.Name, err)
			}
			tc.Arguments = string(b)
		default:
			tc.Arguments = "{}"
		}
		out.msg.ToolCalls = append(out.msg.ToolCalls, tc)
	}
	if r.Usage != nil {
		if r.Usage.PromptTokens < 0 || r.Usage.CompletionTokens < 0 {
			return out, errors.New("usage: token counts must not be negative")
		}
		out.usage = &Usage{PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens}
	}
	return out, nil
}

func loc(name string, line int) string {
	if line > 0 {
		return fmt.Sprintf("script %s:%d", name, line)
	}
	return "script " + name
}

// yamlError turns a go-yaml error into "script name:line:col: message".
func yamlError(name string, err error) error {
	var ye yaml.Error
	if errors.As(err, &ye) {
		if tok := ye.GetToken(); tok != nil {
			return fmt.Errorf("script %s:%d:%d: %s", name, tok.Position.Line, tok.Position.Column, ye.GetMessage())
		}
		return fmt.Errorf("script %s: %s", name, ye.GetMessage())
	}
	return fmt.Errorf("script %s: %w", name, err)
}

// Name is the script's name as given to ParseScript.
func (s *Scripted) Name() string { return s.name }

// Roles lists the roles the script has replies for, sorted.
func (s *Scripted) Roles() []string { return slices.Sorted(maps.Keys(s.roles)) }

// Complete returns the next reply of req.Agent's script. It fails, naming
// the script, role and turn, when the script is exhausted or a reply's
// expect does not match; a failed call does not advance the script.
func (s *Scripted) Complete(ctx context.Context, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	replies, ok := s.roles[req.Agent]
	if !ok {
		return Response{}, fmt.Errorf("script %s: no replies for role %q (script has roles %s): %w",
			s.name, req.Agent, strings.Join(s.Roles(), ", "), ErrScriptExhausted)
	}
	i := s.cursor[req.Agent]
	turn := i + 1
	if i >= len(replies) {
		return Response{}, fmt.Errorf("script %s: role %s has %d replies; turn %d asked for more: %w",
			s.name, req.Agent, len(replies), turn, ErrScriptExhausted)
	}
	r := replies[i]
	if r.expect != "" {
		if got, ok := newestInput(req.Messages, r.expect); !ok {
			return Response{}, fmt.Errorf("%s: role %s turn %d expects the newest user/tool message to contain %q; it is %q: %w",
				loc(s.name, r.line), req.Agent, turn, r.expect, clip(got, 300), ErrScriptDiverged)
		}
	}
	s.cursor[req.Agent] = turn
	msg := r.msg
	msg.ToolCalls = make([]ToolCall, len(r.msg.ToolCalls))
	for j, tc := range r.msg.ToolCalls {
		tc.ID = fmt.Sprintf("call_%s_%d_%d", req.Agent, turn, j+1)
		msg.ToolCalls[j] = tc
	}
	if len(msg.ToolCalls) == 0 {
		msg.ToolCalls = nil
	}
	finish := r.finish
	if finish == "" {
		finish = "stop"
		if len(msg.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	usage := Usage{PromptTokens: estimate(req.Messages...), CompletionTokens: estimate(msg)}
	if r.usage != nil {
		usage = *r.usage
	}
	return Response{Message: msg, Usage: usage, FinishReason: finish, Model: "scripted:" + s.name}, nil
}

// newestInput checks the user/tool messages after the last assistant
// message (or else the last user/tool message) for want; it returns the
// text it looked at.
func newestInput(msgs []Message, want string) (string, bool) {
	var seen []string
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == RoleAssistant {
			if len(seen) > 0 {
				break
			}
			continue
		}
		if m.Role != RoleUser && m.Role != RoleTool {
			continue
		}
		if strings.Contains(m.Content, want) {
			return m.Content, true
		}
		seen = append(seen, m.Content)
	}
	if len(seen) == 0 {
		return "", false
	}
	return seen[0], false
}

// clip cuts s to at most n bytes at a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// estimate is a rough token count, bytes/4, at least 1.
func estimate(msgs ...Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
		for _, tc := range m.ToolCalls {
			n += len(tc.Name) + len(tc.Arguments)
		}
	}
	return max(1, n/4)
}

// Cursor returns how many replies each role has consumed, for a checkpoint.
func (s *Scripted) Cursor() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.roles))
	for role := range s.roles {
		out[role] = s.cursor[role]
	}
	return out
}

// Seek sets the cursor, so a resumed run continues where it stopped.
// Roles missing from c start over; an unknown role or a position past
// the end of a role's replies is an error and changes nothing.
func (s *Scripted) Seek(c map[string]int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for role, n := range c {
		replies, ok := s.roles[role]
		if !ok {
			return fmt.Errorf("script %s: seek: no role %q", s.name, role)
		}
		if n < 0 || n > len(replies) {
			return fmt.Errorf("script %s: seek: role %s has %d replies, cannot seek to %d", s.name, role, len(replies), n)
		}
	}
	s.cursor = make(map[string]int, len(c))
	for role, n := range c {
		s.cursor[role] = n
	}
	return nil
}

// Remaining is how many replies role has left (0 for an unknown role).
func (s *Scripted) Remaining(role string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.roles[role]) - s.cursor[role]
}
