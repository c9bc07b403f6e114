package critic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/trioagent/trio/critic/sentinel"
	"github.com/trioagent/trio/planner"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/tools"
	"github.com/trioagent/trio/tools/testreport"
)

// Bounds of what one check keeps for the model and for Detail.
const (
	maxRawOutput   = 24 << 10 // raw output shown to the critic model per check
	maxDetailLines = 30       // failing tests / paths listed in a Detail
	maxMessage     = 300      // bytes of one failure message in a Detail
)

// checkRun is one deterministic check with what the model needs to see.
type checkRun struct {
	result   CheckResult
	raw      string    // raw output for the model
	failures []Failure // findings built from this check alone
	// rep is the tests check's parsed report, for the findings' records.
	rep *testreport.Report
}

// Check runs the deterministic checks (see the package doc) and, when one
// failed, has the model turn the results into Findings. A pass needs no
// model call. An error means the checks could not run (gate or sandbox
// failure, cancelled context, unreadable workspace); a failing check is
// never an error.
func (c *Critic) Check(ctx context.Context, plan planner.Plan) (Findings, error) {
	// Every command of a check builds and runs from the trusted caches
	// only (sandbox.Command's Check): the Worker's code runs inside the
	// checks too, and must not feed them compiled packages or results.
	ctx = tools.WithCheck(ctx)
	// The tests run as the Critic wrote them: whatever changed them since
	// the last check (or before a resume) is undone first and reported.
	set, checkFiles := c.sentinels(plan)
	if _, err := c.restoreSuite(checkFiles); err != nil {
		return Findings{}, err
	}
	changes := c.takePending()
	// Stray files are judged on the workspace as the Worker left it: the
	// caches the Critic's own commands create are removed afterwards.
	rules := newStrayRules(plan.Files(), plan.TestsFolder(), c.baseline, c.allowed)
	stray, before, err := c.checkStray(rules)
	if err != nil {
		return Findings{}, err
	}
	defer c.cleanByProducts(rules, before, plan.TestsFolder())
	// The sentinels run with the designed tests and leave with the check,
	// whichever way it ends: the Worker never sees them.
	if !set.Empty() {
		if _, err := c.restoreTo(checkFiles, nil); err != nil {
			return Findings{}, err
		}
		defer func() { _, _ = c.restoreTo(c.SuiteFiles(), checkFiles) }()
	}
	runs := make([]checkRun, 1, 6)
	tests, err := c.checkTests(ctx, plan, set)
	if err != nil {
		return Findings{}, err
	}
	runs = append(runs, tests)
	lint, ok, err := c.checkLint(ctx, plan)
	if err != nil {
		return Findings{}, err
	}
	if ok {
		runs = append(runs, lint)
	}
	runs = append(runs, c.checkFiles(plan))
	cli, err := c.checkCLI(ctx, plan)
	if err != nil {
		return Findings{}, err
	}
	runs = append(runs, cli, stray)
	// The project's code ran in those commands and may have changed the
	// tests while they ran (a module that rewrites the next test file
	// before it is imported): that round's result cannot be trusted.
	during, err := c.restoreTo(checkFiles, nil)
	if err != nil {
		return Findings{}, err
	}
	for _, ch := range during.Changes {
		ch.During = true
		changes = append(changes, ch)
	}
	if !set.Empty() {
		if _, err := c.restoreTo(c.SuiteFiles(), checkFiles); err != nil {
			return Findings{}, err
		}
	}
	runs[0] = c.checkSuite(changes)

	f := Findings{Checks: make([]CheckResult, len(runs))}
	failed := false
	for i, r := range runs {
		f.Checks[i] = r.result
		failed = failed || !r.result.OK
	}
	if !failed {
		f.Verdict = VerdictPass
		f.Summary = "every check passed"
		return f.withRecords(tests.rep), nil
	}
	f, err = c.judge(ctx, plan, runs)
	return f.withRecords(tests.rep), err
}

// maxPassedRecords bounds Findings.PassedTests.
const maxPassedRecords = 500

// withRecords adds the test run's records to f: the passed tests' names
// with their times, and each failure's time where the runner gave one.
func (f Findings) withRecords(rep *testreport.Report) Findings {
	if rep == nil {
		return f
	}
	for _, n := range rep.PassedTests {
		if len(f.PassedTests) == maxPassedRecords {
			break
		}
		f.PassedTests = append(f.PassedTests, PassedTest{Name: n, Seconds: rep.Durations[n]})
	}
	for i := range f.Failures {
		for _, x := range rep.Failures {
			if x.Seconds > 0 && (x.Name == f.Failures[i].TestID || strings.HasSuffix(x.Name, "."+f.Failures[i].TestID)) {
				f.Failures[i].Seconds = x.Seconds
				break
			}
		}
	}
	return f
}

