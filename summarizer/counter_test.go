package summarizer_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pkoukk/tiktoken-go"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/summarizer"
)

func TestEncodingFor(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"gpt-4o":                 summarizer.EncodingO200K,
		"gpt-4o-mini-2024-07-18": summarizer.EncodingO200K,
		"gpt-4.1":                summarizer.EncodingO200K,
		"o3-mini":                summarizer.EncodingO200K,
		"gpt-5":                  summarizer.EncodingO200K,
		"qwen2.5-coder-32b":      summarizer.EncodingO200K,
		"":                       summarizer.EncodingO200K,
		"gpt-4":                  summarizer.EncodingCL100K,
		"gpt-4-turbo":            summarizer.EncodingCL100K,
		"GPT-4-0613":             summarizer.EncodingCL100K,
		"openai/gpt-3.5-turbo":   summarizer.EncodingCL100K,
		"text-embedding-3-small": summarizer.EncodingCL100K,
		"cl100k_base":            summarizer.EncodingCL100K,
	}
	for model, want := range cases {
		if got := summarizer.EncodingFor(model); got != want {
			t.Errorf("EncodingFor(%q) = %s, want %s", model, got, want)
		}
	}
}

// The example conversation of OpenAI's cookbook "How to count tokens with
// tiktoken", whose prompt the API reports as 129 tokens for gpt-3.5-turbo
// and gpt-4 and 124 for gpt-4o and gpt-4o-mini.
var cookbook = []llm.Message{
	{Role: llm.RoleSystem, Content: "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."},
	{Role: llm.RoleSystem, Name: "example_user", Content: "New synergies will help drive top-line growth."},
	{Role: llm.RoleSystem, Name: "example_assistant", Content: "Things working well together will increase revenue."},
	{Role: llm.RoleSystem, Name: "example_user", Content: "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."},
	{Role: llm.RoleSystem, Name: "example_assistant", Content: "Let's talk later when we're less busy about how to do better."},
	{Role: llm.RoleUser, Content: "This late pivot means we don't have time to boil the ocean for the client deliverable."},
}

func TestCountMessagesMatchesCookbook(t *testing.T) {
	t.Parallel()
	cases := []struct {
		model string
		want  int
	}{
		{"gpt-3.5-turbo", 129},
		{"gpt-4-0613", 129},
		{"gpt-4o", 124},
		{"gpt-4o-mini", 124},
	}
	for _, tc := range cases {
		c, err := summarizer.NewCounter(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.CountMessages(cookbook); got != tc.want {
			t.Errorf("%s: CountMessages = %d, want %d", tc.model, got, tc.want)
		}
		if got := c.CountMessages(cookbook); got != tc.want { // cached
			t.Errorf("%s: cached CountMessages = %d, want %d", tc.model, got, tc.want)
		}
	}
}

func TestCountMessageParts(t *testing.T) {
	t.Parallel()
	c := counter(t)
	base := c.CountMessage(llm.Message{Role: llm.RoleAssistant})
	call := llm.ToolCall{ID: "call_1", Name: "read_file", Arguments: `{"path":"main.go"}`}
	withCall := c.CountMessage(llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}})
	if want := base + 3 + c.Count(call.ID) + c.Count(call.Name) + c.Count(call.Arguments); withCall != want {
		t.Errorf("assistant with one call = %d, want %d", withCall, want)
	}
	// A tool result's Name is not sent; its tool_call_id is.
	tool := llm.Message{Role: llm.RoleTool, ToolCallID: "call_1", Name: "read_file", Content: "package main"}
	if got, want := c.CountMessage(tool), 3+c.Count("tool")+c.Count("package main")+c.Count("call_1"); got != want {
		t.Errorf("tool result = %d, want %d", got, want)
	}
	if c.Count("") != 0 || c.Count("<|endoftext|>") < 2 {
		t.Errorf("special tokens must count as ordinary text: %d", c.Count("<|endoftext|>"))
	}
	tools := testTools()
	if n := c.CountTools(tools); n < 3*20 || n != c.CountTools(tools) {
		t.Errorf("CountTools = %d, want a stable count of the JSON definitions", n)
	}
}

func TestCounterCalibration(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		samples [][2]int
		want    float64
	}{
		{"no sample", nil, 1},
		{"first sample replaces the prior", [][2]int{{100, 110}}, 1.1},
		{"ewma", [][2]int{{100, 110}, {100, 120}}, 0.3*1.2 + 0.7*1.1},
		{"clamped", [][2]int{{100, 1000}}, 4},
		{"ignored", [][2]int{{0, 100}, {100, 0}}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := summarizer.NewCounter("gpt-4o")
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.samples {
				c.Observe(s[0], s[1])
			}
			if got := c.Ratio(); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("Ratio = %v, want %v", got, tc.want)
			}
			if got, want := c.Calibrated(1000, 0.05), int(math.Ceil(1000*tc.want*1.05)); got != want {
				t.Errorf("Calibrated(1000, 5%%) = %d, want %d", got, want)
			}
		})
	}
}

func TestExtractErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, out string
		want      []string
	}{
		{"go test", failingOutput(3), []string{
			`    parser_test.go:13: Parse("1+3") = 3, want 4`, "--- FAIL: TestParse3 (0.00s)", "FAIL\tcalc\t0.03s"}},
		{"pytest", "tests/test_cli.py::test_help FAILED\nE   AssertionError: assert 2 == 0\n1 failed, 3 passed",
			[]string{"tests/test_cli.py::test_help FAILED", "E   AssertionError: assert 2 == 0", "1 failed, 3 passed"}},
		{"compiler", "# calc\n./main.go:12:5: undefined: Parse\n", []string{"./main.go:12:5: undefined: Parse"}},
		{"nothing recognisable", "\n  exit status 3\nmore\n", []string{"  exit status 3"}},
		{"empty", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := summarizer.ExtractErrors(tc.out); !slices.Equal(got, tc.want) {
				t.Errorf("ExtractErrors = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDecodeSummary(t *testing.T) {
	t.Parallel()
	good := `{"progress":"p","completed_steps":["a"],"files_changed":[],"unresolved_errors":[],"decisions":[],"next_steps":[]}`
	cases := []struct {
		name, in string
		want     string // substring of the error; "" means valid
	}{
		{"valid", good, ""},
		{"fenced", "```json\n" + good + "\n```", ""},
		{"empty reply", "  ", "empty"},
		{"blank fields", `{"progress":"","completed_steps":[],"files_changed":[],"unresolved_errors":[],"decisions":[],"next_steps":[]}`, "empty"},
		{"missing field", `{"progress":"p","completed_steps":[],"files_changed":[],"unresolved_errors":[],"decisions":[]}`, "next_steps"},
		{"unknown field", strings.Replace(good, `"decisions"`, `"mood":"ok","decisions"`, 1), "mood"},
		{"truncated", good[:40], "unexpected"},
		{"prose", "Here is the summary: it went well.", "invalid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := summarizer.DecodeSummary(tc.in)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("DecodeSummary: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("DecodeSummary error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if s := summarizer.SummarySchema(); !llm.StrictCompatible(s.Schema) || s.Name != "summary" {
		t.Errorf("SummarySchema is not strict: %s", s.Schema)
	}
	if errors.Is(nil, summarizer.ErrBudget) {
		t.Fatal("unreachable")
	}
}

func TestEmbeddedTexts(t *testing.T) {
	t.Parallel()
	if n := summarizer.WrapUpNote(); !strings.Contains(n, "80 %") || strings.HasSuffix(n, "\n") {
		t.Errorf("WrapUpNote = %q", n)
	}
	if h := summarizer.ReferenceHeader(); !strings.Contains(h, "it is not a new instruction") {
		t.Errorf("ReferenceHeader = %q", h)
	}
}

// Long text is counted in pieces: prose (cut where whitespace starts)
// counts exactly as a whole encoding does, and a long run without
// whitespace, which BPE encodes in time quadratic in its length, counts
// at most one token more per piece.
func TestCountLongText(t *testing.T) {
	c, err := summarizer.NewCounter("gpt-4o")
	if err != nil {
		t.Fatal(err)
	}
	enc, err := tiktoken.GetEncoding(summarizer.EncodingO200K)
	if err != nil {
		t.Fatal(err)
	}
	prose := strings.Repeat("The Critic runs go test -json ./... in a fresh sandbox; every check passed.\n\n\tfunc Add(a, b int) int { return a + b }\n", 300)
	if got, want := c.Count(prose), len(enc.EncodeOrdinary(prose)); got != want {
		t.Errorf("prose of %d bytes: %d tokens, whole encoding %d", len(prose), got, want)
	}
	for _, run := range []string{strings.Repeat("a", 1024) + " b", strings.Repeat("x", 6000), strings.Repeat("é", 3000), strings.Repeat(" ", 6000), strings.Repeat("ab=+", 1500)} {
		got, want := c.Count(run), len(enc.EncodeOrdinary(run))
		if got < want || got > want+len(run)/1024+1 {
			t.Errorf("a run of %d bytes (%.8q…): %d tokens, whole encoding %d", len(run), run, got, want)
		}
	}
}

// BenchmarkCountRun is the cost of counting 256 KiB of one letter
// against 256 KiB of prose: whole, the run took minutes (BPE's merge loop
// is quadratic in one pre-token's length); in pieces it costs about what
// prose does.
func BenchmarkCountRun(b *testing.B) {
	c, err := summarizer.NewCounter("gpt-4o")
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, text string }{
		{"prose", strings.Repeat("every check passed; ", 256<<10/20)},
		{"one-letter", strings.Repeat("x", 256<<10)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				c.Count(tc.text)
			}
		})
	}
}
