package summarizer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/trioagent/trio/llm"
)

// Defaults of Config.
const (
	// DefaultSummaryEvery is the usual count of a fixed cadence, the
	// default before the cost-driven cadence replaced it (BenchmarkLongRun
	// compares the two).
	DefaultSummaryEvery = 8
	// CostDriven, as Config.SummaryEvery, selects the cost-driven cadence,
	// the default.
	CostDriven        = -1
	DefaultKeepRounds = 2
	DefaultMargin     = 0.05
	DefaultMaxErrors  = 40
)

// maskArgsBytes is the size above which an old tool call's arguments (a
// whole file for write_file) are masked along with the outputs.
const maskArgsBytes = 1024

// Config configures a Window. Zero values take the documented defaults.
type Config struct {
	// Model names the model whose tokenizer is approximated (EncodingFor).
	// Ignored when Counter is set.
	Model string
	// Counter, when set, is shared with other windows of the same model so
	// that calibration carries over.
	Counter *Counter
	// ContextLimit is the model's context window in tokens. Required.
	ContextLimit int
	// ReplyReserve is kept free for the reply. Default: min(4096, limit/4).
	ReplyReserve int
	// SummaryEvery chooses when old rounds are summarized although the
	// budget does not force it. A positive value is a fixed cadence: every
	// that many Worker turns (assistant messages). CostDriven decides from
	// the prices instead (Price, SummaryPrice; cadence.go): summarize once
	// carrying the unsummarized rounds at the cached input price has cost
	// more than a summary; it is the default (0). A positive value wins
	// over the prices; the budget forces masking and a summary under
	// either cadence.
	SummaryEvery int
	// Price is the Worker model's price, which the cost-driven cadence
	// weighs (only the ratios matter). Nil: DefaultPrice.
	Price *llm.Price
	// SummaryPrice is the summarizer model's price. Nil: Price.
	SummaryPrice *llm.Price
	// KeepRounds is the number of latest rounds never masked or summarized
	// in normal operation. Default 2.
	KeepRounds int
	// SummaryMaxTokens caps the summary (the reply of the summarizer model
	// and the summary as rendered). Default: min(2048, budget/8).
	SummaryMaxTokens int
	// Margin is added on top of the calibrated estimate: 0 means 5 %, a
	// negative value means none.
	Margin float64
	// MaxErrors caps the tracked unresolved error texts; the oldest go
	// first. Default 40.
	MaxErrors int
	// Summarizer writes the structured summaries; it is called with
	// Request.Agent "summarizer". Without it the window only masks.
	Summarizer llm.Model
	// OnEvent receives every masking and summary event, after the window's
	// lock is released (so it may call the window). Optional.
	OnEvent func(Event)
	// TraceRef returns the pointer text put in a masked output's stub for the
	// message at msgIndex (the 0-based order of messages given to Append).
	// Default: "trace.jsonl, history message <msgIndex>".
	TraceRef func(msgIndex int) string
}

// EventKind names what the window did.
type EventKind string

// The events a Window reports.
const (
	EventMask            EventKind = "mask"             // old tool outputs replaced by stubs
	EventMaskHard        EventKind = "mask_hard"        // every output but the last round's masked
	EventDrop            EventKind = "drop"             // rounds before the last one left out of the view
	EventMaskLast        EventKind = "mask_last"        // even the last round's outputs masked
	EventSummary         EventKind = "summary"          // old rounds folded into a summary
	EventSummaryRejected EventKind = "summary_rejected" // one summary reply rejected
	EventSummaryFailed   EventKind = "summary_failed"   // both attempts rejected
)

// Event is one masking or summary step, for the run's trace. Token figures
// are calibrated estimates of the request (messages and tool definitions),
// comparable with Budget, the limit minus the reply reserve.
type Event struct {
	Kind         EventKind `json:"kind"`
	Reason       string    `json:"reason"`
	TokensBefore int       `json:"tokens_before"`
	TokensAfter  int       `json:"tokens_after"`
	Budget       int       `json:"budget"`
	// Messages is how many history messages were masked, dropped from the
	// view or folded into the summary.
	Messages int `json:"messages,omitempty"`
	// Attempt numbers summary replies (1 or 2).
	Attempt int `json:"attempt,omitempty"`
	// Usage is the summarizer call's token usage (summary events).
	Usage   llm.Usage `json:"usage,omitzero"`
	Error   string    `json:"error,omitempty"`
	Summary *Summary  `json:"summary,omitempty"`
}