func (c *Critic) checkTests(ctx context.Context, plan planner.Plan, set *sentinel.Set) (checkRun, error) {
	run := checkRun{result: CheckResult{Name: CheckTests}}
	args, _ := json.Marshal(map[string]string{"command": plan.TestCommand})
	if !set.Empty() {
		// A passing run exits non-zero for the sentinels alone: the
		// result's ok (in the audit, the trace and the counters) says
		// whether the designed tests passed and the runner was honest.
		ctx = tools.WithTestsJudge(ctx, func(rep testreport.Report, code int) bool {
			return set.Clean(rep).OK() && (code == 0) != set.Failed(rep) && len(set.Verify(rep, code, nil)) == 0
		})
	}
	res, err := c.gate.Call(ctx, c.view, tools.Call{ID: c.nextCallID(runTestsTool), Name: runTestsTool, Arguments: args})
	if err != nil {
		return run, fmt.Errorf("critic: run_tests %q: %w", plan.TestCommand, err)
	}
	if res.Denied || !commandRan(res) {
		run.raw = rawOutput(res)
		why := firstLine(res.Output)
		run.result.Detail = fmt.Sprintf("the test command %q did not run: %s", plan.TestCommand, why)
		run.failures = []Failure{{TestID: "test_command", Expected: "the test command runs", Actual: why, Kind: KindRuntime}}
		return run, nil
	}
	full := parseReport(res)
	// The designed tests are judged without the sentinels, and nothing
	// the model reads names them.
	rep := set.Clean(full)
	run.rep = &rep
	run.raw = rawFor(res, rep, set)
	designed := c.Suite().Tests
	missing := c.notPassed(designed, rep.PassedTests)
	failedNames := make([]string, len(rep.Failures))
	for i, x := range rep.Failures {
		failedNames[i] = x.Name
	}
	unreported := c.notPassed(missing, failedNames)
	var ran func(string) bool
	if len(designed) > 0 {
		ran = func(group string) bool { return groupRan(designed, unreported, group) }
	}
	forged := set.Verify(full, res.ExitCode, ran)
	timedOut := strings.Contains(res.Output, "timed out")
	oom := strings.Contains(res.Output, "out of memory")
	// An honest runner whose must-fail sentinel failed exits non-zero; the
	// designed tests passed when nothing else failed.
	exitOK := !timedOut && !oom && (res.ExitCode == 0) != set.Failed(full)
	run.result.OK = exitOK && rep.Failed == 0 && rep.Errors == 0 && rep.Passed > 0 && len(missing) == 0 && len(forged) == 0
	head := rep.Summary() + "; " + exitLine(res)
	switch {
	case len(designed) > 0:
		head += fmt.Sprintf("; %d of %d acceptance tests passed by name", len(designed)-len(missing), len(designed))
	case len(c.SuiteFiles()) > 0:
		head += "; acceptance tests not checked by name: the suite's files define none this Critic can read"
	}
	fails := slices.Clone(rep.Failures)
	resolve := c.resolver(plan)
	for i := range fails {
		fails[i].File = resolve(fails[i].File)
	}
	slices.SortStableFunc(fails, func(a, b testreport.Failure) int { return strings.Compare(a.Name, b.Name) })
	var lines []string
	for _, x := range fails {
		l := x.Name
		if loc := location(x.File, x.Line); loc != "" {
			l += " (" + loc + ")"
		}
		if m := clip(firstLines(x.Message, 3), maxMessage); m != "" {
			l += ": " + m
		}
		if len(lines) == 0 || lines[len(lines)-1] != l {
			lines = append(lines, l)
		}
	}
	// A designed test that failed is listed with its failure; one that is
	// simply not among the passed names is listed here.
	why := notPassedWhy(rep)
	for _, id := range unreported {
		lines = append(lines, id+": "+why)
	}
	var forgedWhy []string
	for _, p := range forged {
		if !slices.Contains(forgedWhy, p.Why) {
			forgedWhy = append(forgedWhy, p.Why)
			lines = append(lines, "forged: "+p.Why)
		}
	}
	run.result.Detail = listDetail(head, lines)
	if run.result.OK {
		return run, nil
	}
	for _, w := range forgedWhy {
		run.failures = append(run.failures, Failure{
			TestID: "runner", Expected: "the test runner runs the acceptance tests as written and reports what happened " +
				"(the project's code must not patch the test framework, shadow or imitate the runner, exit early or reuse cached results)",
			Actual: w, Kind: KindForged,
		})
	}
	for _, id := range unreported {
		file, _, _ := strings.Cut(id, "::")
		run.failures = append(run.failures, Failure{
			TestID: id, Location: file, Expected: "the acceptance test runs and is reported passed by name",
			Actual: why, Kind: KindNotRun,
		})
	}
	for _, x := range fails {
		k := kindOf(x.Kind, x.Message)
		switch {
		case timedOut:
			k = KindTimeout
		case oom:
			k = KindResource
		}
		run.failures = append(run.failures, Failure{
			TestID: x.Name, Location: location(x.File, x.Line),
			Expected: "the test passes", Actual: clip(x.Message, 2*maxMessage), Kind: k,
		})
	}
	if len(run.failures) == 0 {
		k, actual := KindAssertion, "no test passed"
		if rep.Passed > 0 {
			actual = "the tests passed but the command failed"
			if set.Failed(full) && res.ExitCode == 0 {
				actual = "the command exited 0 although a test failed"
			}
		}
		switch {
		case timedOut:
			k, actual = KindTimeout, firstLine(res.Output)
		case oom:
			k, actual = KindResource, firstLine(res.Output)
		case rep.Total() == 0:
			actual = "no tests ran"
		}
		run.failures = []Failure{{TestID: "test_command", Expected: "at least one test runs and every test passes", Actual: actual, Kind: k}}
	}
	return run, nil
}

