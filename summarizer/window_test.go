package summarizer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/summarizer"
)

// eventLog collects a window's events.
type eventLog struct {
	mu  sync.Mutex
	evs []summarizer.Event
}

func (l *eventLog) add(e summarizer.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, e)
}

func (l *eventLog) all() []summarizer.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]summarizer.Event(nil), l.evs...)
}

func (l *eventLog) has(k summarizer.EventKind) bool {
	for _, e := range l.all() {
		if e.Kind == k {
			return true
		}
	}
	return false
}

func newWindow(t *testing.T, cfg summarizer.Config, script ...replyFunc) (*summarizer.Window, *fakeSummarizer, *eventLog) {
	t.Helper()
	if cfg.Counter == nil {
		cfg.Counter = counter(t)
	}
	if cfg.ContextLimit == 0 {
		cfg.ContextLimit = 32000
	}
	fake := &fakeSummarizer{t: t, counter: cfg.Counter, limit: cfg.ContextLimit, script: script}
	if cfg.Summarizer == nil {
		cfg.Summarizer = fake
	}
	log := &eventLog{}
	cfg.OnEvent = log.add
	w, err := summarizer.NewWindow(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.Pin(sys, goal, plan)
	return w, fake, log
}

// assertFits checks the returned view against the budget with a fresh count.
func assertFits(t *testing.T, w *summarizer.Window, msgs []llm.Message) {
	t.Helper()
	c := w.Counter()
	n := c.Calibrated(c.CountMessages(msgs)+c.CountTools(testTools()), 0)
	if n > w.Budget() {
		t.Fatalf("view of %d tokens exceeds the budget %d", n, w.Budget())
	}
	checkStructure(t, msgs)
}

func TestSummaryKeepsGoalPlanErrorsAndFailingOutput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// The model drops one tracked error and paraphrases nothing else; it
	// also repeats an error the agent resolves later.
	stale := "--- FAIL: TestOld (0.00s)"
	careless := func(call int, req llm.Request) (string, error) {
		s := summarizer.Summary{Progress: fmt.Sprintf("summary %d", call), UnresolvedErrors: []string{stale, "some error the model saw"},
			CompletedSteps: []string{}, FilesChanged: []string{}, Decisions: []string{}, NextSteps: []string{"fix tests"}}
		b, _ := json.Marshal(s)
		return string(b), nil
	}
	w, fake, log := newWindow(t, summarizer.Config{SummaryEvery: 4}, careless, careless, careless)
	outputs := []string{codeText(1, 3000), codeText(2, 3000)}

	oldFailure := "=== RUN   TestOld\n" + stale + "\nFAIL\n"
	w.Append(turn(1, outputs)...)
	w.Append(llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "t2", Name: "run_tests", Arguments: "{}"}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "t2", Name: "run_tests", Content: oldFailure})
	w.SetFailing(oldFailure)
	critic := "critic: `calc --help` exits with status 2: flag provided but not defined: -help"
	w.TrackError(critic)
	current := failingOutput(7)
	w.Append(turn(3, outputs)...)
	w.Append(llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "t4", Name: "run_tests", Arguments: "{}"}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "t4", Name: "run_tests", Content: current})
	w.SetFailing(current)
	if n := w.Resolve("TestOld"); n != 1 {
		t.Fatalf("Resolve(TestOld) dropped %d tracked errors, want 1", n)
	}
	w.Append(turn(5, outputs)...)
	w.Append(turn(6, outputs)...)

	msgs, err := w.Messages(ctx, testTools())
	if err != nil {
		t.Fatal(err)
	}
	if !log.has(summarizer.EventSummary) || fake.numCalls() != 1 {
		t.Fatalf("want one summary after 4+ turns, events %v", kinds(log.all()))
	}
	assertFits(t, w, msgs)
	all := joined(msgs)
	for _, want := range []string{goal.Content, plan.Content, sys.Content, current, critic,
		"parser_test.go:17: Parse(\"1+7\") = 7, want 8", "--- FAIL: TestParse7 (0.00s)", "some error the model saw",
		summarizer.ReferenceHeader()} {
		if !strings.Contains(all, want) {
			t.Errorf("request after the summary lacks %q", want)
		}
	}
	if strings.Contains(all, "TestOld") {
		t.Errorf("request still contains the resolved error TestOld")
	}
	// The summarizer was given the tracked errors verbatim.
	in := fake.requests[0].Messages[1].Content
	tracked := in[strings.Index(in, "## Errors tracked"):strings.Index(in, "## Transcript")]
	if !strings.Contains(tracked, critic) || strings.Contains(tracked, stale) {
		t.Errorf("summarizer input lacks a tracked error or lists the resolved one as tracked:\n%s", tracked)
	}
	// Order: pinned first, then the reference message.
	if msgs[0].Content != sys.Content || msgs[1].Content != goal.Content || msgs[2].Content != plan.Content || !strings.HasPrefix(msgs[3].Content, summarizer.ReferenceHeader()) {
		t.Errorf("view does not start with the pinned messages and the summary: %q", msgs[3].Content)
	}

	// Tests pass: every error is resolved, the failing output leaves.
	w.SetFailing("")
	msgs, err = w.Messages(ctx, testTools())
	if err != nil {
		t.Fatal(err)
	}
	ref := msgs[3].Content
	for _, gone := range []string{critic, "some error the model saw", "Unresolved errors"} {
		if strings.Contains(ref, gone) {
			t.Errorf("after SetFailing(\"\") the summary still shows %q", gone)
		}
	}
	if got := w.Unresolved(); len(got) != 0 {
		t.Errorf("Unresolved() = %q after SetFailing(\"\")", got)
	}
}