type entry struct {
	msg     llm.Message
	index   int
	tokens  int
	masked  bool
	stub    llm.Message
	stubTok int
}

func (e *entry) cost() int {
	if e.masked {
		return e.stubTok
	}
	return e.tokens
}

func (e *entry) sent() llm.Message {
	if e.masked {
		return e.stub
	}
	return e.msg
}

// Window is a token-budgeted chat history. The full history is kept in its
// log; Messages returns the fitted view. Rounds are inferred: a round is the
// user messages before an assistant message, the assistant message, and the
// tool results after it; every assistant message counts as one Worker turn,
// so no explicit turn marker is needed. Tool results must follow the
// assistant message that called them.
//
// A Window is safe for concurrent use; Messages holds its lock while the
// summarizer model runs.
type Window struct {
	cfg     Config
	counter *Counter
	budget  int // ContextLimit - ReplyReserve, in calibrated tokens
	margin  float64

	mu sync.Mutex

	pinned    []llm.Message
	pinnedTok int

	log    []entry
	starts []int // log index where each round begins
	roundA []bool

	viewStart int // first round in the view
	foldStart int // first round not yet covered by a summary
	maskNext  int // rounds before this one are masked

	failing    string
	failingMsg llm.Message
	failingTok int
	errs       errorSet

	summary   *Summary
	summaries int
	stalls    int
	hidden    bool // something was masked, dropped or summarized

	// The reference (the summary) sits right after the pinned messages and
	// changes only when a summary is made; the tracked errors and the
	// failing output change at any time, so they come last (see layout).
	refDirty bool
	refMsg   *llm.Message
	refTok   int

	errsDirty bool
	errsMsg   *llm.Message
	errsTok   int

	turnsSince    int     // assistant messages since the last summary
	appendedSince int     // messages since the last summary
	carry         float64 // cost of carrying foldable rounds since the last summary (cadence.go)
	sysTok        int     // the summarizer's system prompt, counted once

	lastEstimate int
	lastLen      int
	lastStable   int
	schemaTok    int

	// tools is the count of the latest tool definitions, reused while the
	// caller sends the same ones (every Worker turn does).
}

// NewWindow validates cfg, fills in its defaults and loads the tokenizer.
func NewWindow(cfg Config) (*Window, error) {
	if cfg.ContextLimit <= 0 {
		return nil, fmt.Errorf("summarizer: ContextLimit must be positive, got %d", cfg.ContextLimit)
	}
	if cfg.ReplyReserve == 0 {
		cfg.ReplyReserve = min(4096, cfg.ContextLimit/4)
	}
	if cfg.ReplyReserve < 0 || cfg.ReplyReserve >= cfg.ContextLimit {
		return nil, fmt.Errorf("summarizer: ReplyReserve %d must be in [0, ContextLimit %d)", cfg.ReplyReserve, cfg.ContextLimit)
	}
	budget := cfg.ContextLimit - cfg.ReplyReserve
	if budget < 256 {
		return nil, fmt.Errorf("summarizer: ContextLimit %d minus ReplyReserve %d leaves %d tokens, need at least 256",
			cfg.ContextLimit, cfg.ReplyReserve, budget)
	}
	if cfg.SummaryEvery == 0 {
		cfg.SummaryEvery = CostDriven
	}
	if cfg.KeepRounds == 0 {
		cfg.KeepRounds = DefaultKeepRounds
	}
	if (cfg.SummaryEvery < 0 && cfg.SummaryEvery != CostDriven) || cfg.KeepRounds < 1 {
		return nil, fmt.Errorf("summarizer: SummaryEvery %d must be positive or CostDriven (%d) and KeepRounds %d at least 1",
			cfg.SummaryEvery, CostDriven, cfg.KeepRounds)
	}
	for _, p := range []struct {
		name string
		p    *llm.Price
	}{{"Price", cfg.Price}, {"SummaryPrice", cfg.SummaryPrice}} {
		if p.p != nil && !validPrice(*p.p) {
			return nil, fmt.Errorf("summarizer: %s %+v: every price must be a finite number, not negative", p.name, *p.p)
		}
	}
	if cfg.SummaryMaxTokens == 0 {
		cfg.SummaryMaxTokens = min(2048, budget/8)
	}
	if cfg.SummaryMaxTokens < 0 || cfg.SummaryMaxTokens >= budget/2 {
		return nil, fmt.Errorf("summarizer: SummaryMaxTokens %d must be positive and under half the budget %d", cfg.SummaryMaxTokens, budget)
	}
	margin := cfg.Margin
	switch {
	case margin == 0:
		margin = DefaultMargin
	case margin < 0:
		margin = 0
	}
	if cfg.MaxErrors == 0 {
		cfg.MaxErrors = DefaultMaxErrors
	}
	c := cfg.Counter
	if c == nil {
		var err error
		if c, err = NewCounter(cfg.Model); err != nil {
			return nil, fmt.Errorf("summarizer: %w", err)
		}
	}
	return &Window{cfg: cfg, counter: c, budget: budget, margin: margin, errs: errorSet{limit: cfg.MaxErrors}}, nil
}

