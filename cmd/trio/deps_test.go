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
		if strings.HasSuffix(p, "/llmtest") || strings.HasSuffix(p, "/otlptest") || p == "testing" || p == "net/http/httptest" {
			t.Errorf("trio links the test package %s", p)
		}
	}
}