// groupRan reports whether a sentinel group (a Go package folder, a Python
// test file) ran: some designed test of it was reported, passed or failed.
func groupRan(designed, unreported []string, group string) bool {
	for _, id := range designed {
		file, _, _ := strings.Cut(id, "::")
		in := file == group || (strings.HasSuffix(file, ".go") && path.Dir(file) == group)
		if in && !slices.Contains(unreported, id) {
			return true
		}
	}
	return false
}

// sentinels makes the check's sentinel tests (see package sentinel) for
// the suite and the test command's runner, and returns them with the
// files the tests folder holds while the check runs: the canonical suite
// with the sentinels laid over it.
func (c *Critic) sentinels(plan planner.Plan) (*sentinel.Set, []SuiteFile) {
	files := c.SuiteFiles()
	if len(files) == 0 {
		return &sentinel.Set{}, files
	}
	var seed []byte
	if c.sentinelSeed != nil {
		seed = c.sentinelSeed()
	}
	in := make([]sentinel.File, len(files))
	for i, f := range files {
		in[i] = sentinel.File{Path: f.Path, Content: f.Content}
	}
	set := sentinel.New(seed, testreport.FrameworkOf(commandArgv(plan.TestCommand)), in)
	for _, sf := range set.Files() {
		if i := slices.IndexFunc(files, func(f SuiteFile) bool { return f.Path == sf.Path }); i >= 0 {
			files[i].Content = sf.Content
		} else {
			files = append(files, SuiteFile{Path: sf.Path, Content: sf.Content})
		}
	}
	slices.SortFunc(files, func(a, b SuiteFile) int { return strings.Compare(a.Path, b.Path) })
	return set, files
}

// rawFor is a check's raw output for the model: the report without the
// sentinels, and the streams without a line that names one.
func rawFor(res tools.Result, rep testreport.Report, set *sentinel.Set) string {
	if set.Empty() {
		return rawOutput(res)
	}
	brief := rep
	brief.PassedTests, brief.Durations = nil, nil
	b, _ := json.Marshal(brief)
	res.Output = rep.Summary() + "; " + exitLine(res) + "; " + string(b)
	res.Stdout, res.Stderr = set.Scrub(res.Stdout), set.Scrub(res.Stderr)
	return rawOutput(res)
}

// notPassed returns the designed test ids that names (as a runner
// reports them) do not include.
func (c *Critic) notPassed(designed, names []string) []string {
	if len(designed) == 0 {
		return nil
	}
	m := &nameMatcher{passed: names, exists: c.exists, goPackage: c.goPackage}
	var out []string
	for _, id := range designed {
		if !m.passedByName(id) {
			out = append(out, id)
		}
	}
	return out
}