func TestMaskingKeepsCallsAndPointsToTrace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, fake, log := newWindow(t, summarizer.Config{ContextLimit: 6000, ReplyReserve: 1000, SummaryEvery: 1000, Summarizer: nil,
		TraceRef: func(i int) string { return fmt.Sprintf("runs/r1/trace.jsonl#msg=%d", i) }})
	outputs := []string{codeText(1, 5000), codeText(2, 5000), codeText(3, 5000)}
	for i := range 6 {
		w.Append(turn(i, outputs)...)
	}
	msgs, err := w.Messages(ctx, testTools())
	if err != nil {
		t.Fatal(err)
	}
	assertFits(t, w, msgs)
	if !log.has(summarizer.EventMask) || log.has(summarizer.EventSummary) {
		t.Fatalf("want masking only, events %v", kinds(log.all()))
	}
	if fake.numCalls() != 0 {
		t.Fatalf("summarizer called %d times; masking was enough", fake.numCalls())
	}
	// History message 3 is turn 1's read_file output.
	var stub, args bool
	for _, m := range msgs {
		if m.Role == llm.RoleTool && strings.Contains(m.Content, "runs/r1/trace.jsonl#msg=3") {
			stub = strings.HasPrefix(m.Content, "[output of read_file masked") && !strings.Contains(m.Content, "\n") && m.ToolCallID == "call_1"
		}
		for _, tc := range m.ToolCalls {
			if tc.Name == "write_file" && strings.Contains(tc.Arguments, `"masked"`) {
				args = json.Valid([]byte(tc.Arguments)) && strings.Contains(tc.Arguments, "runs/r1/trace.jsonl#msg=0")
			}
		}
	}
	if !stub || !args {
		for _, m := range msgs {
			t.Logf("%s %s %.100q", m.Role, m.ToolCallID, m.Content)
		}
		t.Errorf("want a one-line stub with the trace pointer for msg 3 (%v) and masked write_file arguments for msg 0 (%v)", stub, args)
	}
	// The latest KeepRounds rounds are sent in full.
	if last := msgs[len(msgs)-1]; last.Content != w.History()[w.Len()-1].Content {
		t.Errorf("latest tool output was masked")
	}
	if got := len(w.History()); got != 12 {
		t.Errorf("History has %d messages, want all 12", got)
	}
}

