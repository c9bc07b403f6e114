package demo

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/trioagent/trio/llm"
)

// lossy serves the script's reply, then holds it until the client gives
// up: the reply is taken from the script but lost in flight.
type lossy struct {
	script *llm.Scripted
	lose   atomic.Bool
	// taken is closed when a reply to lose has been taken from the script.
	taken chan struct{}
	once  sync.Once
}

func (m *lossy) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	resp, err := m.script.Complete(ctx, req)
	if m.lose.Load() {
		m.once.Do(func() { close(m.taken) })
		<-ctx.Done() // the client disconnected
		return llm.Response{}, ctx.Err()
	}
	return resp, err
}

// A reply the client never received does not move the cursor, so a run
// resumed from the checkpoint asks for it again and gets the same reply.
func TestCursorCountsReceivedReplies(t *testing.T) {
	t.Parallel()
	script, err := Model()
	if err != nil {
		t.Fatal(err)
	}
	served := &lossy{script: script, taken: make(chan struct{})}
	ep, err := serve(script, served)
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	ctx := context.Background()
	req := llm.Request{Agent: "planner", Messages: []llm.Message{{Role: llm.RoleUser, Content: Goal()}}}

	// The client gives up once the server has taken the reply (however
	// long that takes), so the reply is lost, never received.
	served.lose.Store(true)
	short, cancel := context.WithCancel(ctx)
	go func() {
		<-served.taken
		cancel()
	}()
	_, err = ep.Complete(short, req)
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("lost reply: err %v, want the client's cancellation", err)
	}
	if got, taken := ep.Cursor()["planner"], script.Cursor()["planner"]; got != 0 || taken != 1 {
		t.Fatalf("cursor %d (script %d), want 0 received and 1 taken", got, taken)
	}

	// Resume: a fresh endpoint seeks to the saved cursor and the planner's
	// first reply comes again.
	fresh, err := Model()
	if err != nil {
		t.Fatal(err)
	}
	want, err := fresh.Complete(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	served.lose.Store(false)
	if err := ep.Seek(ep.Cursor()); err != nil {
		t.Fatal(err)
	}
	got, err := ep.Complete(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got.Message.Content != want.Message.Content {
		t.Errorf("after seeking to the cursor the planner got %.80q, want its first reply %.80q", got.Message.Content, want.Message.Content)
	}
	if c := ep.Cursor()["planner"]; c != 1 {
		t.Errorf("cursor after one received reply: %d, want 1", c)
	}
}
