package llm

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/openai/openai-go/v3/shared"
)

// The parameters that cap a chat completion's reply.
const (
	// TokenParamMaxTokens is max_tokens, which most OpenAI-compatible
	// servers understand and OpenAI's reasoning models refuse.
	TokenParamMaxTokens = "max_tokens"
	// TokenParamMaxCompletionTokens is max_completion_tokens, which
	// OpenAI's reasoning models require.
	TokenParamMaxCompletionTokens = "max_completion_tokens"
)

// ReasoningEfforts are the values reasoning_effort may take, as the SDK
// knows them.
var ReasoningEfforts = []string{
	string(shared.ReasoningEffortNone), string(shared.ReasoningEffortMinimal), string(shared.ReasoningEffortLow),
	string(shared.ReasoningEffortMedium), string(shared.ReasoningEffortHigh), string(shared.ReasoningEffortXhigh),
}

//go:embed models/reasoning.txt
var reasoningText string

var reasoningFamilies = sync.OnceValue(func() []string {
	var out []string
	for _, line := range strings.Split(reasoningText, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out
})

// IsReasoningModel reports whether the built-in table (llm/models/reasoning.txt)
// names model as one of OpenAI's reasoning models: o1, o3, o4, gpt-5 and
// their variants, with or without a "provider/" prefix.
func IsReasoningModel(model string) bool {
	name := strings.ToLower(model[strings.LastIndex(model, "/")+1:])
	for _, fam := range reasoningFamilies() {
		if rest, ok := strings.CutPrefix(name, fam); ok && (rest == "" || rest[0] == '-' || rest[0] == '.') {
			return true
		}
	}
	return false
}

// DefaultTokenParameter is the reply-cap parameter a model takes by its
// name: max_completion_tokens for a reasoning model, else max_tokens.
func DefaultTokenParameter(model string) string {
	if IsReasoningModel(model) {
		return TokenParamMaxCompletionTokens
	}
	return TokenParamMaxTokens
}

// checkTokenParameter is nil for a known parameter name.
func checkTokenParameter(p string) error {
	if p != TokenParamMaxTokens && p != TokenParamMaxCompletionTokens {
		return fmt.Errorf("%q: want %s or %s", p, TokenParamMaxTokens, TokenParamMaxCompletionTokens)
	}
	return nil
}

// CheckReasoningEffort is nil for a value reasoning_effort may take.
func CheckReasoningEffort(e string) error {
	if !slices.Contains(ReasoningEfforts, e) {
		return fmt.Errorf("%q: want one of %s", e, strings.Join(ReasoningEfforts, ", "))
	}
	return nil
}

// ThinkingBudgetOf is the Anthropic extended-thinking budget a reasoning
// level stands for, so that one setting (reasoning in trio.yaml,
// --reasoning) serves both providers: "" and none turn thinking off. The
// budgets leave room under the output limits of current Claude models
// with the default reply cap added (max_tokens holds both).
func ThinkingBudgetOf(level string) int {
	switch level {
	case "minimal":
		return MinThinkingBudget
	case "low":
		return 2048
	case "medium":
		return 8192
	case "high":
		return 16384
	case "xhigh":
		return 24576
	}
	return 0
}