// Counter is the window's token counter.
func (w *Window) Counter() *Counter { return w.counter }

// Budget is the number of (calibrated) tokens a request may use: the
// context limit minus the reply reserve.
func (w *Window) Budget() int { return w.budget }

// Pin adds messages that are always sent first, in order (system prompt,
// goal, plan).
func (w *Window) Pin(msgs ...llm.Message) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range msgs {
		w.pinned = append(w.pinned, m)
		w.pinnedTok += w.counter.CountMessage(m)
	}
}

// SetPinned replaces every pinned message (a new plan, the current step).
func (w *Window) SetPinned(msgs ...llm.Message) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pinned = append([]llm.Message(nil), msgs...)
	w.pinnedTok = 0
	for _, m := range msgs {
		w.pinnedTok += w.counter.CountMessage(m)
	}
}

// Append adds messages to the history. Each is counted once, here.
func (w *Window) Append(msgs ...llm.Message) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range msgs {
		idx := len(w.log)
		cur := len(w.starts) - 1
		switch m.Role {
		case llm.RoleAssistant:
			if cur >= 0 && !w.roundA[cur] {
				w.roundA[cur] = true
			} else {
				w.newRound(idx, true)
			}
			w.turnsSince++
		case llm.RoleTool:
			if cur < 0 {
				w.newRound(idx, false)
			}
		default:
			if cur < 0 || w.roundA[cur] {
				w.newRound(idx, false)
			}
		}
		w.log = append(w.log, entry{msg: m, index: idx, tokens: w.counter.CountMessage(m)})
		w.appendedSince++
	}
}

func (w *Window) newRound(start int, assistant bool) {
	w.starts = append(w.starts, start)
	w.roundA = append(w.roundA, assistant)
}

// Len is the number of messages appended so far (the whole log).
func (w *Window) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.log)
}

// History returns a copy of every appended message, unmasked.
func (w *Window) History() []llm.Message {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]llm.Message, len(w.log))
	for i := range w.log {
		out[i] = w.log[i].msg
	}
	return out
}

// Summary returns the current summary, if one was made.
func (w *Window) Summary() (Summary, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.summary == nil {
		return Summary{}, false
	}
	return *w.summary, true
}

// SetFailing records the current step's latest failing output. It is sent
// verbatim on every request (unless the same text is already visible in the
// view) and its error lines (ExtractErrors) join the tracked unresolved
// errors. SetFailing("") says the step's checks pass: the failing output is
// cleared and every tracked error is resolved.
func (w *Window) SetFailing(text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errsDirty = true
	if strings.TrimSpace(text) == "" {
		w.failing, w.failingTok = "", 0
		w.errs.resolveAll()
		if w.summary != nil {
			for _, e := range w.summary.UnresolvedErrors {
				w.errs.remember(e)
			}
			w.summary.UnresolvedErrors = nil
		}
		return
	}
	w.failing = text
	w.failingMsg = llm.Message{Role: llm.RoleUser, Content: failingHeader + "\n" + text}
	w.failingTok = w.counter.CountMessage(w.failingMsg)
	w.errs.add(ExtractErrors(text)...)
}