// notPassedWhy says why a designed test may be missing from a report.
func notPassedWhy(rep testreport.Report) string {
	switch {
	case rep.Passed > 0 && len(rep.PassedTests) == 0:
		return fmt.Sprintf("not reported as passed: the runner counted %d passed tests but named none "+
			"(run without the options that name them, or not the real runner: a module of the project may shadow it)", rep.Passed)
	case rep.Skipped > 0:
		return fmt.Sprintf("not reported as passed: %d tests were skipped", rep.Skipped)
	}
	return "not reported as passed: the test command did not run it " +
		"(a test binary that exited early, a folder left out, a runner the project's code replaced)"
}

// exists reports whether a workspace-relative path exists.
func (c *Critic) exists(p string) bool {
	_, err := c.ws.Root.Lstat(p)
	return err == nil
}

// goPackage is the import path of a workspace folder: the module path of
// the nearest go.mod at or above it (the suite's own first), "" if none.
func (c *Critic) goPackage(dir string) string {
	files := c.SuiteFiles()
	for d := dir; ; d = path.Dir(d) {
		mod := path.Join(d, "go.mod")
		var data []byte
		if i := slices.IndexFunc(files, func(f SuiteFile) bool { return f.Path == mod }); i >= 0 {
			data = []byte(files[i].Content)
		} else if b, err := c.ws.Root.ReadFile(mod); err == nil {
			data = b
		}
		if mp := goModulePath(data); mp != "" {
			rel := strings.TrimPrefix(strings.TrimPrefix(dir, d), "/")
			if d == "." {
				rel = dir
			}
			if rel == "" || rel == "." {
				return mp
			}
			return mp + "/" + rel
		}
		if d == "." || d == "/" || d == "" {
			return ""
		}
	}
}

// checkSuite reports the changes RestoreSuite undid as tampering: the
// round fails whatever the restored tests do, so that code which rewrites
// its tests never passes.
func (c *Critic) checkSuite(changes []SuiteChange) checkRun {
	run := checkRun{result: CheckResult{Name: CheckSuite}}
	s := c.Suite()
	switch {
	case len(c.SuiteFiles()) == 0:
		run.result.OK = true
		run.result.Detail = "skipped: no acceptance suite to compare the tests folder with"
	case len(changes) == 0:
		run.result.OK = true
		run.result.Detail = fmt.Sprintf("the tests folder %s/ holds suite version %d unchanged (%d files)", s.Dir, s.Version, len(s.Files))
	default:
		lines := make([]string, len(changes))
		for i, ch := range changes {
			lines[i] = ch.String()
			run.failures = append(run.failures, Failure{
				TestID: "tampering:" + ch.Path, Location: ch.Path,
				Expected: "the acceptance tests stay as the Critic wrote them: the project's code must not change " + s.Dir + "/",
				Actual:   ch.String() + "; restored from the run folder's copy", Kind: KindTampering,
			})
		}
		run.result.Detail = listDetail(fmt.Sprintf("tampering: %d changes to the acceptance tests in %s/ (suite version %d), each restored; "+
			"a round whose tests were changed fails whatever they report", len(changes), s.Dir, s.Version), lines)
	}
	run.raw = run.result.Detail
	return run
}

// resolver returns a function that turns a file name as a test runner
// printed it (often relative to its package folder) into a
// workspace-relative path when exactly one planned or acceptance test file
// fits; otherwise it keeps the name.
func (c *Critic) resolver(plan planner.Plan) func(string) string {
	var known []string
	return func(file string) string {
		if file == "" || strings.HasPrefix(file, "/") {
			return file
		}
		if _, err := c.ws.Root.Stat(file); err == nil {
			return file
		}
		if known == nil {
			known = plan.Files()
			_ = fs.WalkDir(c.ws.Root.FS(), plan.TestsFolder(), func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					known = append(known, p)
				}
				return nil
			})
		}
		match := ""
		for _, k := range known {
			if strings.HasSuffix(k, "/"+file) {
				if match != "" && match != k {
					return file
				}
				match = k
			}
		}
		if match == "" {
			return file
		}
		return match
	}
}

// commandRan tells a result of a command that ran from a refusal (denied,
// or arguments the tool rejected before running anything).
func commandRan(res tools.Result) bool {
	if res.Denied {
		return false
	}
	return res.OK || res.ExitCode != 0 || res.Stdout != "" || res.Stderr != "" ||
		strings.Contains(res.Output, "exit code") || strings.Contains(res.Output, "timed out") ||
		strings.Contains(res.Output, "out of memory")
}

