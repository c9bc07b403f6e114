// Package viewer renders a run folder as one self-contained HTML page:
// the timeline of roles, every model call with its tokens, every tool call
// with its arguments, the gate's decision and rule and its output, the
// Critic's verdicts and findings, the plan with each step's state, a chart
// of prompt tokens per call marking the summaries, and the files written.
//
// The page needs no network: the run's data is embedded as JSON, the CSS
// and script inline, and the outputs of tool calls sit in a separate JSON
// block that is parsed only when one is first expanded. The package reads
// the run folder (report.json, trace.jsonl, audit.jsonl) and writes
// nothing but the page.
package viewer
