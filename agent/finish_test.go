package agent_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trioagent/trio/agent"
)

// finish_step's note is described in full: a comma in a jsonschema tag
// must be escaped, or the description stops there.
func TestFinishStepSchemaDescription(t *testing.T) {
	t.Parallel()
	raw, err := json.Marshal(agent.FinishStep().Schema())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "What the step did, in a sentence or two.") {
		t.Errorf("schema: %s", raw)
	}
}