const failingHeader = "Latest failing output of the current step (verbatim; still to fix):"

// TrackError adds error texts (a compiler line, a failing test name, a
// critic finding) to the unresolved set, kept verbatim until resolved.
func (w *Window) TrackError(texts ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.errs.add(texts...) {
		w.errsDirty = true
	}
}

// Resolve drops tracked errors equal to or containing text (a test name
// resolves every line that mentions it), also from the summary, and reports
// how many tracked texts were dropped.
func (w *Window) Resolve(text string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.errs.resolve(text)
	if w.summary != nil {
		w.summary.UnresolvedErrors = w.filterModelErrors(w.summary.UnresolvedErrors)
	}
	w.errsDirty = true
	return n
}

// Unresolved lists the open error texts: the tracked ones, then those only
// the summary reported.
func (w *Window) Unresolved() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := append([]string(nil), w.errs.open...)
	if w.summary != nil {
		out = append(out, w.summary.UnresolvedErrors...)
	}
	return out
}

// Observe calibrates the counter with the usage the endpoint reported for
// the request built from the last Messages call; sent is the number of
// messages that request carried (len of what Messages returned). If the
// caller changed the messages in between, the pair does not match and the
// sample is skipped.
func (w *Window) Observe(u llm.Usage, sent int) {
	w.mu.Lock()
	est, n := w.lastEstimate, w.lastLen
	w.mu.Unlock()
	if sent != n || est <= 0 {
		return
	}
	w.counter.Observe(est, u.PromptTokens)
}

// Messages returns the history fitted to the budget together with tools:
// calibrated(messages + tools) ≤ ContextLimit - ReplyReserve, or an error
// wrapping ErrBudget, ErrNoProgress or ErrSummary with the reason. It
// summarizes when the cadence says so (SummaryEvery turns, or the
// cost-driven rule of cadence.go), masks old tool outputs when the request
// does not fit, and summarizes when masking is not enough.
func (w *Window) Messages(ctx context.Context, tools []llm.ToolDef) ([]llm.Message, error) {
	var events []Event
	defer func() {
		if w.cfg.OnEvent != nil {
			for _, e := range events {
				w.cfg.OnEvent(e)
			}
		}
	}()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f := &fitting{w: w, toolsTok: w.counter.CountTools(tools), events: &events}

	summarized := false
	var sumErr error
	reason := ""
	switch {
	case w.cfg.Summarizer == nil || !w.foldable():
	case w.costCadence():
		reason = w.chargeCarry(f)
	case w.turnsSince >= w.cfg.SummaryEvery:
		reason = fmt.Sprintf("%d worker turns since the last summary", w.turnsSince)
	}
	if reason != "" {
		if err := w.summarize(ctx, f, reason); err != nil {
			if !errors.Is(err, ErrSummary) {
				return nil, err
			}
			sumErr = err
		} else {
			summarized = true
		}
	}
	if !f.fits() {
		w.maskOld(f)
	}
	if !f.fits() && w.cfg.Summarizer != nil && !summarized && sumErr == nil && w.foldable() {
		if err := w.summarize(ctx, f, "masking old tool outputs was not enough"); err != nil {
			if !errors.Is(err, ErrSummary) {
				return nil, err
			}
			sumErr = err
		} else {
			summarized = true
			w.maskOld(f)
		}
	}
	why := ""
	if !f.fits() {
		why = "masking old tool outputs was not enough and there is no summarizer"
		switch {
		case sumErr != nil:
			why = sumErr.Error()
		case w.cfg.Summarizer != nil && summarized:
			why = "the summary did not bring the window under budget"
		case w.cfg.Summarizer != nil:
			why = "masking old tool outputs was not enough and there was nothing left to summarize"
		}
		w.maskHarder(f, why)
	}
	if est := f.calibrated(); est > w.budget {
		if sumErr != nil {
			return nil, fmt.Errorf("%w: %s (after %w)", ErrBudget, w.budgetReason(f, est), sumErr)
		}
		return nil, fmt.Errorf("%w: %s, even after masking every output: %s", ErrBudget, why, w.budgetReason(f, est))
	}
	msgs, est, stable := w.layout(true)
	w.lastEstimate, w.lastLen, w.lastStable = est+f.toolsTok, len(msgs), stable
	return msgs, nil
}

