package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/trioagent/trio/tools"
)

// The Critic's tool calls go into calls.jsonl like the Worker's, so that a
// check killed after its tests ran, but before its verdict was
// checkpointed, does not run them again: the resumed check gets the
// recorded result. A call in flight when the session died does run again,
// and its audit line says so (rerun). The Critic itself is unchanged: its
// view's tools are wrapped (walTool), and the gate's observer adds the
// record's key to the audit line.

// criticWAL keys the Critic's calls: "check<N>.<i>" is the i-th call of the
// run's N-th check (N is the checkpointed checks plus one), the same key
// in every session that runs that check, since a check makes its calls in
// a fixed order.
type criticWAL struct {
	check, seq int
	// note describes the latest call for its audit line; the gate's
	// observer takes it.
	note *walNote
}

// walNote is what the audit line of a Critic call adds to the gate's
// record.
type walNote struct {
	Key string `json:"wal_key"`
	// Replayed: the result is the one calls.jsonl recorded; nothing ran.
	Replayed bool `json:"replayed,omitempty"`
	// Rerun: an earlier session began this call and died before its end,
	// so it ran again.
	Rerun bool `json:"rerun,omitempty"`
}

func (c *criticWAL) next(check int) string {
	if c.check != check {
		c.check, c.seq = check, 0
	}
	c.seq++
	return fmt.Sprintf("check%d.%d", check, c.seq)
}

// walTool is one of the Critic's tools whose calls are recorded in
// calls.jsonl once the gate has allowed them.
type walTool struct {
	tools.Tool
	r *run
}

// criticView wraps every tool of the Critic's view.
func (r *run) criticView(v tools.View) (tools.View, error) {
	ts := make([]tools.Tool, 0, v.Len())
	for _, name := range v.Names() {
		t, _ := v.Tool(name)
		ts = append(ts, walTool{Tool: t, r: r})
	}
	wv, err := tools.View{}.With(ts...)
	if err != nil {
		return tools.View{}, fmt.Errorf("agent: critic tools: %w", err)
	}
	return wv, nil
}

// Decode decodes as the tool does and records the call when it runs.
func (t walTool) Decode(args json.RawMessage) (tools.Invocation, error) {
	inv, err := t.Tool.Decode(args)
	if err != nil || inv.Run == nil {
		return inv, err
	}
	run := inv.Run
	inv.Run = func(ctx context.Context) (tools.Result, error) {
		return t.r.criticCall(ctx, t.Name(), args, run)
	}
	return inv, nil
}

// criticCall runs one allowed Critic call under its write-ahead record, or
// returns the result a killed session recorded for it.
func (r *run) criticCall(ctx context.Context, name string, args json.RawMessage, run func(context.Context) (tools.Result, error)) (tools.Result, error) {
	key := r.criticLog.next(r.st.Checks + 1)
	call := tools.Call{ID: key, Name: name, Arguments: args}
	if res, ok := r.wal.recorded(key, call); ok {
		r.criticLog.note = &walNote{Key: key, Replayed: true}
		return res, nil
	}
	note := &walNote{Key: key, Rerun: r.wal.ranBefore(key)}
	if err := r.wal.begin(key, call); err != nil {
		return tools.Result{}, err
	}
	r.criticLog.note = note
	res, err := run(ctx)
	if err != nil {
		return res, err // in flight: runs again on resume
	}
	if err := r.wal.end(key, call, res); err != nil {
		return res, err
	}
	return res, nil
}

// takeNote returns and clears the latest Critic call's note.
func (r *run) takeNote() *walNote {
	n := r.criticLog.note
	r.criticLog.note = nil
	return n
}

// auditLine is the audit record of a call: the gate's record, with the
// write-ahead key of a Critic call and whether it was replayed or run
// again.
func auditLine(rec tools.Record, note *walNote) any {
	if note == nil {
		return rec
	}
	b, err := json.Marshal(rec)
	if err != nil || len(b) < 2 {
		return rec
	}
	extra, _ := json.Marshal(note)
	// Both are JSON objects: splice the note's fields into the record's.
	out := append(b[:len(b)-1:len(b)-1], ',')
	out = append(out, extra[1:]...)
	return json.RawMessage(out)
}
