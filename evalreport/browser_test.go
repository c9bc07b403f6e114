package evalreport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/trioagent/trio/eval"
	"github.com/trioagent/trio/evalreport"
	"github.com/trioagent/trio/internal/browsertest"
)

// browser is a headless Chromium context for one test, with every console
// error and uncaught exception collected (see browsertest).
func browser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	ctx := browsertest.New(t, "the eval report's browser test", 1600)
	var mu sync.Mutex
	var problems []string
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				problems = append(problems, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			problems = append(problems, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, msg))
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
				problems = append(problems, fmt.Sprintf("log %s (%s): %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(problems)
	}
}

// The report of a real eval in a real browser: it renders without a
// console error, the numbers shown are eval.json's, the charts have a bar
// per tag and a point per task, and the disagreement's link opens that
// run's view page.
func TestBrowserReport(t *testing.T) {
	ctx, problems := browser(t)
	out := realEval(t)
	path, err := evalreport.WriteFile(out, "")
	if err != nil {
		t.Fatal(err)
	}
	var rep eval.Report
	b, _ := os.ReadFile(filepath.Join(out, eval.ReportJSON))
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+path), chromedp.WaitVisible(`body[data-ready="1"]`)); err != nil {
		t.Fatal(err)
	}
	text := func(sel string) string {
		s, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		return s
	}
	count := func(sel string) int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	x := rep.Totals
	pass := text("#sum-pass-at-1")
	if want := fmt.Sprintf("%.3f", x.PassAt1); !strings.Contains(pass, want) || !strings.Contains(pass, fmt.Sprintf("%d/%d", x.HiddenPass, x.Tasks)) {
		t.Errorf("pass@1 row %q, eval.json %s (%d/%d)", pass, want, x.HiddenPass, x.Tasks)
	}
	if fs := text("#sum-false-success"); !strings.Contains(fs, fmt.Sprintf("%.3f", x.FalseCompletedRate)) || !strings.Contains(fs, fmt.Sprintf("%d/%d", x.FalseCompleted, x.Completed)) {
		t.Errorf("false success row %q, eval.json %.3f (%d/%d)", fs, x.FalseCompletedRate, x.FalseCompleted, x.Completed)
	}
	if ag := text("#sum-agreement"); !strings.Contains(ag, fmt.Sprintf("%.3f", x.Agreement)) {
		t.Errorf("agreement row %q, eval.json %.3f", ag, x.Agreement)
	}
	tags := map[string][2]int{}
	for _, r := range rep.Tasks {
		for _, tag := range r.Tags {
			c := tags[tag]
			c[1]++
			if r.Hidden.Pass {
				c[0]++
			}
			tags[tag] = c
		}
	}
	for tag, c := range tags {
		row := text(fmt.Sprintf(`#tags tr[data-tag=%q]`, tag))
		if !strings.Contains(row, fmt.Sprintf("%d/%d", c[0], c[1])) || !strings.Contains(row, fmt.Sprintf("%.3f", float64(c[0])/float64(c[1]))) {
			t.Errorf("tag %s row %q, eval.json %d/%d", tag, row, c[0], c[1])
		}
	}
	for _, r := range rep.Tasks {
		row := text(fmt.Sprintf(`#tasks tr[data-task=%q]`, r.ID))
		if !strings.Contains(row, fmt.Sprintf("%.4f", r.Cost)) {
			t.Errorf("task %s row %q, eval.json cost %.4f", r.ID, row, r.Cost)
		}
	}
	if bars, points := count("#tags-svg g.tag rect.bar"), count("#cost-svg g.task circle.point"); bars != len(tags) || points != len(rep.Tasks) {
		t.Errorf("%d tag bars (want %d), %d task points (want %d)", bars, len(tags), points, len(rep.Tasks))
	}
	dis := text(`#disagreements tr[data-task="py-intervals"]`)
	if !strings.Contains(dis, "COMPLETED") || !strings.Contains(dis, "fail") {
		t.Errorf("disagreement row %q", dis)
	}
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	shotPath := filepath.Join(os.TempDir(), "trio-eval-report.png")
	if d := os.Getenv("TRIO_SCREENSHOT_DIR"); d != "" {
		shotPath = filepath.Join(d, "trio-eval-report.png")
	}
	os.WriteFile(shotPath, shot, 0o644)
	t.Logf("screenshot: %s (%d bytes)", shotPath, len(shot))
	if p := problems(); len(p) > 0 {
		t.Errorf("the report page logged problems:\n%s", strings.Join(p, "\n"))
	}
	// The link opens the run's own page, which renders too.
	if err := chromedp.Do(ctx, chromedp.Click(`#disagreements tr[data-task="py-intervals"] a`, chromedp.NodeVisible),
		chromedp.WaitVisible(`#tools-section`)); err != nil {
		t.Fatal(err)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(loc, "/view.html") || !strings.Contains(text("#head"), "py-intervals") {
		t.Errorf("the link led to %s, whose header is %q", loc, text("#head"))
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the run's view page logged problems:\n%s", strings.Join(p, "\n"))
	}
}