// StablePrefix is the number of leading messages of the view the last
// Messages call returned that form its stable prefix: everything before
// the volatile tail (tracked errors, failing output). Until the next
// summary or masking batch the next view starts with the same messages, so
// a provider that places cache breakpoints (llm.Request.CachePrefix) puts
// the last one at the end of this prefix.
func (w *Window) StablePrefix() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastStable
}

// toolsMemo caches the token count of one list of tool definitions, keyed
// by a cheap identity of each definition — its name, description and
// parameters bytes (by reference) — so that a turn costs a few string
// comparisons instead of encoding every definition to JSON. Definitions
// rebuilt with other values are counted again.
type toolsMemo struct {
	keys []toolKey
	tok  int
	set  bool
}

type toolKey struct {
	name, desc string
	params     *byte
	n          int
}

func keyOf(d *llm.ToolDef) toolKey {
	return toolKey{name: d.Name, desc: d.Description, params: unsafe.SliceData(d.Parameters), n: len(d.Parameters)}
}

func (m *toolsMemo) count(c *Counter, defs []llm.ToolDef) int {
	if m.set && len(m.keys) == len(defs) {
		same := true
		for i := range defs {
			if keyOf(&defs[i]) != m.keys[i] {
				same = false
				break
			}
		}
		if same {
			return m.tok
		}
	}
	m.tok = c.countTools(defs)
	m.keys, m.set = m.keys[:0], true
	for i := range defs {
		m.keys = append(m.keys, keyOf(&defs[i]))
	}
	return m.tok
}

// fitting carries the per-call state of Messages.
type fitting struct {
	w        *Window
	toolsTok int
	events   *[]Event
}

func (f *fitting) raw() int {
	_, n, _ := f.w.layout(false)
	return n + f.toolsTok
}

func (f *fitting) calibrated() int { return f.w.counter.Calibrated(f.raw(), f.w.margin) }

func (f *fitting) fits() bool { return f.calibrated() <= f.w.budget }

func (f *fitting) emit(e Event) {
	e.Budget = f.w.budget
	*f.events = append(*f.events, e)
}

// keepFrom is the first round protected by KeepRounds.
func (w *Window) keepFrom() int { return max(len(w.starts)-w.cfg.KeepRounds, 0) }

// foldable reports whether rounds older than the kept ones await a summary.
func (w *Window) foldable() bool { return w.foldStart < w.keepFrom() }

func (w *Window) roundEnd(r int) int {
	if r+1 < len(w.starts) {
		return w.starts[r+1]
	}
	return len(w.log)
}

// maskOld masks every round before the kept ones, in one batch. Masking
// only as many rounds as the request needs would change the view one round
// per turn, and each change invalidates a provider's cached prefix from
// that round on; a batch changes it once and leaves room for the next
// turns to extend the view unchanged.
func (w *Window) maskOld(f *fitting) {
	before := f.calibrated()
	n := 0
	for w.maskNext = max(w.maskNext, w.viewStart); w.maskNext < w.keepFrom(); w.maskNext++ {
		n += w.maskRound(w.maskNext)
	}
	if n > 0 {
		f.emit(Event{Kind: EventMask, Reason: "over budget", TokensBefore: before, TokensAfter: f.calibrated(), Messages: n})
	}
}