func TestSummaryRepliesHandled(t *testing.T) {
	t.Parallel()
	malformed := constReply(`{"progress": "half done", "completed_steps": [`)
	missing := constReply(`{"progress": "half done"}`)
	empty := constReply("")
	blank := constReply(`{"progress":"","completed_steps":[],"files_changed":[],"unresolved_errors":[],"decisions":[],"next_steps":[]}`)
	huge := func(int, llm.Request) (string, error) {
		s := summarizer.Summary{Progress: strings.Repeat("the parser handles a great many cases now; ", 800),
			CompletedSteps: []string{}, FilesChanged: []string{}, UnresolvedErrors: []string{}, Decisions: []string{}, NextSteps: []string{}}
		b, _ := json.Marshal(s)
		return string(b), nil
	}
	cases := []struct {
		name     string
		script   []replyFunc
		limit    int
		want     []summarizer.EventKind // in order, among summary/mask events
		wantErr  []error
		attempts int
	}{
		{"malformed then good", []replyFunc{malformed, nil}, 0,
			[]summarizer.EventKind{summarizer.EventSummaryRejected, summarizer.EventSummary}, nil, 2},
		{"missing field then good", []replyFunc{missing, nil}, 0,
			[]summarizer.EventKind{summarizer.EventSummaryRejected, summarizer.EventSummary}, nil, 2},
		{"endpoint error then good", []replyFunc{failReply, nil}, 0,
			[]summarizer.EventKind{summarizer.EventSummaryRejected, summarizer.EventSummary}, nil, 2},
		// Cadence summary fails twice but the window fits: go on without it.
		{"empty twice, fits anyway", []replyFunc{empty, blank}, 0,
			[]summarizer.EventKind{summarizer.EventSummaryRejected, summarizer.EventSummaryRejected, summarizer.EventSummaryFailed}, nil, 2},
		// Over budget twice and masking old outputs is not enough: mask
		// harder, and that is enough.
		{"over budget twice, mask harder", []replyFunc{huge, huge}, 5500,
			[]summarizer.EventKind{summarizer.EventSummaryRejected, summarizer.EventSummaryRejected, summarizer.EventSummaryFailed, summarizer.EventMaskHard}, nil, 2},
		// Masking harder is not enough either: stop with the reason.
		{"over budget twice, stop", []replyFunc{huge, huge}, 3000,
			[]summarizer.EventKind{summarizer.EventSummaryRejected, summarizer.EventSummaryRejected, summarizer.EventSummaryFailed, summarizer.EventMaskHard},
			[]error{summarizer.ErrBudget, summarizer.ErrSummary}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Without a limit: a roomy window and a cadence summary. With
			// one: no cadence, the budget triggers the summary.
			cfg := summarizer.Config{SummaryEvery: 4, ContextLimit: 60000, ReplyReserve: 500, SummaryMaxTokens: 400}
			outputs := []string{codeText(1, 4000), codeText(2, 4000)}
			if tc.limit > 0 {
				cfg.ContextLimit, cfg.SummaryEvery, cfg.KeepRounds = tc.limit, 1000, 3
				outputs = []string{codeText(1, 8000), codeText(2, 8000)}
			}
			w, fake, log := newWindow(t, cfg, tc.script...)
			for i := range 6 {
				w.Append(turn(i+1, outputs)...)
			}
			if tc.limit == 3000 {
				// The last round is one message nothing can shrink.
				w.Append(llm.Message{Role: llm.RoleUser, Content: codeText(5, 12000)})
			}
			w.SetFailing(failingOutput(3))
			msgs, err := w.Messages(context.Background(), testTools())
			fake.check()
			var got []summarizer.EventKind
			for _, e := range log.all() {
				if e.Kind != summarizer.EventMask && e.Kind != summarizer.EventDrop && e.Kind != summarizer.EventMaskLast {
					got = append(got, e.Kind)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("events %v, want %v", got, tc.want)
			}
			if fake.numCalls() != tc.attempts {
				t.Errorf("%d summarizer calls, want %d", fake.numCalls(), tc.attempts)
			}
			if len(tc.wantErr) > 0 {
				for _, want := range tc.wantErr {
					if !errors.Is(err, want) {
						t.Errorf("error %v, want one wrapping %v", err, want)
					}
				}
				if msgs != nil {
					t.Errorf("returned %d messages with an error", len(msgs))
				}
				t.Logf("reason: %v", err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			assertFits(t, w, msgs)
			if !strings.Contains(joined(msgs), failingOutput(3)) || !strings.Contains(joined(msgs), goal.Content) {
				t.Errorf("view lost the failing output or the goal")
			}
			// The retry tells the model what was wrong.
			if tc.attempts == 2 && len(fake.requests) == 2 {
				last := fake.requests[1].Messages
				if note := last[len(last)-1].Content; !strings.Contains(note, "rejected") {
					t.Errorf("retry request lacks the rejection note: %q", note)
				}
			}
		})
	}
}

func TestCircuitBreaker(t *testing.T) {
	t.Parallel()
	same := constReply(`{"progress":"stuck","completed_steps":["step 1"],"files_changed":["a.go"],"unresolved_errors":[],"decisions":[],"next_steps":["step 2"]}`)
	t.Run("pinned alone over budget", func(t *testing.T) {
		t.Parallel()
		w, _, _ := newWindow(t, summarizer.Config{ContextLimit: 2000, ReplyReserve: 500})
		w.Pin(llm.Message{Role: llm.RoleUser, Content: codeText(9, 12000)})
		w.Append(turn(1, []string{"ok", "ok"})...)
		_, err := w.Messages(context.Background(), testTools())
		if !errors.Is(err, summarizer.ErrBudget) || !strings.Contains(err.Error(), "pinned") {
			t.Fatalf("err = %v, want ErrBudget naming the pinned messages", err)
		}
	})
	t.Run("unmaskable last round", func(t *testing.T) {
		t.Parallel()
		w, _, _ := newWindow(t, summarizer.Config{ContextLimit: 3000, ReplyReserve: 500})
		w.Append(llm.Message{Role: llm.RoleUser, Content: codeText(3, 20000)})
		_, err := w.Messages(context.Background(), testTools())
		if !errors.Is(err, summarizer.ErrBudget) || !strings.Contains(err.Error(), "last round") {
			t.Fatalf("err = %v, want ErrBudget naming the last round", err)
		}
	})
	t.Run("huge last output is masked rather than sent", func(t *testing.T) {
		t.Parallel()
		w, _, log := newWindow(t, summarizer.Config{ContextLimit: 3000, ReplyReserve: 500})
		w.Append(turn(1, []string{codeText(1, 30000), codeText(1, 30000)})...)
		msgs, err := w.Messages(context.Background(), testTools())
		if err != nil {
			t.Fatal(err)
		}
		assertFits(t, w, msgs)
		if !log.has(summarizer.EventMaskLast) {
			t.Errorf("events %v, want mask_last", kinds(log.all()))
		}
	})
	t.Run("summaries without progress", func(t *testing.T) {
		t.Parallel()
		w, fake, _ := newWindow(t, summarizer.Config{SummaryEvery: 2, KeepRounds: 1}, same, same, same, same)
		outputs := []string{"output a", "output b"}
		var err error
		for i := 0; i < 20 && err == nil; i++ {
			w.Append(turn(i, outputs)...)
			_, err = w.Messages(context.Background(), testTools())
		}
		if !errors.Is(err, summarizer.ErrNoProgress) {
			t.Fatalf("err = %v after %d summaries, want ErrNoProgress", err, fake.numCalls())
		}
		if fake.numCalls() != 3 {
			t.Errorf("stopped after %d summaries, want 3 (two in a row without progress)", fake.numCalls())
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		t.Parallel()
		w, _, _ := newWindow(t, summarizer.Config{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := w.Messages(ctx, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}

func TestRoundsAndFailingPlacement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, _, _ := newWindow(t, summarizer.Config{ContextLimit: 100000, Summarizer: nil})
	out := failingOutput(1)
	w.Append(llm.Message{Role: llm.RoleUser, Content: "Step 2: write the parser."},
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "a", Name: "run_tests", Arguments: "{}"}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "a", Name: "run_tests", Content: out})
	w.SetFailing(out)
	msgs, err := w.Messages(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The failing output is visible in the history: not repeated.
	if n := strings.Count(joined(msgs), out); n != 1 {
		t.Errorf("failing output appears %d times, want once", n)
	}
	// A failing output the agent extracted (not verbatim in history) is sent
	// on its own message.
	w.SetFailing("FAIL: calc --help exited 2")
	msgs, _ = w.Messages(ctx, nil)
	if !strings.Contains(joined(msgs), "FAIL: calc --help exited 2") {
		t.Errorf("failing output missing from the view")
	}
	// It comes last, after the stable prefix, so that a changed failing
	// output does not invalidate a provider's cached history.
	if n := w.StablePrefix(); n != len(msgs)-1 || !strings.Contains(msgs[n].Content, "FAIL: calc --help exited 2") {
		t.Errorf("StablePrefix = %d of %d messages; the failing output must be the one message after it", n, len(msgs))
	}
}

func TestObserveCalibrates(t *testing.T) {
	t.Parallel()
	c, err := summarizer.NewCounter("gpt-4o")
	if err != nil {
		t.Fatal(err)
	}
	w, err := summarizer.NewWindow(summarizer.Config{Counter: c, ContextLimit: 8000})
	if err != nil {
		t.Fatal(err)
	}
	w.Pin(sys, goal)
	msgs, err := w.Messages(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	est := c.CountMessages(msgs)
	w.Observe(llm.Usage{PromptTokens: est * 2}, len(msgs)+1) // mismatched: skipped
	if r := c.Ratio(); r != 1 {
		t.Fatalf("ratio %v after a mismatched sample, want 1", r)
	}
	w.Observe(llm.Usage{PromptTokens: est * 2}, len(msgs))
	if r := c.Ratio(); r != 2 {
		t.Fatalf("ratio %v, want 2", r)
	}
}

func TestNewWindowValidates(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  summarizer.Config
		want string
	}{
		{"no limit", summarizer.Config{}, "ContextLimit"},
		{"reserve too big", summarizer.Config{ContextLimit: 1000, ReplyReserve: 1000}, "ReplyReserve"},
		{"tiny budget", summarizer.Config{ContextLimit: 300, ReplyReserve: 100}, "at least 256"},
		{"summary too big", summarizer.Config{ContextLimit: 8000, ReplyReserve: 1000, SummaryMaxTokens: 5000}, "SummaryMaxTokens"},
		{"keep rounds", summarizer.Config{ContextLimit: 8000, KeepRounds: -1}, "KeepRounds"},
		{"cadence", summarizer.Config{ContextLimit: 8000, SummaryEvery: -2}, "SummaryEvery -2"},
		{"price", summarizer.Config{ContextLimit: 8000, Price: &llm.Price{Input: 1, CachedInput: -0.1}}, "Price"},
		{"summary price", summarizer.Config{ContextLimit: 8000, SummaryPrice: &llm.Price{Input: math.NaN()}}, "SummaryPrice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.cfg.Counter = counter(t)
			_, err := summarizer.NewWindow(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %s", err, tc.want)
			}
		})
	}
}

func TestResolvedErrorsDoNotHideNewOnes(t *testing.T) {
	t.Parallel()
	fresh := "--- FAIL: TestNew (0.00s)"
	reply := func(int, llm.Request) (string, error) {
		b, _ := json.Marshal(summarizer.Summary{Progress: "p", UnresolvedErrors: []string{fresh, "--- FAIL: TestParse1 (0.00s)"},
			CompletedSteps: []string{}, FilesChanged: []string{}, Decisions: []string{}, NextSteps: []string{}})
		return string(b), nil
	}
	w, _, log := newWindow(t, summarizer.Config{SummaryEvery: 2}, reply)
	w.SetFailing(failingOutput(1)) // tracks "--- FAIL: TestParse1 (0.00s)" among others
	w.SetFailing("")               // all resolved
	outputs := []string{"a", "b"}
	for i := range 4 {
		w.Append(turn(i, outputs)...)
	}
	if _, err := w.Messages(context.Background(), nil); err != nil || !log.has(summarizer.EventSummary) {
		t.Fatalf("Messages: %v, events %v", err, kinds(log.all()))
	}
	if got := w.Unresolved(); len(got) != 1 || got[0] != fresh {
		t.Errorf("Unresolved = %q, want only the new error %q", got, fresh)
	}
}
