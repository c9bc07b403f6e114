// Package agent is Trio's orchestrator: it runs the Planner, the Critic's test
// designer, the Worker loop and the Critic's checks and repairs for one goal,
// keeps the run inside its budgets, stops with a named reason instead of
// spinning, and leaves a run folder on disk from which the run can be inspected
// and resumed.
//
// A run, as data flows:
//
//	goal ─ Planner ─> Plan ─ Critic.DesignTests ─> acceptance tests (read-only to the Worker)
//	     ─ for each step: Worker turns (model ─tool calls─> gate ─> tool) until finish_step
//	     ─ Critic.Check ─> pass → (WithReview) Critic.Review → report, or a review round
//	                     ─> fail → repair (analysis first) → Critic.Check again (all checks)
//	                     ─> suspect_test → test repair (a new suite version) → Critic.Check
//	     ─ stuck (same_failure, budget_repairs) → (WithReplan) Planner.Revise once → build the new steps
//
// The run folder (runs/<run-id>/ under the current directory unless
// WithRunsDir says otherwise) holds:
//
//	state.json    the checkpoint, rewritten atomically after every tool call and phase change
//	goal.md       the goal, written once (state.json holds its hash)
//	run.lock      the session's exclusive lock, naming its pid and host
//	history.jsonl the Worker's messages (state.json says how many it covers)
//	calls.jsonl   a write-ahead record of every tool call, the Worker's and the Critic's ("begin" before, "end" after)
//	trace.jsonl   every model request and reply, tool call, critic verdict, suite version
//	audit.jsonl   every decision of the safe_execute gate
//	report.json   the Report, and report.md for people
//	workspace/    the project, unless WithWorkspace (or the policy's workspace) names another folder
//
// Resume continues a run from its checkpoint: a tool call whose "end" is in
// calls.jsonl is never executed again (its recorded result is reused), so a
// run killed at any point re-runs at most the one call that was in flight.
// A run folder is created whole (renamed from a temporary folder with its
// first checkpoint); a session locks it and its workspace (ErrLocked for a
// second one) and cuts every JSONL file back to its last complete record
// before appending.
// The Worker's window is restored with its summary, masking and tracked
// errors, so a resumed run does not summarize again what it already folded.
//
// Commands run in a sandbox the run opens once its run id and workspace are
// known and closes when it stops (Resume opens a new one), as
// WithSandboxConfig describes it: auto by default (containerd when it
// answers, else local with a warning event), containerd (an error with
// containerd's guidance when unreachable, before any run folder is made) or
// local. WithSandbox passes an embedder's own sandbox instead.
//
// Inspect reads a run folder without changing it (the report as of the last
// checkpoint, with the metadata recorded by WithMetadata), so a tool can
// show a run or rebuild its setup to resume it.
//
// Token usage is counted per role from the endpoint's replies; a reply that
// reports none is counted with the window's tokenizer (marked estimated in
// the trace and the report), so the token budget holds either way.
//
// Budgets (WithBudgets) bound the Worker's turns per step and in all, the
// repair rounds, the tokens of every role and the wall time; loop guards stop
// a run that repeats a failure, repeats a call, alternates between two
// states or whose failures grow two rounds running (errors_increasing).
// Every stop has a StopReason in the Report.
//
// Package agent owns orchestration, run state, budgets, events, checkpoints,
// resume and reports. It must not parse policy files, speak HTTP or run
// processes itself: policy, llm, tools and sandbox do that.
package agent
