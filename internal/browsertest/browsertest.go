// Package browsertest starts headless Chromium for the tests of Trio's
// HTML pages (trio view, trio eval report).
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// New is a headless Chromium context for one test, with a window height
// pixels tall; what names the test in the failure. Without Chromium the
// test skips, except in CI (CI=true), where it fails: CI installs
// Debian's chromium so that the browser tests run.
func New(t *testing.T, what string, height int) context.Context {
	t.Helper()
	var bin string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is not installed; CI must install it (apt-get install chromium) for %s", what)
		}
		t.Skip("chromium is not installed (apt-get install chromium); with CI=true this test fails instead")
	}
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]), chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.Headless,
		chromedp.DisableGPU, chromedp.WindowSize(1400, height), chromedp.UserDataDir(t.TempDir()))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelC := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelC(); cancelB(); cancelA() })
	return ctx
}
