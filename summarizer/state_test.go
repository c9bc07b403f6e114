package summarizer_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/trioagent/trio/summarizer"
)

func TestStateRestoresTheView(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := summarizer.Config{ContextLimit: 7000, ReplyReserve: 1000, SummaryEvery: 5}
	w, _, log := newWindow(t, cfg)
	outputs := []string{codeText(1, 3000), codeText(2, 3000), codeText(3, 3000)}
	for i := range 13 {
		w.Append(turn(i, outputs)...)
		if i == 6 {
			w.SetFailing(failingOutput(6))
			w.TrackError("critic: README.md is empty")
		}
		if _, err := w.Messages(ctx, testTools()); err != nil {
			t.Fatal(err)
		}
	}
	if !log.has(summarizer.EventSummary) || !log.has(summarizer.EventMask) {
		t.Fatalf("want a summary and masking before the checkpoint, events %v", kinds(log.all()))
	}
	want, err := w.Messages(ctx, testTools())
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(w.State())
	if err != nil {
		t.Fatal(err)
	}
	var st summarizer.State
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}

	r, fake, _ := newWindow(t, cfg)
	r.Append(w.History()...)
	if err := r.Restore(st); err != nil {
		t.Fatal(err)
	}
	got, err := r.Messages(ctx, testTools())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("restored view differs:\n got %d messages\nwant %d messages", len(got), len(want))
	}
	if fake.numCalls() != 0 {
		t.Errorf("restoring called the summarizer %d times", fake.numCalls())
	}

	bad := st
	bad.ViewFrom = 1 // a tool result, not a round start
	if err := r.Restore(bad); err == nil || !strings.Contains(err.Error(), "view_from") {
		t.Errorf("Restore of a bad index: %v, want an error naming view_from", err)
	}
}
