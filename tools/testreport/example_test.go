package testreport_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/trioagent/trio/tools/testreport"
)

func ExampleParseExit() {
	stdout := `.F                                                                       [100%]
=================================== FAILURES ===================================
___________________________________ test_add ___________________________________

    def test_add():
>       assert add(2, 2) == 5
E       assert 4 == 5
E        +  where 4 = add(2, 2)

tests/test_calc.py:7: AssertionError
=========================== short test summary info ============================
FAILED tests/test_calc.py::test_add - assert 4 == 5
1 failed, 1 passed in 0.02s
`
	argv := []string{"python3", "-m", "pytest", "-q"}
	r := testreport.ParseExit(testreport.FrameworkOf(argv), stdout, "", 1)
	fmt.Println(r.Summary(), r.OK())
	for _, f := range r.Failures {
		fmt.Printf("%s at %s:%d (%s)\n%s\n", f.Name, f.File, f.Line, f.Kind, f.Message)
	}
	// Output:
	// pytest: 1 passed, 1 failed, 0 skipped false
	// tests/test_calc.py::test_add at tests/test_calc.py:7 (assertion)
	// assert 4 == 5
	//  +  where 4 = add(2, 2)
}

func ExampleDetect() {
	dir, _ := os.MkdirTemp("", "detect")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/m\n"), 0o644)

	argv, framework, ok := testreport.Detect(os.DirFS(dir))
	fmt.Println(testreport.WithGoJSON(argv), framework, ok)
	// Output: [go test -json ./...] go true
}
