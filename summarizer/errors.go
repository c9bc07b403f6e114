package summarizer

import "errors"

// Sentinel errors returned (wrapped, with a reason) by Window.Messages.
var (
	// ErrBudget means the window cannot be brought under the context budget:
	// the pinned messages, the summary, the last round and the current failing
	// output alone exceed it, even with every tool output masked.
	ErrBudget = errors.New("context budget exceeded")
	// ErrNoProgress means summaries followed each other without any new
	// messages or progress in between; summarizing again would loop.
	ErrNoProgress = errors.New("summaries make no progress")
	// ErrSummary means the summarizer model's reply was malformed, empty or
	// over budget twice in a row. It is wrapped together with ErrBudget when
	// masking harder could not make up for the missing summary.
	ErrSummary = errors.New("summary failed")
)
