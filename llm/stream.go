package llm

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/openai/openai-go/v3"
)

// stream sends the request with stream=true and assembles the deltas,
// tool-call fragments included, into one Response. A stream that ends
// without a finish reason is ErrStreamCut: no partial reply escapes.
func (p *OpenAI) stream(ctx context.Context, params openai.ChatCompletionNewParams) (Response, error) {
	s := p.client.Chat.Completions.NewStreaming(ctx, params)
	defer s.Close()
	var (
		content, refusal strings.Builder
		calls            = map[int64]*callParts{}
		finish, model    string
		id               string
		usage            Usage
		chunks           int
	)
	for s.Next() {
		chunks++
		c := s.Current()
		if c.Model != "" {
			model = c.Model
		}
		if c.ID != "" {
			id = c.ID
		}
		if c.Usage.PromptTokens != 0 || c.Usage.CompletionTokens != 0 {
			usage = usageOf(c.Usage)
		}
		for _, ch := range c.Choices {
			if ch.Index != 0 {
				continue
			}
			content.WriteString(ch.Delta.Content)
			refusal.WriteString(ch.Delta.Refusal)
			for _, d := range ch.Delta.ToolCalls {
				tc := calls[d.Index]
				if tc == nil {
					tc = &callParts{}
					calls[d.Index] = tc
				}
				if d.ID != "" {
					tc.id = d.ID
				}
				tc.name.WriteString(d.Function.Name)
				tc.args.WriteString(d.Function.Arguments)
			}
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
		}
	}
	if err := s.Err(); err != nil {
		return Response{}, fmt.Errorf("stream after %d chunks: %w", chunks, err)
	}
	if finish == "" {
		return Response{}, fmt.Errorf("after %d chunks: %w", chunks, ErrStreamCut)
	}
	msg := Message{Role: RoleAssistant, Content: content.String()}
	if msg.Content == "" && refusal.Len() > 0 {
		msg.Content = refusal.String()
		finish = "refusal"
	}
	idx := make([]int64, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	for _, i := range idx {
		tc := calls[i]
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.id, Name: tc.name.String(), Arguments: tc.args.String()})
	}
	return Response{Message: msg, Usage: usage, FinishReason: finish, Model: model, ID: id}, nil
}

// callParts gathers one tool call's fragments; arguments arrive in many
// small deltas, so they are built, not concatenated.
type callParts struct {
	id         string
	name, args strings.Builder
}
