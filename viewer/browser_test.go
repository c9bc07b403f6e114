package viewer_test

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trioagent/trio/internal/browsertest"
	"github.com/trioagent/trio/viewer"
)

// browser is a headless Chromium context for one test (see browsertest).
func browser(t *testing.T) context.Context {
	t.Helper()
	return browsertest.New(t, "the viewer's browser test", 2000)
}

// screenshotPath is where the browser test leaves its screenshot:
// $TRIO_SCREENSHOT_DIR, else the system's temporary folder.
func screenshotPath(name string) string {
	dir := os.Getenv("TRIO_SCREENSHOT_DIR")
	if dir == "" {
		dir = os.TempDir()
	}
	return filepath.Join(dir, name)
}

// The demo's page in a real browser: the timeline shows the plan's steps,
// the failing verdict and the repair round; a tool call's output is not
// in the page until its line is clicked; the screenshot is not blank.
func TestBrowserDemo(t *testing.T) {
	ctx := browser(t)
	out := filepath.Join(t.TempDir(), "view.html")
	if _, err := viewer.WriteFile(demoRun(t), out); err != nil {
		t.Fatal(err)
	}
	const runTests = `#tools .toolcall[data-tool="run_tests"]`
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+out), chromedp.WaitVisible(`body[data-ready="1"]`)); err != nil {
		t.Fatal(err)
	}
	timeline := must(chromedp.Run(ctx, chromedp.Text(`#timeline`)))(t)
	steps := must(chromedp.Run(ctx, chromedp.Text(`#steps`)))(t)
	verdicts := must(chromedp.Run(ctx, chromedp.Text(`#verdicts`)))(t)
	stepStates := must(chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#steps li")].map(li => li.dataset.state)`)))(t)
	outputsBefore := must(chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("pre.output").length`)))(t)
	if err := chromedp.Do(ctx, chromedp.Click(runTests+` button`, chromedp.NodeVisible), chromedp.WaitVisible(runTests+`.open pre.output`)); err != nil {
		t.Fatal(err)
	}
	outputText := must(chromedp.Run(ctx, chromedp.Text(runTests+`.open pre.output`)))(t)
	outputsAfter := must(chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("pre.output").length`)))(t)
	if err := chromedp.Do(ctx, chromedp.ScrollIntoView(`#head`)); err != nil {
		t.Fatal(err)
	}
	shot := must(chromedp.Run(ctx, chromedp.CaptureScreenshot()))(t)
	for _, want := range []string{"step 1: Converter package", "step 2: Command", "check", "repair 1", "fail", "pass"} {
		if !strings.Contains(timeline, want) {
			t.Errorf("the timeline lacks %q: %q", want, timeline)
		}
	}
	if !strings.Contains(steps, "Converter package") || !strings.Contains(steps, "Command") || strings.Join(stepStates, ",") != "done,done" {
		t.Errorf("plan: %q, states %v", steps, stepStates)
	}
	if !strings.Contains(verdicts, "TestRenderInline/two_bold_spans") || !strings.Contains(verdicts, "Check 1") {
		t.Errorf("verdicts: %q", verdicts)
	}
	if outputsBefore != 0 || outputsAfter != 1 {
		t.Errorf("outputs in the page: %d before the click, %d after; want 0 then 1", outputsBefore, outputsAfter)
	}
	if !strings.Contains(outputText, "ok") && !strings.Contains(outputText, "PASS") && !strings.Contains(outputText, "FAIL") {
		t.Errorf("run_tests output: %q", outputText)
	}
	path := screenshotPath("trio-viewer-demo.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	checkNotBlank(t, shot)
	// The expanded tool call, element by element.
	toolShot := must(chromedp.Run(ctx, chromedp.Screenshot(runTests+`.open`)))(t)
	toolPath := screenshotPath("trio-viewer-demo-tool.png")
	if err := os.WriteFile(toolPath, toolShot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the expanded tool call: %s", toolPath)
	checkNotBlank(t, toolShot)
	// A file's diff against the run's start, opened by its button.
	if err := chromedp.Do(ctx, chromedp.Click(`#files button.diff-toggle`, chromedp.NodeVisible)); err != nil {
		t.Fatal(err)
	}
	diff := must(chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const p = document.querySelector("#files button.diff-toggle").parentElement.querySelector("pre.diff"); return p.hidden ? "" : p.textContent; })()`)))(t)
	added := must(chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#files pre.diff span.add").length`)))(t)
	if !strings.Contains(diff, "--- /dev/null") || !strings.Contains(diff, "+++ b/") || added == 0 {
		t.Errorf("the first file's diff (%d added lines shown): %q", added, diff)
	}
}

// checkNotBlank decodes the PNG and wants a good share of pixels that are
// not the page's white background, in many colours.
func checkNotBlank(t *testing.T, shot []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	b := img.Bounds()
	var ink int
	colours := map[uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r>>8 < 240 || g>>8 < 240 || bl>>8 < 240 {
				ink++
			}
			colours[(r>>12)<<8|(g>>12)<<4|bl>>12] = true
		}
	}
	total := (b.Dx() / 2) * (b.Dy() / 2)
	t.Logf("screenshot %dx%d: %.1f%% non-background pixels, %d colours", b.Dx(), b.Dy(), 100*float64(ink)/float64(total), len(colours))
	if ink < total/50 || len(colours) < 20 {
		t.Errorf("the screenshot looks blank: %d of %d sampled pixels are not background, %d colours", ink, total, len(colours))
	}
}

// A 500-call run's page renders in the browser, every call listed, its
// outputs still unparsed; the time it took is logged.
func TestBrowserLargeRun(t *testing.T) {
	ctx := browser(t)
	path, err := viewer.WriteFile(bigRun(t, 500), "")
	if err != nil {
		t.Fatal(err)
	}
	// Start the browser first, so that only the page is timed.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+path), chromedp.WaitVisible(`body[data-ready="1"]`)); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	count := func(sel string) int {
		return must(chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+strconv.Quote(sel)+`).length`)))(t)
	}
	tools, bars, summaries, outputs := count("#tools .toolcall"), count("#chart rect.bar"), count("#chart .summary-line"), count("pre.output")
	t.Logf("500-call page ready in %s", took)
	if tools != 500 || bars != 500 || summaries != 10 || outputs != 0 {
		t.Errorf("%d tool calls, %d bars, %d summary marks, %d outputs built", tools, bars, summaries, outputs)
	}
	// How promptly is logged, not asserted: a timed assertion fails on a
	// loaded machine and proves nothing on a quiet one.
}

// must is v, failing the test on err.
func must[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
