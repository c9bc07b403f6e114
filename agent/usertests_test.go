package agent_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/llm"
)

func TestWithTestsNeedsFiles(t *testing.T) {
	t.Parallel()
	m, err := llm.ParseScript("empty.yaml", []byte("roles: {planner: [{content: unused}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	os.MkdirAll(filepath.Join(empty, "__pycache__"), 0o755)
	os.WriteFile(filepath.Join(empty, "__pycache__", "x.pyc"), []byte("x"), 0o644)
	for _, dir := range []string{empty, filepath.Join(empty, "missing")} {
		_, err := agent.New(m, nil, agent.WithTests(dir, false))
		if !errors.Is(err, agent.ErrInvalidOption) || !strings.Contains(err.Error(), dir) {
			t.Errorf("WithTests(%s): %v, want ErrInvalidOption naming the folder", dir, err)
		}
	}
}
