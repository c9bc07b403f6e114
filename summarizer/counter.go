package summarizer

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"math"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/trioagent/trio/llm"
)

// Encodings the Counter knows.
const (
	EncodingO200K  = "o200k_base"
	EncodingCL100K = "cl100k_base"
)

// Per-message accounting from OpenAI's cookbook ("How to count tokens with
// tiktoken", gpt-3.5-turbo-0613 and later, gpt-4, gpt-4o).
const (
	tokensPerMessage  = 3 // <|start|>{role/name}\n{content}<|end|>\n
	tokensPerName     = 1 // a name field costs one token beyond its text
	tokensReplyPrimed = 3 // every reply is primed with <|start|>assistant<|message|>
	tokensPerToolCall = 3 // framing of one tool call beyond its name and arguments
)

// cacheCap bounds the per-Counter count cache; when full it is cleared, which
// costs re-encoding but never a wrong count.
const cacheCap = 1 << 14

var (
	loaderOnce sync.Once
	encMu      sync.Mutex
	encoders   = map[string]*encoderOnce{}
)

// encoderOnce loads one encoding once; CoreBPE construction (regex compile,
// 200k-entry maps) is too costly to repeat per Counter.
type encoderOnce struct {
	once sync.Once
	tk   *tiktoken.Tiktoken
	err  error
}

func loadEncoding(name string) (*tiktoken.Tiktoken, error) {
	loaderOnce.Do(func() { tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader()) })
	encMu.Lock()
	e, ok := encoders[name]
	if !ok {
		e = &encoderOnce{}
		encoders[name] = e
	}
	encMu.Unlock()
	e.once.Do(func() { e.tk, e.err = tiktoken.GetEncoding(name) })
	if e.err != nil {
		return nil, fmt.Errorf("tiktoken encoding %s: %w", name, e.err)
	}
	return e.tk, nil
}

// EncodingFor names the encoding used for a model: cl100k_base for
// gpt-3.5, gpt-4 (not gpt-4o, gpt-4.1, gpt-4.5) and the text-embedding
// models; o200k_base for everything else, including models of other vendors,
// whose real tokenizer differs — Observe calibrates for that. A provider
// prefix ("openai/gpt-4") is ignored, and an encoding name is accepted as is.
func EncodingFor(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndex(m, "/"); i >= 0 {
		m = m[i+1:]
	}
	switch {
	case m == EncodingCL100K, m == EncodingO200K:
		return m
	case strings.HasPrefix(m, "gpt-4o"), strings.HasPrefix(m, "gpt-4.1"), strings.HasPrefix(m, "gpt-4.5"):
		return EncodingO200K
	case strings.HasPrefix(m, "gpt-4"), strings.HasPrefix(m, "gpt-3.5"), strings.HasPrefix(m, "gpt-35"),
		strings.HasPrefix(m, "text-embedding-"):
		return EncodingCL100K
	}
	return EncodingO200K
}

// Counter estimates the prompt tokens of chat messages for one model and
// learns how its estimates compare with what the endpoint reports. It is
// safe for concurrent use; one Counter may be shared by several windows of
// the same model so that its calibration carries over.
type Counter struct {
	encoding string
	enc      *tiktoken.Tiktoken
	seed     maphash.Seed

	toolsMu sync.Mutex // guards tools
	tools   toolsMemo

	mu      sync.Mutex
	cache   map[uint64]int
	ratio   float64
	samples int
}

// NewCounter returns a Counter for model (see EncodingFor).
func NewCounter(model string) (*Counter, error) {
	name := EncodingFor(model)
	enc, err := loadEncoding(name)
	if err != nil {
		return nil, err
	}
	return &Counter{encoding: name, enc: enc, seed: maphash.MakeSeed(), cache: map[uint64]int{}, ratio: 1}, nil
}

// Encoding is the name of the BPE encoding in use.
func (c *Counter) Encoding() string { return c.encoding }

// Count is the number of tokens of text. Special-token text such as
// "<|endoftext|>" is counted as ordinary text, as endpoints treat content.
//
// Text longer than countPiece bytes is counted in pieces cut before a
// single space between two words (BPE encodings attach that space to the
// word after it, so such a cut changes no token), or, where there is none
// (a megabyte of one letter, a base64 blob), every countPiece bytes. BPE's
// merge loop is quadratic in the length of one pre-token: a 64 KiB run of
// one letter took 3.6 s to count whole, and a tool's output or arguments
// may hold one. A hard cut can count a token or so more than the
// endpoint, the safe side.
func (c *Counter) Count(text string) int {
	n := 0
	for len(text) > countPiece {
		cut := pieceEnd(text, countPiece)
		n += len(c.enc.EncodeOrdinary(text[:cut]))
		text = text[cut:]
	}
	if text != "" {
		n += len(c.enc.EncodeOrdinary(text))
	}
	return n
}

// countPiece is the longest text Count encodes at once.
const countPiece = 1024

// pieceEnd is where the first piece of text (longer than max) ends: the
// last single space between two non-spaces after max/2 and at most max,
// else max moved back to the start of a UTF-8 sequence.
func pieceEnd(text string, max int) int {
	for i := max; i > max/2; i-- {
		if text[i] == ' ' && !isSpace(text[i-1]) && i+1 < len(text) && !isSpace(text[i+1]) {
			return i
		}
	}
	i := max
	for i > 0 && !utf8.RuneStart(text[i]) {
		i--
	}
	return i
}