// parseReport is the report run_tests made (Result.Tests); without one
// (another tool, or a result from before it had the field) it parses the
// streams.
func parseReport(res tools.Result) testreport.Report {
	if res.Tests != nil {
		return *res.Tests
	}
	return testreport.ParseExit("", res.Stdout, res.Stderr, res.ExitCode)
}

func (c *Critic) checkFiles(plan planner.Plan) checkRun {
	run := checkRun{result: CheckResult{Name: CheckFiles}}
	files := plan.Files()
	var probs []string
	for _, p := range files {
		var why string
		fi, err := c.ws.Root.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			why = "is missing"
		case err != nil:
			why = "cannot be read: " + errText(err)
		case fi.IsDir():
			why = "is a folder, not a file"
		case !fi.Mode().IsRegular():
			why = "is not a regular file"
		case fi.Size() == 0:
			why = "is empty"
		default:
			continue
		}
		probs = append(probs, p+" "+why)
		run.failures = append(run.failures, Failure{
			TestID: "file:" + p, Location: p, Expected: "the planned file exists and is not empty",
			Actual: p + " " + why, Kind: KindMissingFile,
		})
	}
	run.result.OK = len(probs) == 0
	if run.result.OK {
		run.result.Detail = fmt.Sprintf("all %d planned files exist and are not empty", len(files))
	} else {
		run.result.Detail = listDetail(fmt.Sprintf("%d of %d planned files are missing or empty", len(probs), len(files)), probs)
	}
	run.raw = run.result.Detail
	return run
}

func (c *Critic) checkCLI(ctx context.Context, plan planner.Plan) (checkRun, error) {
	run := checkRun{result: CheckResult{Name: CheckCLI}}
	if len(plan.CLI) == 0 {
		run.result.OK = true
		run.result.Detail = "skipped: the plan declares no command-line program"
		return run, nil
	}
	line := policy.QuoteArgv(append(slices.Clone(plan.CLI), "--help"))
	args, _ := json.Marshal(map[string]string{"command": line})
	res, err := c.gate.Call(ctx, c.view, tools.Call{ID: c.nextCallID(runCommandTool), Name: runCommandTool, Arguments: args})
	if err != nil {
		return run, fmt.Errorf("critic: run_command %q: %w", line, err)
	}
	run.raw = rawOutput(res)
	out := strings.TrimSpace(res.Stdout + res.Stderr)
	var why string
	switch {
	case res.Denied || !commandRan(res):
		why = "did not run: " + firstLine(res.Output)
	case res.ExitCode != 0 || !res.OK:
		why = exitLine(res)
		if out != "" {
			why += ": " + clip(firstLines(out, 3), maxMessage)
		}
	case out == "":
		why = "exited 0 but printed nothing"
	}
	if why == "" {
		run.result.OK = true
		run.result.Detail = fmt.Sprintf("%s: exit code 0, %d bytes of help", line, len(out))
		return run, nil
	}
	run.result.Detail = line + " " + why
	run.failures = []Failure{{TestID: "cli", Location: strings.Join(plan.CLI, " "),
		Expected: "--help exits 0 and prints usage", Actual: why, Kind: KindCLI}}
	return run, nil
}

func (c *Critic) checkStray(rules *strayRules) (checkRun, []string, error) {
	run := checkRun{result: CheckResult{Name: CheckStray}}
	stray, err := rules.findStray(c.ws.Root.FS())
	if err != nil {
		return run, nil, err
	}
	run.result.OK = len(stray) == 0
	if run.result.OK {
		run.result.Detail = "no stray files"
	} else {
		run.result.Detail = listDetail(fmt.Sprintf("%d stray paths (caches, temporary files or files outside the plan)", len(stray)), stray)
		for _, p := range stray {
			why := "outside the plan"
			if isCache(p) {
				why = "a cache or temporary file"
			}
			run.failures = append(run.failures, Failure{
				TestID: "stray:" + p, Location: p, Expected: "no files besides the planned ones",
				Actual: p + " is " + why + "; delete it", Kind: KindStrayFile,
			})
		}
	}
	run.raw = run.result.Detail
	return run, stray, nil
}

