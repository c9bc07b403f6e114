package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// trio.yaml's checks block reaches the run: with the lint check on, the
// demo's Critic lints the project (go vet passes, so the run completes)
// and report.md lists the lint check next to the tests.
func TestChecksConfigLintsTheDemo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "trio.yaml")
	if err := os.WriteFile(cfg, []byte("checks:\n  lint:\n    enabled: true\n  replan: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, runs := filepath.Join(dir, "ws"), filepath.Join(dir, "runs")
	r := trio(t, dir, nil, "demo", "--config", cfg, "--quiet", "--sandbox", "local", "--workspace", ws, "--runs-dir", runs)
	if r.code != exitOK {
		t.Fatalf("demo: exit %d\n%s", r.code, r.stderr)
	}
	ids, _ := os.ReadDir(runs)
	if len(ids) != 1 {
		t.Fatalf("runs: %v", ids)
	}
	md, err := os.ReadFile(filepath.Join(runs, ids[0].Name(), "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "check lint: ok") {
		t.Errorf("report.md shows no lint check:\n%s", md)
	}
}

// A bad checks block stops before the run, naming the key.
func TestChecksConfigErrors(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		"checks:\n  lint:\n    enabled: true\n    blocking: [eslint-ish]\n": "checks.lint.blocking",
		"checks:\n  review:\n    enabled: true\n    block_at: severe\n":     "checks.review.block_at",
		"checks:\n  review:\n    block_at: high\n":                          "checks.review",
	} {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "trio.yaml")
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		r := trio(t, dir, nil, "demo", "--config", cfg, "--quiet", "--sandbox", "local")
		if r.code != exitConfig || !strings.Contains(r.stderr, want) {
			t.Errorf("%q: exit %d, want %d naming %s:\n%s", body, r.code, exitConfig, want, r.stderr)
		}
	}
}
