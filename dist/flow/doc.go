// Package flow runs Trio's runs on Temporal, coarsely, so that Trio's own
// write-ahead log (calls.jsonl) stays the record of calls: one workflow
// per run (its id is the run id); a placement activity on the shared task
// queue prepares the run's folders on a host (restoring the run's last
// commit from the store) and answers with that host's own queue; a
// session activity on that queue runs the run in-process, as trio resume
// does, heartbeating a small progress record from its own goroutine and
// committing to the store after every checkpoint (package dist). Model
// and tool calls never enter Temporal's history: payloads are run ids,
// epochs, hashes and short confirmation requests.
//
// When a session's heartbeats stop (its host died or was cut off), the
// workflow places the run again, preferring another host, with a new
// epoch: that host restores the last commit and resumes; the old host's
// next commit fails (dist.ErrStale) and it stops. An "ask" decision ends
// the session with the request; the workflow waits for a confirm signal
// for the policy's timeout (no answer is no) and resumes with the answer.
//
// An eval's fan-out (Eval) is a workflow that starts one child run
// workflow per task and sample, with ids derived from the task's hash,
// the sample and the eval's configuration (EvalRunID): a run that exists,
// running or ended, is attached to, never started again. A run's Spec in
// the store carries what an eval task adds to the worker's settings (its
// replay script, seed, budgets and the eval's policy).
//
// Only this package and the trio worker command import the Temporal SDK;
// the server lives in tests.
package flow
