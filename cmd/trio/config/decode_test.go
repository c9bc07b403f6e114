package config

import (
	"strings"
	"testing"
)

// A file with several mistakes names every one, each with its line, in
// line order: unknown keys and wrong types at any depth as well as bad
// values, which are checked for every key that decodes.
func TestParseReportsEveryMistake(t *testing.T) {
	t.Parallel()
	src := "endpoint:\n  kindd: foo\n  timeout: 1x\nbudgets:\n  max_stepz: 1\n  max_steps: abc\nwindow:\n  keep_rounds: 1\nmax_tokens: -4\nbogus: 1\n"
	_, err := Parse("trio.yaml", []byte(src))
	if err == nil {
		t.Fatal("no error")
	}
	want := []string{
		`trio.yaml:2: unknown field "kindd"`,
		`trio.yaml:3: endpoint.timeout: want a positive duration`,
		`trio.yaml:5: unknown field "max_stepz"`,
		`trio.yaml:6: cannot unmarshal string`,
		`trio.yaml:9: max_tokens: want a whole number`,
		`trio.yaml:10: unknown field "bogus"`,
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d errors, want %d:\n%v", len(lines), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("error %d = %q, want it to start with %q", i+1, lines[i], w)
		}
	}
}

// Decoding key by key keeps every key of a nested block.
func TestParseKeyByKeyKeepsNestedKeys(t *testing.T) {
	t.Parallel()
	f, err := Parse("trio.yaml", []byte("endpoint:\n  kind: anthropic\n  timeout: 30s\n  stream: true\nbudgets:\n  max_steps: 5\n  max_tokens: 100\nmax_tokens: 7\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Endpoint.Kind != "anthropic" || f.Endpoint.Timeout.Duration.String() != "30s" || !f.Endpoint.Stream ||
		f.Budgets.MaxSteps != 5 || f.Budgets.MaxTokens != 100 || f.MaxTokens != 7 {
		t.Errorf("parsed %+v", f)
	}
}
