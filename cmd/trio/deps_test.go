package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The shipped binary links no test fake: the demo and TRIO_SCRIPT runs are
// served by llm/replay, and llm/llmtest, telemetry/otlptest and the
// testing packages stay in tests (issue 31).
func TestBinaryLinksNoTestPackage(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), out)
	}
	for _, p := range deps {
		if strings.HasSuffix(p, "/llmtest") || strings.HasSuffix(p, "/otlptest") {
			t.Errorf("trio links the test package %s", p)
		}
	}
	// testing and net/http/httptest come in with the Temporal SDK, whose
	// internal package holds its test suite (it imports testify, which
	// imports them): allowed from there only.
	out, err = exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	sdkOnly := map[string]bool{"go.temporal.io/sdk/internal": true}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || sdkOnly[f[0]] || strings.HasPrefix(f[0], "github.com/stretchr/testify/") {
			continue
		}
		for _, imp := range f[1:] {
			if imp == "testing" || imp == "net/http/httptest" || imp == "github.com/stretchr/testify/mock" {
				t.Errorf("%s links the test package %s", f[0], imp)
			}
		}
	}
}
