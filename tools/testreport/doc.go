// Package testreport turns a project's test output into structured results
// and guesses the command that runs a project's tests.
//
// It owns the parsers for `go test -json` (and plain `go test`), pytest,
// python's unittest, and a generic fallback for TAP (node's test runner),
// node's spec reporter and plain "N passed, M failed" lines; Detect, which
// reads a project's files; and FrameworkOf, which reads a command line.
//
// A Report counts passed, failed, skipped and errored tests (an error is
// something that stopped tests from running: a build or import failure, a
// collection error, a crash outside any test) and lists each failure with
// the test's name, the file and line to look at, the runner's message and,
// where the output shows it, a kind: assertion, runtime, syntax, timeout or
// build. PassedTests names every test that passed where the output shows
// it (WithTestNames adds the options that make runners show it), so a
// caller can tell that a given test ran and passed rather than trust a
// count. Names are the runner's own: "pkg/path.TestName/sub" for Go,
// pytest's node ids, unittest's "module.Class.test". Files are as the runner
// printed them; Report.Relative strips a workspace prefix.
//
// It must not run anything: callers run the command (through the sandbox)
// and hand its output here. Detect only looks at the file system it is
// given. Messages and the output tail are bounded, so a huge log cannot flood
// a prompt. The fixtures under testdata/out are real runs; the test flag
// -update regenerates them and is the only place the tests run processes.
package testreport
