package summarizer

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/trioagent/trio/llm"
)

// AgentName is the Request.Agent of summary calls.
const AgentName = "summarizer"

// Bounds of the summarizer's input.
const (
	maxPieceBytes  = 6000 // a longer message is cut to its head and tail in the transcript
	pieceSlack     = 12   // header and separator tokens per transcript piece
	retryNoteSlack = 160  // room for the note added to a retried request
)

// summarize folds the rounds [foldStart, keepFrom) and the previous summary
// into a new summary. A reply that is malformed, empty or over budget is
// retried once with a note saying what was wrong; a second failure returns
// an error wrapping ErrSummary and leaves the rounds foldable.
func (w *Window) summarize(ctx context.Context, f *fitting, reason string) error {
	if w.summaries > 0 && w.appendedSince == 0 {
		return fmt.Errorf("%w: a summary was needed (%s) but no message was added since the previous summary", ErrNoProgress, reason)
	}
	from, to := w.foldStart, w.keepFrom()
	before := f.calibrated()
	msgs, folded, err := w.summaryRequest(from, to)
	if err != nil {
		w.turnsSince, w.carry = 0, 0
		f.emit(Event{Kind: EventSummaryFailed, Reason: reason, TokensBefore: before, TokensAfter: before, Error: err.Error()})
		return err
	}
	var lastErr error
	for attempt := 1; attempt <= 2; attempt++ {
		req := llm.Request{Agent: AgentName, Messages: msgs, Output: SummarySchema(), MaxTokens: w.cfg.SummaryMaxTokens}
		resp, err := w.cfg.Summarizer.Complete(ctx, req)
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		var s Summary
		if err != nil {
			err = fmt.Errorf("summarizer model: %w", err)
		} else {
			s, err = DecodeSummary(resp.Message.Content)
		}
		if err == nil {
			s.UnresolvedErrors = w.filterModelErrors(s.UnresolvedErrors)
			if n := w.summaryTokens(s); n > w.cfg.SummaryMaxTokens {
				err = fmt.Errorf("summary is %d tokens, over its budget of %d", n, w.cfg.SummaryMaxTokens)
			}
		}
		if err != nil {
			lastErr = err
			f.emit(Event{Kind: EventSummaryRejected, Reason: reason, TokensBefore: before, TokensAfter: before,
				Attempt: attempt, Usage: resp.Usage, Error: err.Error()})
			msgs = append(msgs[:2:2], llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf(
				"Your previous reply was rejected: %s. Reply again with only the JSON object of the schema, "+
					"every field present, under %d tokens.", truncateUTF8(err.Error(), 300), w.cfg.SummaryMaxTokens)})
			continue
		}

		prev := w.summary
		w.summary = &s
		w.summaries++
		if prev != nil && s.sameProgress(*prev) {
			w.stalls++
		} else {
			w.stalls = 0
		}
		w.foldStart = to
		w.viewStart = max(w.viewStart, to)
		w.maskNext = max(w.maskNext, to)
		w.turnsSince, w.appendedSince, w.carry = 0, 0, 0
		w.hidden, w.refDirty, w.errsDirty = true, true, true
		cp := s
		f.emit(Event{Kind: EventSummary, Reason: reason, TokensBefore: before, TokensAfter: f.calibrated(),
			Messages: folded, Attempt: attempt, Usage: resp.Usage, Summary: &cp})
		if w.stalls >= maxStalls {
			return fmt.Errorf("%w: %d summaries in a row recorded the same progress, completed steps, files and next steps",
				ErrNoProgress, w.stalls+1)
		}
		return nil
	}
	// Do not ask again on every turn: wait for the next SummaryEvery turns
	// (or as much carrying cost, or the next budget overflow). The rounds
	// stay foldable.
	w.turnsSince, w.carry = 0, 0
	f.emit(Event{Kind: EventSummaryFailed, Reason: reason, TokensBefore: before, TokensAfter: before, Error: lastErr.Error()})
	return fmt.Errorf("%w: summary reply rejected twice: %w", ErrSummary, lastErr)
}

// maxStalls is how many summaries in a row may repeat the previous one's
// progress before the window stops with ErrNoProgress.
const maxStalls = 2

// summaryTokens is the size of a summary as the window renders it (the
// model's part: the tracked errors are the window's own).
func (w *Window) summaryTokens(s Summary) int {
	var b strings.Builder
	s.renderBody(&b)
	renderErrors(&b, s.UnresolvedErrors)
	return w.counter.Count(b.String())
}

// piece is one history message as the summarizer sees it. Its stub is
// built only when the transcript must shrink.
type piece struct {
	e                *entry
	full, stub       string
	fullTok, stubTok int
	useStub          bool
}

func (p *piece) tok() int {
	if p.useStub {
		return p.stubTok
	}
	return p.fullTok
}

