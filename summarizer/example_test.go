package summarizer_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/summarizer"
)

// modelFunc adapts a function to llm.Model.
type modelFunc func(ctx context.Context, req llm.Request) (llm.Response, error)

func (f modelFunc) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return f(ctx, req)
}

// A Worker loop keeps its history in a Window: pin what must never be
// lost, append every reply and tool result, and ask Messages for what to
// send before each call.
func ExampleNewWindow() {
	ctx := context.Background()
	summaryModel := modelFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		// A real provider; req.Agent is "summarizer" and req.Output the schema.
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: `{"progress":"parser written",
			"completed_steps":["step 1"],"files_changed":["parser.go: parser"],"unresolved_errors":[],
			"decisions":["no dependencies"],"next_steps":["step 2"]}`}}, nil
	})
	var events []string
	w, err := summarizer.NewWindow(summarizer.Config{
		Model:        "gpt-4o",
		ContextLimit: 16000,
		ReplyReserve: 2000,
		SummaryEvery: 4,
		Summarizer:   summaryModel,
		OnEvent:      func(e summarizer.Event) { events = append(events, string(e.Kind)) },
		TraceRef:     func(i int) string { return fmt.Sprintf("trace.jsonl#history=%d", i) },
	})
	if err != nil {
		panic(err)
	}
	w.Pin(llm.Message{Role: llm.RoleSystem, Content: "You are the Worker."},
		llm.Message{Role: llm.RoleUser, Content: "Goal: a calculator CLI. Plan: 1. parser 2. CLI"})

	for turn := range 6 {
		msgs, err := w.Messages(ctx, nil)
		if err != nil {
			panic(err) // errors.Is(err, summarizer.ErrBudget) etc.: stop the run with the reason
		}
		// resp, err := worker.Complete(ctx, llm.Request{Agent: "worker", Messages: msgs, Tools: defs})
		w.Observe(llm.Usage{PromptTokens: w.Counter().CountMessages(msgs)}, len(msgs))
		id := fmt.Sprintf("call_%d", turn)
		w.Append(llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: "run_tests", Arguments: "{}"}}},
			llm.Message{Role: llm.RoleTool, ToolCallID: id, Name: "run_tests", Content: "--- FAIL: TestParse (0.00s)"})
		w.SetFailing("--- FAIL: TestParse (0.00s)")
	}
	msgs, _ := w.Messages(ctx, nil)
	fmt.Println("events:", strings.Join(events, ", "))
	fmt.Println("sent:", len(msgs), "of", w.Len()+2, "messages")
	fmt.Println("unresolved:", w.Unresolved())
	// Output:
	// events: summary
	// sent: 11 of 14 messages
	// unresolved: [--- FAIL: TestParse (0.00s)]
}
