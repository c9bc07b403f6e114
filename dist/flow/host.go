package flow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/dist"
	"github.com/trioagent/trio/dist/store"
	"github.com/trioagent/trio/policy"
)

// Call is one session as a Runner carries it out.
type Call struct {
	RunID string
	// RunDir and Workspace are the run's folders on this host.
	RunDir, Workspace string
	// Fresh says nothing was committed yet: the run starts here (as trio
	// run does, with WithRunID(RunID)); otherwise RunDir holds the
	// restored run, to resume (agent.Resume).
	Fresh bool
	Store store.Store
	// Spec is the run's spec from the store (zero when it has none): the
	// runner honours its policy, budgets, metadata and seed, and its
	// caller chooses the model by its Replay.
	Spec Spec
	// Confirmer answers the policy's "ask": from the answers the
	// workflow passed, else it ends the session with the request.
	Confirmer policy.Confirmer
	// Checkpoint commits the run; the runner passes it to
	// agent.WithCheckpointHook with the policy's read rules.
	Checkpoint func(runDir string, read policy.ReadRules) error
}

// Runner runs a session in-process and says why the run stopped. The
// trio worker command builds it from its model and configuration.
type Runner func(ctx context.Context, call Call) (reason string, err error)

// Host is a worker's side of the runs: it places runs on this host and
// runs their sessions.
type Host struct {
	// Name identifies the host; its queue is HostQueue(Name).
	Name  string
	Store store.Store
	// Root holds the runs placed here: Root/runs/<id>, their workspace at
	// Root/workspaces/<id> (outside the run folder, so that a first
	// session can lay a seed in it before the run folder exists).
	Root string
	Run  Runner
	// Heartbeat is how often a session heartbeats (default 1s; the SDK
	// sends at most one per 80 % of the heartbeat timeout).
	Heartbeat time.Duration
	// Logf, when set, tells what the host does.
	Logf func(format string, args ...any)
	// Sessions is how many sessions the host runs at once (the worker's
	// --parallel; 0: placement does not look). A placement that would
	// exceed it is declined, so that the run goes to a host with a free
	// slot rather than wait on this host's queue, where a session that
	// waits longer than 5 minutes to start counts as lost.
	Sessions int

	mu sync.Mutex // one placement or session start at a time
	// active are the runs with a session in this process, by epoch: their
	// folders are in use and must not be replaced by a placement.
	active map[string]int64
	// reserved are the runs placed here whose session has not started,
	// by placement time: they hold a slot until it starts, or for the
	// time the workflow waits for it to start.
	reserved map[string]time.Time
}

// full says why run cannot be placed here: every session slot is held by
// a session or a placement waiting for its session. Called with h.mu
// held.
func (h *Host) full(run string) error {
	if h.Sessions <= 0 {
		return nil
	}
	n := 0
	for r := range h.active {
		if r != run {
			n++
		}
	}
	for r, at := range h.reserved {
		switch {
		case time.Since(at) > sessionStart:
			delete(h.reserved, r) // its session went elsewhere
		case r != run && h.active[r] == 0:
			n++
		}
	}
	if n >= h.Sessions {
		return fmt.Errorf("host %s is full (%d of %d sessions held): another host should take run %s", h.Name, n, h.Sessions, run)
	}
	return nil
}

// busy says why run cannot be placed or started here: a session of it
// still runs in this process (one cut off from Temporal, whose run was
// placed again). Called with h.mu held.
func (h *Host) busy(run string) error {
	if e, ok := h.active[run]; ok {
		return fmt.Errorf("a session of run %s (epoch %d) still runs on %s: its folders are in use", run, e, h.Name)
	}
	return nil
}

// Queue is the host's own task queue.
func (h *Host) Queue() string { return HostQueue(h.Name) }

func (h *Host) logf(format string, args ...any) {
	if h.Logf != nil {
		h.Logf(format, args...)
	}
}

func (h *Host) runDir(run string) string { return filepath.Join(h.Root, "runs", run) }

func (h *Host) workspace(run string) string { return filepath.Join(h.Root, "workspaces", run) }

// placedFile records which commit the local folders hold.
func (h *Host) placedFile(run string) string { return filepath.Join(h.Root, "placed", run) }