// cleanByProducts removes the caches and temporary files that appeared
// while the Critic ran its commands (stray now, not before), and any in the
// tests folder, which the Critic owns. Best effort: what cannot be removed
// shows as stray next round.
func (c *Critic) cleanByProducts(rules *strayRules, before []string, testsDir string) {
	fsys := c.ws.Root.FS()
	after, err := rules.findStray(fsys)
	if err != nil {
		return
	}
	var remove []string
	for _, p := range after {
		if !slices.Contains(before, p) && isCache(p) {
			remove = append(remove, strings.TrimSuffix(p, "/"))
		}
	}
	_ = fs.WalkDir(fsys, testsDir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil
		case d.IsDir() && p != testsDir && cacheDirs[d.Name()] && d.Name() != "node_modules":
			remove = append(remove, p)
			return fs.SkipDir
		case !d.IsDir() && tempFile.MatchString(d.Name()):
			remove = append(remove, p)
		}
		return nil
	})
	for _, p := range remove {
		_ = c.ws.Root.RemoveAll(p)
	}
}

// isCache reports whether a stray path is a cache folder or a cache or
// temporary file (rather than a file outside the plan).
func isCache(p string) bool {
	if strings.HasSuffix(p, "/") {
		return cacheDirs[pathBase(p)]
	}
	return tempFile.MatchString(pathBase(p))
}

func pathBase(p string) string {
	p = strings.TrimSuffix(p, "/")
	return p[strings.LastIndexByte(p, '/')+1:]
}

// kindOf maps a testreport kind (or, without one, the message) to a Kind.
func kindOf(k, msg string) Kind {
	switch k {
	case testreport.KindAssertion:
		return KindAssertion
	case testreport.KindRuntime:
		return KindRuntime
	case testreport.KindSyntax, testreport.KindBuild:
		return KindSyntax
	case testreport.KindTimeout:
		return KindTimeout
	}
	low := strings.ToLower(msg)
	switch {
	case strings.Contains(low, "timed out") || strings.Contains(low, "timeout"):
		return KindTimeout
	case strings.Contains(low, "out of memory") || strings.Contains(low, "memoryerror"):
		return KindResource
	case strings.Contains(low, "syntax") || strings.Contains(low, "undefined:") || strings.Contains(low, "build failed") ||
		strings.Contains(low, "cannot use") || strings.Contains(low, "importerror") || strings.Contains(low, "modulenotfounderror"):
		return KindSyntax
	case strings.Contains(low, "panic") || strings.Contains(low, "traceback") || strings.Contains(low, "exception"):
		return KindRuntime
	}
	return KindAssertion
}

func location(file string, line int) string {
	switch {
	case file == "":
		return ""
	case line > 0:
		return fmt.Sprintf("%s:%d", file, line)
	}
	return file
}

func exitLine(res tools.Result) string {
	out := strings.TrimSpace(res.Output)
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "exit code") || strings.HasPrefix(l, "timed out") || strings.HasPrefix(l, "killed") {
			if i := strings.Index(l, "; {"); i >= 0 {
				l = l[:i]
			}
			return l
		}
	}
	return fmt.Sprintf("exit code %d", res.ExitCode)
}

func rawOutput(res tools.Result) string {
	var b strings.Builder
	if res.Output != "" {
		b.WriteString(tailText(res.Output, maxRawOutput))
		b.WriteString("\n")
	}
	if res.Stdout != "" {
		b.WriteString("--- stdout ---\n")
		b.WriteString(tailText(res.Stdout, maxRawOutput))
		b.WriteString("\n")
	}
	if res.Stderr != "" {
		b.WriteString("--- stderr ---\n")
		b.WriteString(tailText(res.Stderr, maxRawOutput))
		b.WriteString("\n")
	}
	return b.String()
}

func listDetail(head string, items []string) string {
	var b strings.Builder
	b.WriteString(head)
	for i, it := range items {
		if i == maxDetailLines {
			fmt.Fprintf(&b, "\n… %d more", len(items)-i)
			break
		}
		b.WriteString("\n")
		b.WriteString(it)
	}
	return b.String()
}

func firstLine(s string) string { return firstLines(s, 1) }

func firstLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls) > n {
		ls = ls[:n]
	}
	return strings.TrimSpace(strings.Join(ls, " / "))
}

func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

func tailText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && s[i]&0xC0 == 0x80 {
		i++
	}
	return fmt.Sprintf("[… %d bytes cut …]\n", i) + s[i:]
}

func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
