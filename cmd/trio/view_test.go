package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// trio view writes the run's page into its folder (or --out), prints its
// path and, with --open, hands it to $BROWSER; a folder without a run
// exits 3.
func TestView(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if r := trio(t, dir, nil, "demo", "--sandbox", "local", "--quiet"); r.code != exitOK {
		t.Fatalf("demo: exit %d\n%s", r.code, r.stderr)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "trio-demo", "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("runs: %v", runs)
	}
	id := filepath.Base(runs[0])
	r := trio(t, dir, nil, "view", "--runs-dir", filepath.Join("trio-demo", "runs"), id)
	want := filepath.Join(runs[0], "view.html")
	if r.code != exitOK || strings.TrimSpace(r.stdout) != want {
		t.Fatalf("view: exit %d, stdout %q, want %s\n%s", r.code, r.stdout, want, r.stderr)
	}
	page, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"<title>trio run " + id + "</title>", `"verdict":"fail"`, `"name":"repair 1"`, `"title":"Converter package"`} {
		if !strings.Contains(string(page), s) {
			t.Errorf("the page lacks %s", s)
		}
	}

	// --open runs $BROWSER with the page.
	// A pipe: reading it waits for the browser, which trio does not wait
	// for, to have written it.
	got := filepath.Join(dir, "opened")
	if err := syscall.Mkfifo(got, 0o600); err != nil {
		t.Fatal(err)
	}
	browser := filepath.Join(dir, "browser.sh")
	os.WriteFile(browser, []byte("#!/bin/sh\necho \"$1\" > "+got+"\n"), 0o755)
	out := filepath.Join(dir, "run.html")
	r = trio(t, dir, cleanEnv("BROWSER="+browser), "view", "--open", "--out", out, runs[0])
	if r.code != exitOK {
		t.Fatalf("view --open: exit %d\n%s", r.code, r.stderr)
	}
	opened, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(opened)) != out {
		t.Errorf("$BROWSER got %q, want %s", opened, out)
	}

	// Without a browser, --open says so and the page is still written.
	r = trio(t, dir, cleanEnv("BROWSER=", "PATH=/nonexistent"), "view", "--open", runs[0])
	if r.code != exitOK || !strings.Contains(r.stderr, "--open: no browser found") {
		t.Errorf("view --open without a browser: exit %d\n%s", r.code, r.stderr)
	}

	if r := trio(t, dir, nil, "view", t.TempDir()); r.code != exitConfig || !strings.Contains(r.stderr, "is not a run folder") {
		t.Errorf("view of an empty folder: exit %d\n%s", r.code, r.stderr)
	}
}
