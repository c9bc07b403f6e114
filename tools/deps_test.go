package tools_test

import (
	"os/exec"
	"strings"
	"testing"
)

// Package tools yields provider-neutral definitions (llm.ToolDef, from a
// leaf package), so building tools links neither model SDK.
func TestToolsLinkNoModelSDK(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 20 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), out)
	}
	for _, p := range deps {
		if strings.Contains(p, "openai-go") || strings.Contains(p, "anthropic-sdk-go") || strings.HasSuffix(p, "trio/llm") {
			t.Errorf("tools links %s", p)
		}
	}
}