// maskHarder is the last resort before ErrBudget: mask every output but the
// last round's, then leave every round but the last out of the view (they
// remain in the log and are folded by the next summary), then mask the last
// round's outputs too.
func (w *Window) maskHarder(f *fitting, why string) {
	last := len(w.starts) - 1
	if last < 0 {
		return
	}
	before := f.calibrated()
	n := 0
	for w.maskNext = max(w.maskNext, w.viewStart); w.maskNext < last; w.maskNext++ {
		n += w.maskRound(w.maskNext)
	}
	if n > 0 {
		f.emit(Event{Kind: EventMaskHard, Reason: why, TokensBefore: before, TokensAfter: f.calibrated(), Messages: n})
	}
	if f.fits() {
		return
	}
	if w.viewStart < last {
		before = f.calibrated()
		dropped := w.starts[last] - w.starts[w.viewStart]
		w.viewStart = last
		w.hidden, w.errsDirty = true, true
		f.emit(Event{Kind: EventDrop, Reason: why, TokensBefore: before, TokensAfter: f.calibrated(), Messages: dropped})
		if f.fits() {
			return
		}
	}
	before = f.calibrated()
	if n := w.maskRound(last); n > 0 {
		f.emit(Event{Kind: EventMaskLast, Reason: why, TokensBefore: before, TokensAfter: f.calibrated(), Messages: n})
	}
}

// maskRound stubs the tool outputs and large tool-call arguments of round r
// and reports how many messages changed.
func (w *Window) maskRound(r int) int {
	n := 0
	for i := w.starts[r]; i < w.roundEnd(r); i++ {
		e := &w.log[i]
		if e.masked {
			continue
		}
		stub, ok := w.stubFor(e)
		if !ok {
			continue
		}
		e.masked, e.stub, e.stubTok = true, stub, w.counter.CountMessage(stub)
		n++
	}
	if n > 0 {
		w.hidden, w.errsDirty = true, true
	}
	return n
}

func (w *Window) traceRef(i int) string {
	if w.cfg.TraceRef != nil {
		return w.cfg.TraceRef(i)
	}
	return fmt.Sprintf("trace.jsonl, history message %d", i)
}

