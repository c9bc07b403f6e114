package tools_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trioagent/trio/tools"
)

const calcGo = "package calc\n\nfunc Add(a, b int) int { return a + b }\n"

func TestRunTestsGo(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{
		"go.mod":  "module example.com/calc\n\ngo 1.22\n",
		"calc.go": calcGo,
		"calc_test.go": "package calc\n\nimport \"testing\"\n\n" +
			"func TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n\n" +
			"func TestWrong(t *testing.T) {\n\tif Add(2, 2) != 5 {\n\t\tt.Errorf(\"Add(2, 2) = %d, want 5\", Add(2, 2))\n\t}\n}\n",
	})
	// Detected: go test ./... with -json added.
	res, eff := run(t, ws, tools.RunTestsName, obj{})
	if len(eff) != 1 || eff[0].Kind != tools.EffectExec || eff[0].Command.Line != "go test -json ./..." {
		t.Fatalf("effects = %+v", eff)
	}
	if res.OK || !strings.Contains(res.Output, "go: 1 passed, 1 failed") {
		t.Fatalf("result = %+v", res)
	}
	js := res.Output[strings.Index(res.Output, "{"):]
	var rep struct {
		Passed, Failed int
		Failures       []struct {
			Name, File, Message string
			Line                int
		}
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatalf("report JSON: %v in %q", err, js)
	}
	if rep.Passed != 1 || rep.Failed != 1 || len(rep.Failures) != 1 {
		t.Fatalf("report = %+v", rep)
	}
	f := rep.Failures[0]
	if !strings.Contains(f.Name, "TestWrong") || !strings.HasSuffix(f.File, "calc_test.go") || f.Line != 13 || !strings.Contains(f.Message, "want 5") {
		t.Errorf("failure = %+v", f)
	}
	if res.Stdout != "" {
		t.Errorf("raw -json stdout passed to the model: %d bytes", len(res.Stdout))
	}

	// An explicit command that passes; -json is not added twice.
	res, eff = run(t, ws, tools.RunTestsName, obj{"command": "go test -json -run TestAdd ."})
	if !res.OK || eff[0].Command.Line != "go test -json -run TestAdd ." || !strings.Contains(res.Output, "1 passed, 0 failed") {
		t.Errorf("passing run = %+v %+v", res, eff)
	}
}

func TestRunTestsNothingDetected(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"notes.txt": "x"})
	res, _ := run(t, ws, tools.RunTestsName, obj{})
	if !strings.Contains(res.Output, `argument "command": required here`) {
		t.Errorf("result = %+v", res)
	}
}
