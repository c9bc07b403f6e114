// Package eval runs a suite of goals as ordinary Trio runs and judges each
// result with tests the agent never saw.
//
// A suite is a folder with a suite.yaml listing its tasks (an id, a folder
// and tags) and one folder per task holding goal.md, task.yaml (the hidden
// test command, optional budgets and replay script), hidden/ (the hidden
// tests) and optionally seed/ (the workspace a run starts from). See Load
// and the README's "trio eval" section for the format.
//
// Run starts every task through the public agent API, each with its own run
// folder, workspace and sandbox, a bounded number at a time. When a run
// ends, the judge copies the resulting workspace to a fresh folder, lays
// the hidden tests over it and runs the hidden command in a fresh sandbox,
// so the verdict comes from tests the agent could not have tuned its code
// to. A task's result.json is written last and atomically: an interrupted
// eval run again skips the tasks that have one and starts the others
// afresh.
//
// The hidden tests are read only by the judge: they are never copied into
// the run's workspace, never put in a prompt and never traced. The sandbox
// kind is chosen once, by agent.ChooseSandbox (containerd, else userns,
// else refused; local only when asked for, and then every result is marked
// unisolated), and every run and judge gets its own sandbox of that kind,
// which sees only its own workspace. The judge lays sentinel tests (package
// critic/sentinel) over the hidden tests; a report an honest runner could
// not have made is a hidden fail marked forged.
//
// With WithRemote the runs happen elsewhere (trio eval --temporal: on a
// pool of workers); the eval hands them over at once, waits for each to
// be laid out in its sample's folder and judges it here as above, so
// results, totals and eval.json are made by the same code either way.
//
// This package must not parse trio.yaml, speak HTTP or know about any
// model provider: the caller hands in a model per task.
package eval