// stubFor builds the masked form of a message: a tool result becomes one
// line naming the tool, its size, its first line and where the full text
// is; an assistant message keeps its calls but large arguments are replaced
// by a JSON object with the same pointer.
func (w *Window) stubFor(e *entry) (llm.Message, bool) {
	m := e.msg
	switch m.Role {
	case llm.RoleTool:
		name := m.Name
		if name == "" {
			name = "tool"
		}
		first := firstLine(m.Content)
		if len(first) > 120 {
			first = truncateUTF8(first, 120) + "…"
		}
		m.Content = fmt.Sprintf("[output of %s masked to save context: %d lines, %d bytes; first line: %q; full output: %s]",
			name, strings.Count(m.Content, "\n")+1, len(m.Content), first, w.traceRef(e.index))
		return m, len(m.Content) < len(e.msg.Content)
	case llm.RoleAssistant:
		changed := false
		calls := make([]llm.ToolCall, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			if len(tc.Arguments) > maskArgsBytes {
				tc.Arguments = fmt.Sprintf(`{"masked":%q}`, fmt.Sprintf(
					"%d bytes of arguments omitted to save context; full call: %s", len(tc.Arguments), w.traceRef(e.index)))
				changed = true
			}
			calls[i] = tc
		}
		m.ToolCalls = calls
		return m, changed
	}
	return m, false
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// layout computes the view (when build is set), its raw token estimate
// and the length of its stable prefix: pinned, reference (the summary),
// rounds, then the volatile tail — tracked errors and failing output.
//
// The order is what makes provider prompt caches work: between two
// summaries (and two masking batches) each view extends the previous one
// except for the tail, which is rebuilt on every request, so only the tail
// and the new round are not served from the cache. The stable prefix is
// every message before the tail.
func (w *Window) layout(build bool) ([]llm.Message, int, int) {
	var out []llm.Message
	n := tokensReplyPrimed + w.pinnedTok
	stable := len(w.pinned)
	if build {
		out = append(out, w.pinned...)
	}
	if ref := w.reference(); ref != nil {
		n += w.refTok
		stable++
		if build {
			out = append(out, *ref)
		}
	}
	if w.viewStart < len(w.starts) {
		for i := w.starts[w.viewStart]; i < len(w.log); i++ {
			e := &w.log[i]
			n += e.cost()
			stable++
			if build {
				out = append(out, e.sent())
			}
		}
	}
	if em := w.errorsMessage(); em != nil {
		n += w.errsTok
		if build {
			out = append(out, *em)
		}
	}
	if w.failing != "" && !w.failingVisible() {
		n += w.failingTok
		if build {
			out = append(out, w.failingMsg)
		}
	}
	return out, n, stable
}

// failingVisible reports whether the failing output already appears
// verbatim in an unmasked message of the view, so it need not be repeated.
func (w *Window) failingVisible() bool {
	if w.viewStart >= len(w.starts) {
		return false
	}
	for i := len(w.log) - 1; i >= w.starts[w.viewStart]; i-- {
		e := &w.log[i]
		if !e.masked && e.msg.Role != llm.RoleAssistant && strings.Contains(e.msg.Content, w.failing) {
			return true
		}
	}
	return false
}

// reference returns the message carrying the summary, rebuilding it when a
// summary was made. It exists once a summary exists. The summary's error
// list is not part of it: errors are resolved at any time, so they travel
// in the tail (errorsMessage).
func (w *Window) reference() *llm.Message {
	if !w.refDirty {
		return w.refMsg
	}
	w.refDirty = false
	w.refMsg, w.refTok = nil, 0
	if w.summary == nil {
		return nil
	}
	var b strings.Builder
	b.WriteString(strings.TrimSpace(referenceHeader))
	b.WriteString("\n")
	w.summary.renderBody(&b)
	m := llm.Message{Role: llm.RoleUser, Content: b.String()}
	w.refMsg, w.refTok = &m, w.counter.CountMessage(m)
	return w.refMsg
}

// errorsMessage returns the message listing the unresolved errors verbatim,
// rebuilding it when they changed. It exists once a summary exists or
// something was hidden, while errors are open: before that every error is
// still visible in the history itself.
func (w *Window) errorsMessage() *llm.Message {
	if !w.errsDirty {
		return w.errsMsg
	}
	w.errsDirty = false
	w.errsMsg, w.errsTok = nil, 0
	errs := w.visibleErrors()
	if len(errs) == 0 || (w.summary == nil && !w.hidden) {
		return nil
	}
	var b strings.Builder
	b.WriteString(errorsHeader)
	renderErrors(&b, errs)
	m := llm.Message{Role: llm.RoleUser, Content: b.String()}
	w.errsMsg, w.errsTok = &m, w.counter.CountMessage(m)
	return w.errsMsg
}

const errorsHeader = "Errors of this run still unresolved, tracked by the agent (reference, not a new instruction):"

// visibleErrors are the tracked errors not already inside the failing
// output (which is sent verbatim anyway), then the summary's extra ones.
func (w *Window) visibleErrors() []string {
	var out []string
	for _, e := range w.errs.open {
		if w.failing == "" || !strings.Contains(w.failing, e) {
			out = append(out, e)
		}
	}
	if w.summary != nil {
		out = append(out, w.summary.UnresolvedErrors...)
	}
	return out
}

// filterModelErrors drops a summary's error texts that are tracked already
// (they are rendered from the tracked set) or were resolved.
func (w *Window) filterModelErrors(in []string) []string {
	var out []string
	for _, e := range in {
		e = strings.TrimSpace(e)
		if e == "" || w.errs.isResolved(e) {
			continue
		}
		dup := false
		for _, t := range w.errs.open {
			if t == e || strings.Contains(t, e) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, e)
		}
	}
	return out
}

func (w *Window) budgetReason(f *fitting, est int) string {
	last := 0
	if n := len(w.starts); n > 0 {
		for i := w.starts[n-1]; i < len(w.log); i++ {
			last += w.log[i].cost()
		}
	}
	failing := 0
	if w.failing != "" {
		failing = w.failingTok
	}
	return fmt.Sprintf("request needs %d tokens (calibrated, ratio %.2f, margin %.0f%%) but the budget is %d (limit %d - reply reserve %d): "+
		"pinned %d, summary and errors %d, failing output %d, last round %d, tool definitions %d",
		est, w.counter.Ratio(), w.margin*100, w.budget, w.cfg.ContextLimit, w.cfg.ReplyReserve,
		w.pinnedTok, w.refTok+w.errsTok, failing, last, f.toolsTok)
}