// summaryRequest builds the summarizer's messages for rounds [from, to):
// its system prompt, then the previous summary, the tracked errors and a
// transcript that fits the context limit minus the summary's reply cap.
// Long messages are cut to head and tail; if that is not enough, the oldest
// messages are given as their masked stubs, then left out (they stay in the
// trace). It reports how many messages the summary folds.
func (w *Window) summaryRequest(from, to int) ([]llm.Message, int, error) {
	system := llm.Message{Role: llm.RoleSystem, Content: strings.TrimSpace(summarizerPrompt)}

	var head strings.Builder
	fmt.Fprintf(&head, "Token limit for your reply: %d tokens.\n\n## Previous summary\n", w.cfg.SummaryMaxTokens)
	if w.summary != nil {
		b, _ := json.MarshalIndent(w.summary, "", "  ")
		head.Write(b)
	} else {
		head.WriteString("none")
	}
	head.WriteString("\n\n## Errors tracked as unresolved (copy each verbatim into unresolved_errors unless the transcript shows it fixed)\n")
	if len(w.errs.open) == 0 {
		head.WriteString("none\n")
	}
	for _, e := range w.errs.open {
		head.WriteString("- ")
		head.WriteString(e)
		head.WriteString("\n")
	}

	ratio := w.counter.Ratio() * (1 + w.margin)
	allowed := int(math.Floor(float64(w.cfg.ContextLimit-w.cfg.SummaryMaxTokens) / ratio))
	fixed := tokensReplyPrimed + w.counter.CountMessage(system) + tokensPerMessage + 1 +
		w.counter.Count(head.String()) + retryNoteSlack + 2*pieceSlack +
		w.schemaPromptTokens()
	avail := allowed - fixed
	if avail <= 0 {
		return nil, 0, fmt.Errorf("%w: the summarizer's prompt, previous summary and tracked errors alone need %d tokens, more than the %d allowed",
			ErrSummary, fixed, allowed)
	}

	var ps []piece
	total := 0
	folded := 0
	if from < to {
		for i := w.starts[from]; i < w.roundEnd(to-1); i++ {
			p := w.piece(&w.log[i])
			ps = append(ps, p)
			total += p.tok()
			folded++
		}
	}
	for i := 0; total > avail && i < len(ps); i++ {
		w.pieceStub(&ps[i])
		if ps[i].stubTok < ps[i].fullTok {
			total += ps[i].stubTok - ps[i].fullTok
			ps[i].useStub = true
		}
	}
	omitted := 0
	for total > avail && omitted < len(ps) {
		total -= ps[omitted].tok()
		omitted++
	}

	var b strings.Builder
	b.WriteString(head.String())
	fmt.Fprintf(&b, "\n## Transcript of the turns to fold (%d messages", len(ps)-omitted)
	if omitted > 0 {
		fmt.Fprintf(&b, "; the %d oldest were left out for length and remain in the trace", omitted)
	}
	b.WriteString(")\n")
	for _, p := range ps[omitted:] {
		b.WriteString("\n")
		if p.useStub {
			b.WriteString(p.stub)
		} else {
			b.WriteString(p.full)
		}
		b.WriteString("\n")
	}
	return []llm.Message{system, {Role: llm.RoleUser, Content: b.String()}}, folded, nil
}

// piece renders one message for the transcript, with a conservative token
// estimate that reuses the message's cached count when it is not cut.
func (w *Window) piece(e *entry) piece {
	full, cut := renderPiece(e.msg)
	p := piece{e: e, full: full, fullTok: e.tokens + pieceSlack}
	if cut {
		p.fullTok = w.counter.Count(full) + pieceSlack
	}
	return p
}

// pieceStub fills in the masked form of a piece (the full form when the
// message has nothing to mask).
func (w *Window) pieceStub(p *piece) {
	if p.stub != "" {
		return
	}
	stub, ok := p.e.stub, p.e.masked
	if !ok {
		stub, ok = w.stubFor(p.e)
	}
	if !ok {
		p.stub, p.stubTok = p.full, p.fullTok
		return
	}
	p.stub, _ = renderPiece(stub)
	p.stubTok = w.counter.CountMessage(stub) + pieceSlack
}

// renderPiece writes a message as transcript text, cutting long contents
// and arguments to head and tail; it reports whether it cut anything.
func renderPiece(m llm.Message) (string, bool) {
	var b strings.Builder
	switch m.Role {
	case llm.RoleTool:
		name := m.Name
		if name == "" {
			name = "tool"
		}
		fmt.Fprintf(&b, "[tool result: %s]\n", name)
	default:
		fmt.Fprintf(&b, "[%s]\n", m.Role)
	}
	c, cut := headTail(m.Content)
	b.WriteString(c)
	for _, tc := range m.ToolCalls {
		a, c2 := headTail(tc.Arguments)
		cut = cut || c2
		fmt.Fprintf(&b, "\n-> call %s %s", tc.Name, a)
	}
	return b.String(), cut
}

// headTail cuts s to its first and last maxPieceBytes/2 bytes.
func headTail(s string) (string, bool) {
	if len(s) <= maxPieceBytes {
		return s, false
	}
	h := truncateUTF8(s, maxPieceBytes/2)
	t := len(s) - maxPieceBytes/2
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	return fmt.Sprintf("%s\n[... %d bytes omitted ...]\n%s", h, t-len(h), s[t:]), true
}

// schemaPromptTokens is the size of the schema instruction a provider
// without structured outputs adds to the prompt; counted once per window.
func (w *Window) schemaPromptTokens() int {
	if w.schemaTok == 0 {
		w.schemaTok = w.counter.Count(llm.SchemaPrompt(SummarySchema()))
	}
	return w.schemaTok
}