// prepare makes the local folders hold commit c (nil: nothing yet, no
// folder), restoring it unless they already do.
func (h *Host) prepare(ctx context.Context, run string, c *dist.Commit) error {
	want := "none"
	if c != nil && c.Manifest != "" {
		want = c.Manifest
	}
	if b, err := os.ReadFile(h.placedFile(run)); err == nil && string(b) == want {
		return nil
	}
	dir := h.runDir(run)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.RemoveAll(h.workspace(run)); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(h.placedFile(run)), 0o755); err != nil {
		return err
	}
	if want != "none" {
		if err := dist.Restore(ctx, h.Store, c, dir, h.workspace(run)); err != nil {
			return err
		}
		h.logf("trio worker: run %s: commit %d (epoch %d, from %s) restored into %s", run, c.Seq, c.Epoch, c.Host, dir)
	}
	return os.WriteFile(h.placedFile(run), []byte(want), 0o644)
}

// Place prepares run in.RunID on this host: its last commit restored into
// a fresh folder. A host the run was lost on declines the first attempts.
func (h *Host) Place(ctx context.Context, in PlaceInput) (Placement, error) {
	if in.Avoid == h.Queue() && activity.GetInfo(ctx).Attempt <= 3 {
		return Placement{}, fmt.Errorf("host %s lost run %s before: another host should take it", h.Name, in.RunID)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.busy(in.RunID); err != nil {
		return Placement{}, err
	}
	if err := h.full(in.RunID); err != nil {
		return Placement{}, err
	}
	head, err := dist.Head(ctx, h.Store, in.RunID)
	if err != nil {
		return Placement{}, err
	}
	if err := h.prepare(ctx, in.RunID, head); err != nil {
		return Placement{}, fmt.Errorf("place run %s on %s: %w", in.RunID, h.Name, err)
	}
	p := Placement{Host: h.Name, Queue: h.Queue()}
	if head != nil {
		p.Seq = head.Seq
	}
	if h.reserved == nil {
		h.reserved = map[string]time.Time{}
	}
	h.reserved[in.RunID] = time.Now()
	h.logf("trio worker: run %s placed on %s (epoch %d, commit %d)", in.RunID, h.Name, in.Epoch, p.Seq)
	return p, nil
}

// errAsk ends a session that must wait for a person.
var errAsk = errors.New("flow: the session waits for a confirmation")

// Session runs one session of the run: it takes the run with its epoch,
// brings the local folders to the last commit, runs the Runner with a
// commit after every checkpoint, and heartbeats its progress from its own
// goroutine.
func (h *Host) Session(ctx context.Context, in SessionInput) (SessionResult, error) {
	h.mu.Lock()
	delete(h.reserved, in.RunID) // the session came: its slot is its own now, or free
	err := h.busy(in.RunID)
	var (
		s    *dist.Session
		base *dist.Commit
	)
	if err == nil {
		s, base, err = dist.Begin(ctx, h.Store, in.RunID, in.Epoch, h.Name)
	}
	if err == nil {
		err = h.prepare(ctx, in.RunID, base)
	}
	if err == nil {
		if h.active == nil {
			h.active = map[string]int64{}
		}
		h.active[in.RunID] = in.Epoch
		defer func() {
			h.mu.Lock()
			delete(h.active, in.RunID)
			h.mu.Unlock()
		}()
	}
	h.mu.Unlock()
	if errors.Is(err, dist.ErrStale) {
		return SessionResult{}, temporal.NewNonRetryableApplicationError(err.Error(), errStale, err)
	}
	if err != nil {
		return SessionResult{}, err
	}
	dir := h.runDir(in.RunID)
	ws := h.workspace(in.RunID)
	h.logf("trio worker: run %s: session of epoch %d on %s, from commit %d", in.RunID, in.Epoch, h.Name, s.Seq()-1)

	var (
		pmu  sync.Mutex
		prog = Progress{Epoch: in.Epoch, Seq: s.Seq()}
		read policy.ReadRules
	)
	commit := func(runDir string, rr policy.ReadRules) error {
		pmu.Lock()
		defer pmu.Unlock()
		read = rr
		c, err := s.Commit(ctx, runDir, ws, rr)
		if err != nil {
			return err
		}
		prog.Seq, prog.Commits = c.Seq, prog.Commits+1
		return nil
	}
	// Heartbeats from their own goroutine: a model call of minutes does
	// not silence the session.
	every := h.Heartbeat
	if every <= 0 {
		every = time.Second
	}
	hbDone := make(chan struct{})
	hbStop := make(chan struct{})
	go func() {
		defer close(hbDone)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			pmu.Lock()
			p := prog
			pmu.Unlock()
			activity.RecordHeartbeat(ctx, p)
			select {
			case <-t.C:
			case <-hbStop:
				return
			}
		}
	}()
	defer func() { close(hbStop); <-hbDone }()

	spec, err := LoadSpec(ctx, h.Store, in.RunID)
	if err != nil {
		return SessionResult{}, err
	}
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cf := newConfirmer(in.Answers, cancel)
	reason, err := h.Run(sctx, Call{RunID: in.RunID, RunDir: dir, Workspace: ws, Fresh: base == nil || base.Manifest == "",
		Store: h.Store, Spec: spec, Confirmer: cf, Checkpoint: commit})
	ask := cf.pendingRequest()
	if _, statErr := os.Stat(filepath.Join(dir, agent.StateFile)); statErr == nil && !errors.Is(err, dist.ErrStale) {
		// What the last checkpoint left out (the report, the trace's end).
		pmu.Lock()
		rr := read
		pmu.Unlock()
		if cerr := commit(dir, rr); cerr != nil && err == nil {
			err = cerr
		}
	}
	pmu.Lock()
	seq := prog.Seq
	pmu.Unlock()
	_ = os.WriteFile(h.placedFile(in.RunID), []byte(h.localManifest(ctx, in.RunID, seq)), 0o644)
	switch {
	case ask != nil:
		h.logf("trio worker: run %s asks (%s %s): waiting for trio confirm", in.RunID, ask.Tool, ask.Command+ask.Path)
		return SessionResult{Ask: ask, Seq: seq}, nil
	case errors.Is(err, dist.ErrStale):
		h.logf("trio worker: run %s: epoch %d is stale, another host has the run: stopping", in.RunID, in.Epoch)
		return SessionResult{}, temporal.NewNonRetryableApplicationError(err.Error(), errStale, err)
	case errors.Is(err, agent.ErrInvalidInput), errors.Is(err, agent.ErrInvalidOption):
		return SessionResult{}, temporal.NewNonRetryableApplicationError(err.Error(), errInvalid, err)
	case err != nil:
		return SessionResult{}, err
	}
	h.logf("trio worker: run %s finished on %s: %s (commit %d)", in.RunID, h.Name, reason, seq)
	return SessionResult{Reason: reason, Seq: seq}, nil
}

