package flow

import (
	"time"
)

// Names shared by workflows, workers and clients.
const (
	// SharedQueue is the task queue every worker serves: runs are placed
	// from it.
	SharedQueue = "trio"
	// RunWorkflow is the workflow type of one run.
	RunWorkflow = "trio.Run"
	// PlaceActivity and SessionActivity are the activity types.
	PlaceActivity   = "trio.Place"
	SessionActivity = "trio.Session"
	// ConfirmSignal carries a person's answer to a pending request.
	ConfirmSignal = "confirm"
	// StatusQuery answers with the run's Status.
	StatusQuery = "status"
)

// HostQueue is the task queue of the worker on host.
func HostQueue(host string) string { return "trio-host-" + host }

// RunInput starts a run's workflow. The goal and the rest of what the run
// needs are in the store (see dist); only their references travel here.
type RunInput struct {
	RunID string `json:"run_id"`
	// ConfirmTimeout is how long a request waits for trio confirm (the
	// policy's confirm.timeout); no answer in time is no.
	ConfirmTimeout time.Duration `json:"confirm_timeout"`
	// HeartbeatTimeout is how long a session may be silent before the run
	// moves (default 1m).
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout,omitempty"`
	// MaxMoves bounds the sessions lost before the run fails (default 10).
	MaxMoves int `json:"max_moves,omitempty"`
}

// PlaceInput asks a host to prepare a run for the session of Epoch.
type PlaceInput struct {
	RunID string `json:"run_id"`
	Epoch int64  `json:"epoch"`
	// Avoid is the queue of a host the run was lost on: a worker there
	// declines the first attempts, so another one takes the run.
	Avoid string `json:"avoid,omitempty"`
}

// Placement is where a run was prepared.
type Placement struct {
	Host  string `json:"host"`
	Queue string `json:"queue"`
	// Seq is the commit restored (0: none yet, the run starts there).
	Seq int `json:"seq"`
}

// Answer is a person's answer to a request, by the request's key.
type Answer struct {
	Key    string `json:"key"`
	Answer string `json:"answer"` // yes, no, always
	By     string `json:"by,omitempty"`
}

// Request is what a session could not decide alone: a policy "ask".
type Request struct {
	Key     string        `json:"key"`
	Tool    string        `json:"tool"`
	Action  string        `json:"action"`
	Argv    []string      `json:"argv,omitempty"`
	Command string        `json:"command,omitempty"`
	Path    string        `json:"path,omitempty"`
	Rule    string        `json:"rule,omitempty"`
	Reason  string        `json:"reason,omitempty"`
	Timeout time.Duration `json:"timeout,omitempty"`
}

// SessionInput starts a session on the host the run was placed on.
type SessionInput struct {
	RunID   string   `json:"run_id"`
	Epoch   int64    `json:"epoch"`
	Answers []Answer `json:"answers,omitempty"`
}

// SessionResult is how a session ended: the run finished (Reason is its
// stop reason), or it asks (Ask).
type SessionResult struct {
	Reason string   `json:"reason,omitempty"`
	Ask    *Request `json:"ask,omitempty"`
	Seq    int      `json:"seq"`
}

// Progress is a session's heartbeat: small, and never a call's content.
type Progress struct {
	Epoch   int64 `json:"epoch"`
	Seq     int   `json:"seq"`
	Commits int   `json:"commits"`
}

// Result is a finished run.
type Result struct {
	RunID  string `json:"run_id"`
	Reason string `json:"reason"`
	Seq    int    `json:"seq"`
	Moves  int    `json:"moves"`
}

// Status answers StatusQuery.
type Status struct {
	RunID   string    `json:"run_id"`
	State   string    `json:"state"` // placing, running, waiting, finished, failed
	Host    string    `json:"host,omitempty"`
	Epoch   int64     `json:"epoch"`
	Moves   int       `json:"moves"`
	Pending *Request  `json:"pending,omitempty"`
	Answers []Answer  `json:"answers,omitempty"`
	Lost    []string  `json:"lost,omitempty"` // hosts a session was lost on
	Since   time.Time `json:"since"`
}
