// Package summarizer keeps a model's chat history inside its context window.
//
// It owns two things:
//
//   - Token counting (Counter): tiktoken-go with its offline loader, so the
//     BPE ranks are embedded and nothing is downloaded at run time. Each
//     message is encoded once and its count cached; the per-message overhead
//     follows OpenAI's cookbook accounting; the ratio between the estimate and
//     the endpoint's reported prompt tokens is learned (Observe) and budgets
//     keep a safety margin on top of it.
//   - The rolling window (Window): pinned messages (system prompt, goal,
//     plan) are always sent; the rest of the history is kept in full in the
//     window's log, and what is sent is a fitted view. Before each model call
//     Messages fits the budget by, in order, masking old tool outputs (the
//     call stays, the output becomes a one-line stub pointing at the trace),
//     then a structured summary by a model when masking is not enough. The
//     cadence also summarizes before the budget binds: by default when
//     carrying the unsummarized rounds at the cached price has cost more
//     than a summary (cadence.go), or every SummaryEvery Worker turns when
//     that is set. Unresolved error texts and the
//     current failing output are tracked by the window itself and always sent
//     verbatim; the model's summary is never trusted with them alone.
//   - Stable prefixes for provider caches: a view is laid out as pinned
//     messages, the summary, the rounds, then a volatile tail (tracked errors,
//     failing output). Old outputs are masked in one batch when the budget
//     binds, not one round per turn, so between two summaries or masking
//     batches each view extends the previous one except for its tail.
//     Window.StablePrefix says where the tail starts, for cache breakpoints.
//
// A request over budget is never returned: Messages either returns a view
// that fits (messages + tool definitions + reply reserve ≤ context limit,
// after calibration and margin) or an error wrapping ErrBudget,
// ErrNoProgress or ErrSummary that names the reason.
//
// The package must not call tools, write files or know about roles other
// than asking its summarizer model with Request.Agent "summarizer". Per-role
// token accounting and run-wide budgets belong to the agent; the window
// reports the usage of its own summary calls through Config.OnEvent.
//
// # Wiring into a Worker loop
//
//	w, err := summarizer.NewWindow(summarizer.Config{
//		Model: "gpt-4o", ContextLimit: 128000, ReplyReserve: 4096,
//		Summarizer: model, OnEvent: trace.Summarizer, TraceRef: trace.Ref,
//	})
//	w.Pin(system, goal, plan)            // SetPinned to replace on replan / new step
//	for {
//		msgs, err := w.Messages(ctx, view.Definitions())
//		if err != nil { /* stop the run: errors.Is(err, summarizer.ErrBudget) ... */ }
//		resp, err := model.Complete(ctx, llm.Request{Agent: "worker", Messages: msgs, Tools: defs})
//		w.Observe(resp.Usage, len(msgs))    // calibrate the estimate
//		w.Append(resp.Message)              // an assistant message starts a Worker turn
//		w.Append(toolResults...)
//		w.SetFailing(testOutput)            // "" when the step's tests pass
//	}
//
// Append the wrap-up note (WrapUpNote) as a user message through Append so
// it is counted like any other message. Pin the current step (SetPinned)
// if it must survive summaries; the plan and goal are pinned anyway.
//
// Events: write each Event to trace.jsonl as it comes. Summary calls'
// token usage is in Event.Usage of EventSummary and EventSummaryRejected:
// add it to the "summarizer" role's totals. For a checkpoint store
// Window.State(); on resume Pin and Append the same messages and Restore it.
package summarizer
