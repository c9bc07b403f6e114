package containerd_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/containerd"
)

// ExampleNew runs one command in a run's container, falling back to the
// local sandbox when containerd is not there (what `--sandbox auto` does).
func ExampleNew() {
	ctx := context.Background()
	limits := sandbox.Limits{Timeout: 2 * time.Minute, Memory: 1 << 30, CPUs: 1, Pids: 256, Output: 64 << 10}
	workspace := "/path/to/workspace"

	var sb sandbox.Sandbox
	if err := containerd.Available(ctx, ""); err == nil {
		sb, err = containerd.New(ctx, sandbox.RunSpec{Workspace: workspace, RunID: "run-42", Limits: limits})
		if err != nil {
			fmt.Println(err)
			return
		}
	} else if errors.Is(err, containerd.ErrUnavailable) {
		local, err := sandbox.NewLocal(workspace, limits)
		if err != nil {
			fmt.Println(err)
			return
		}
		sb = local
	}
	defer sb.Close()
	res, err := sb.Exec(ctx, sandbox.Command{Argv: []string{"go", "test", "./..."}})
	fmt.Println(res.ExitCode, res.TimedOut, res.OOMKilled, err)
}