func isSpace(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }

// CountMessage is the prompt cost of one message: the cookbook's 3 tokens of
// framing, the role, the content, a name (one extra token; not on tool
// results, whose Name is not sent), the tool_call_id, and each tool call's
// id, name and arguments JSON plus 3 tokens of framing. The count is cached
// by a hash of the message, so each distinct message is encoded once.
func (c *Counter) CountMessage(m llm.Message) int {
	key := c.hashMessage(m)
	c.mu.Lock()
	n, ok := c.cache[key]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = tokensPerMessage + c.Count(string(m.Role)) + c.Count(m.Content)
	if m.Name != "" && m.Role != llm.RoleTool {
		n += tokensPerName + c.Count(m.Name)
	}
	n += c.Count(m.ToolCallID)
	for _, tc := range m.ToolCalls {
		n += tokensPerToolCall + c.Count(tc.ID) + c.Count(tc.Name) + c.Count(tc.Arguments)
	}
	c.mu.Lock()
	if len(c.cache) >= cacheCap {
		clear(c.cache)
	}
	c.cache[key] = n
	c.mu.Unlock()
	return n
}

// CountMessages is the prompt cost of a whole request's messages, including
// the 3 tokens that prime the reply.
func (c *Counter) CountMessages(msgs []llm.Message) int {
	n := tokensReplyPrimed
	for _, m := range msgs {
		n += c.CountMessage(m)
	}
	return n
}

// CountTools approximates the prompt cost of tool definitions by counting
// their JSON. Endpoints render definitions in their own (usually terser)
// format, so this tends to overestimate — the safe side — and Observe's
// calibration absorbs the difference. Counts are cached per definition,
// and the last list counted is remembered by identity, so a list sent on
// every turn is not encoded to JSON again.
func (c *Counter) CountTools(defs []llm.ToolDef) int {
	c.toolsMu.Lock()
	defer c.toolsMu.Unlock()
	return c.tools.count(c, defs)
}

// countTools counts each definition's JSON, cached by content.
func (c *Counter) countTools(defs []llm.ToolDef) int {
	n := 0
	for i := range defs {
		b := toolJSON(defs[i])
		key := maphash.Bytes(c.seed, b) ^ 0x9e3779b97f4a7c15 // keep apart from message keys
		c.mu.Lock()
		v, ok := c.cache[key]
		c.mu.Unlock()
		if !ok {
			v = c.Count(string(b))
			c.mu.Lock()
			c.cache[key] = v
			c.mu.Unlock()
		}
		n += v
	}
	return n
}

// toolJSON is a definition as the OpenAI chat API takes it, in the layout
// the counts were calibrated on: {"function":{...},"type":"function"} with
// the schema's keys sorted and HTML escaped, as encoding/json writes a
// map. A schema that is not JSON is counted as its text, conservatively.
func toolJSON(d llm.ToolDef) []byte {
	type function struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		Parameters  any    `json:"parameters,omitempty"`
	}
	f := function{Name: d.Name, Description: d.Description}
	if len(d.Parameters) > 0 {
		var params any
		if err := json.Unmarshal(d.Parameters, &params); err != nil {
			f.Parameters = string(d.Parameters)
		} else {
			f.Parameters = params
		}
	}
	b, err := json.Marshal(struct {
		Function function `json:"function"`
		Type     string   `json:"type"`
	}{f, "function"})
	if err != nil {
		return fmt.Appendf(nil, "%+v", d)
	}
	return b
}

// Observe records one request's estimate (as returned by CountMessages plus
// CountTools) and the prompt tokens the endpoint reported for it. The ratio
// actual/estimated is folded into an exponentially weighted moving average
// (weight 0.3 for the newest sample; the first sample replaces the prior of
// 1). Single ratios outside [0.5, 4] are clamped: they are more likely a
// mismatched pair than a tokenizer difference.
func (c *Counter) Observe(estimated, actual int) {
	if estimated <= 0 || actual <= 0 {
		return
	}
	r := min(max(float64(actual)/float64(estimated), 0.5), 4)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.samples == 0 {
		c.ratio = r
	} else {
		c.ratio = 0.3*r + 0.7*c.ratio
	}
	c.samples++
}

// Ratio is the learned ratio between the endpoint's counts and the
// estimates (1 before any Observe).
func (c *Counter) Ratio() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ratio
}

// Calibrated scales an estimate by the learned ratio and adds a safety
// margin (0.05 = 5 %), rounding up: the number budgets are checked against.
func (c *Counter) Calibrated(estimate int, margin float64) int {
	return int(math.Ceil(float64(estimate) * c.Ratio() * (1 + margin)))
}

func (c *Counter) hashMessage(m llm.Message) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	for _, s := range []string{string(m.Role), m.Name, m.ToolCallID, m.Content} {
		h.WriteString(s)
		h.WriteByte(0)
	}
	for _, tc := range m.ToolCalls {
		h.WriteString(tc.ID)
		h.WriteByte(0)
		h.WriteString(tc.Name)
		h.WriteByte(0)
		h.WriteString(tc.Arguments)
		h.WriteByte(1)
	}
	return h.Sum64()
}
