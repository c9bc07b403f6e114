package agent

// StopReason names why a run ended. Every report carries one.
type StopReason string

// The reasons a run ends.
const (
	StopCompleted     StopReason = "completed"
	StopChecksFailed  StopReason = "checks_failed"
	StopSameFailure   StopReason = "same_failure"
	StopRepeatedCall  StopReason = "repeated_call"
	StopOscillation   StopReason = "oscillation"
	StopBudgetSteps   StopReason = "budget_steps"
	StopBudgetRepairs StopReason = "budget_repairs"
	StopBudgetTokens  StopReason = "budget_tokens"
	StopBudgetTime    StopReason = "budget_time"
	StopContextBudget StopReason = "context_budget"
	StopPlanInvalid   StopReason = "plan_invalid"
	StopInterrupted   StopReason = "interrupted"
	StopModelError    StopReason = "model_error"
	StopSandboxError  StopReason = "sandbox_error"
	// StopReviewBlocked: the checks pass but a blocking reviewer still
	// finds problems after its extra rounds (see WithReview).
	StopReviewBlocked StopReason = "review_blocked"
	// StopErrorsIncreasing: the number of failures grew two rounds running.
	StopErrorsIncreasing StopReason = "errors_increasing"
	// StopOutOfReplies: a scripted model (llm.Scripted, TRIO_SCRIPT) had
	// no reply left for a role; the detail names the role and turn.
	StopOutOfReplies StopReason = "out_of_replies"
	// StopHookStopped: a hook answered "continue": false (Claude Code's
	// contract); the detail holds its stopReason. The call it ran for is
	// recorded, and the run can be resumed.
	StopHookStopped StopReason = "hook_stopped"
)

var stopExplanations = map[StopReason]string{
	StopCompleted:     "the Critic's checks pass: the goal is met",
	StopChecksFailed:  "the Critic's checks fail and no repair was allowed",
	StopSameFailure:   "the same failure came back twice in a row after a repair",
	StopRepeatedCall:  "the Worker repeated the same tool call with the same result three times",
	StopOscillation:   "the run alternated between two states (A, B, A, B)",
	StopBudgetSteps:   "the budget of Worker turns is spent (per step or repair round, or in the whole run)",
	StopBudgetRepairs: "the budget of repair rounds is spent and the checks still fail",
	StopBudgetTokens:  "the token budget is spent",
	StopBudgetTime:    "the wall-time budget is spent",
	StopContextBudget: "the context window could not be brought under its budget",
	StopPlanInvalid:   "the Planner could not produce a valid plan",
	StopInterrupted:   "the run was interrupted; the checkpoint is written and the run can be resumed",
	StopModelError:    "a model call failed; the detail says why",
	StopSandboxError:  "the sandbox, a tool's infrastructure or the run folder failed",

	StopReviewBlocked:    "every check passes, but the reviewer still finds a blocking problem after its extra rounds",
	StopErrorsIncreasing: "the number of failures grew two repair rounds running",
	StopOutOfReplies:     "the scripted model has no reply left for a role (the detail names it); add replies to the script and resume",
	StopHookStopped:      "a hook asked the run to stop (\"continue\": false; the detail gives its reason); the checkpoint is written and the run can be resumed",
}

// Explain is a one-line human explanation of the reason.
func (r StopReason) Explain() string {
	if s, ok := stopExplanations[r]; ok {
		return s
	}
	return "unknown stop reason " + string(r)
}

// Budget reports whether the run stopped because a budget was spent.
func (r StopReason) Budget() bool {
	switch r {
	case StopBudgetSteps, StopBudgetRepairs, StopBudgetTokens, StopBudgetTime, StopContextBudget:
		return true
	}
	return false
}

// Resumable reports whether Resume can continue a run that stopped this way.
func (r StopReason) Resumable() bool {
	return r == StopInterrupted || r == StopModelError || r == StopSandboxError || r == StopOutOfReplies || r == StopHookStopped
}

// StopReasons lists every reason, in a stable order, for documentation.
func StopReasons() []StopReason {
	return []StopReason{StopCompleted, StopChecksFailed, StopSameFailure, StopRepeatedCall,
		StopOscillation, StopBudgetSteps, StopBudgetRepairs, StopBudgetTokens, StopBudgetTime,
		StopContextBudget, StopPlanInvalid, StopInterrupted, StopModelError, StopSandboxError,
		StopReviewBlocked, StopErrorsIncreasing, StopOutOfReplies, StopHookStopped}
}
