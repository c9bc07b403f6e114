// Package critic owns the Critic role: it designs independent acceptance
// tests and verifies the Worker's result with real checks before a model
// ever judges it.
//
// # Test designer
//
// DesignTests gives the goal and the plan — never the implementation — to
// the model (role "test_designer"), which answers with files of basic, edge
// and large-input test cases. Every path must lie inside the plan's tests
// folder; a reply that breaks that (or does not decode) goes back to the
// model once. The Critic writes the files through its own Workspace.Root,
// not through the Worker's gate, and removes older files of that folder.
// The resulting TestSuite carries a version that increases whenever the
// content changes, so a change of tests shows in the trace, and the tests
// the files define (DesignedTests: Go Test and Fuzz functions, Python
// TestCase methods and, under pytest, test functions), derived from the
// files rather than declared by the model. A reply whose Go or Python files
// define no test goes back to the model. RepairTests rewrites the suite
// after a suspect_test verdict.
//
// # The canonical suite
//
// The Critic keeps the files it wrote (SuiteFiles; the agent stores them in
// the run folder and hands them back with WithSuiteFiles on resume).
// RestoreSuite compares every file of the tests folder with them by SHA-256,
// without following links, and restores them: changed, deleted or replaced
// files are written again, files and folders the suite lacks are removed
// (caches such as __pycache__ silently). What differed is tampering, which
// the next Check reports. This holds whatever the sandbox: with the local
// kind nothing else stops code the tests run from rewriting them.
//
// # Checks
//
// Check runs, in order:
//
//  0. "acceptance_suite": RestoreSuite before the other checks and again
//     after them (the project's code runs in the test command and may
//     change the tests while they run). It fails when either found a change,
//     or one was found on resume, with one "tampering" failure per path,
//     even when the restored tests pass: code that rewrites its tests never
//     passes.
//  1. "tests": the plan's test command through the gate's run_tests tool; it
//     passes when the command ran, exited 0, the parsed report has no
//     failures or errors and at least one passed test, and every designed
//     test is among the report's PassedTests (matched across the runners'
//     forms: "pkg.TestX", "path::Class::test", "module.Class.test"). A
//     designed test that is not is a "not_run" failure naming it: fewer
//     tests than designed, a skipped test or a runner the project's code
//     shadowed or cut short (a workspace unittest/ package, os.Exit(0) in
//     an init) never passes on counts alone.
//  2. "files": every file the plan names exists, is a regular file and is
//     not empty.
//  3. "cli": when the plan declares a CLI, `CLI... --help` through the
//     gate's run_command exits 0 and prints something (stdout or stderr).
//  4. "stray_files": the workspace holds nothing unexpected. Stray are
//     cache and temporary files wherever they are (__pycache__, .pytest_cache,
//     .mypy_cache, .ruff_cache, .tox, .nox, .hypothesis, .cache, .venv, venv,
//     .idea, .vscode, node_modules unless a package.json sits next to it,
//     *.pyc, *.pyo, *.tmp, *.temp, *.swp, *.swo, *~, .DS_Store, Thumbs.db,
//     core dumps, *.orig, *.rej, Go test binaries *.test, *.prof) and any
//     other file outside the plan. Not stray: planned files, the tests
//     folder, .git, whatever was present before the run (WithBaseline: every
//     file of the person's, however many, whatever its name, and the folders
//     named there as a whole; the agent passes its start snapshot's entries,
//     so a person's file is never named for deletion), a folder whose name
//     is not UTF-8 (fs.FS cannot look inside) when it held such files, paths
//     matching WithAllowed globs, a vendor/ folder with modules.txt, and
//     project metadata that tools write or every project may have: go.mod,
//     go.sum, go.work, go.work.sum, lock files (package-lock.json,
//     yarn.lock, pnpm-lock.yaml, Cargo.lock, poetry.lock, uv.lock,
//     Pipfile.lock), README*, LICENSE*, LICENCE*, COPYING*, NOTICE*,
//     CHANGELOG*, .gitignore, .gitattributes, .editorconfig. A planned path
//     is never stray, whatever its name.
//
// Stray files are judged on the workspace as the Worker left it, before the
// Critic runs any command; caches and temporary files that appear while the
// Critic's own commands run (a Python __pycache__, say), and any inside the
// tests folder, are removed afterwards so they never count against the
// Worker.
//
// With WithLint, a "lint" check runs after "tests": each linter of the
// languages the workspace uses (tools.DetectLinters, from the embedded
// tools/linters.yaml) through the gate's run_linter, the tests folder left
// out; a blocking linter's finding is a "lint" failure at file:line, the
// others are listed as advisory.
//
// When every check passes the verdict is pass without a model call.
// Otherwise the model (role "critic") turns the raw results into Findings.
// It cannot overrule a failed check: a "pass" while checks failed becomes
// "fail", and the Summary says so. If its reply is invalid twice, the
// findings are built from the checks alone, so a failure is never lost.
//
// # Reviewer
//
// Review (role "reviewer") is for a change whose checks all passed: the
// model reads the goal, the plan and the changed files (Changes, against
// the sums given with WithBaselineSums) and answers with findings, each
// with a severity, and a score. Findings.WithReview attaches it; findings
// at or above a threshold turn a pass into a fail with a "review" check,
// and a failing round is never turned into a pass.
//
// This package must not call the Planner or the Worker, decide policy, or
// write anywhere but the tests folder (apart from removing the caches its
// own commands left, and links that stand where the tests folder should).
package critic