// localManifest is the manifest of commit seq ("" when unknown): what the
// local folders now hold.
func (h *Host) localManifest(ctx context.Context, run string, seq int) string {
	head, err := dist.Head(ctx, h.Store, run)
	if err != nil || head == nil || head.Seq != seq {
		return ""
	}
	return head.Manifest
}

// RequestKey names a request the same way in every session: what is
// asked about, not when.
func RequestKey(req policy.ConfirmRequest) string {
	b, _ := json.Marshal([]any{req.Tool, req.Action, req.Argv, req.Command, req.Path, req.Decision.Rule})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// confirmer answers from the workflow's answers; a request without one
// ends the session (cancel), to be put to a person by the workflow.
type confirmer struct {
	mu      sync.Mutex
	answers map[string][]string
	always  map[string]bool
	pending *Request
	cancel  context.CancelCauseFunc
}

func newConfirmer(answers []Answer, cancel context.CancelCauseFunc) *confirmer {
	c := &confirmer{answers: map[string][]string{}, always: map[string]bool{}, cancel: cancel}
	for _, a := range answers {
		if a.Answer == "always" {
			c.always[a.Key] = true
		}
		c.answers[a.Key] = append(c.answers[a.Key], a.Answer)
	}
	return c
}

// Confirm answers req from the answers given (each used once, "always"
// for good), else records it and ends the session.
func (c *confirmer) Confirm(ctx context.Context, req policy.ConfirmRequest) (policy.Answer, error) {
	key := RequestKey(req)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.always[key] {
		return policy.AnswerAlways, nil
	}
	if q := c.answers[key]; len(q) > 0 {
		c.answers[key] = q[1:]
		var a policy.Answer
		if err := a.UnmarshalText([]byte(q[0])); err != nil {
			return policy.AnswerNo, nil
		}
		return a, nil
	}
	if c.pending == nil {
		c.pending = &Request{Key: key, Tool: req.Tool, Action: req.Action, Argv: req.Argv, Command: req.Command,
			Path: req.Path, Rule: req.Decision.Rule, Reason: req.Decision.Reason, Timeout: req.Timeout}
	}
	c.cancel(errAsk)
	return policy.AnswerNo, errAsk
}

func (c *confirmer) pendingRequest() *Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending
}
