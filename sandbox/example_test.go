package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/userns"
)

func ExampleNewLocal() {
	dir, _ := os.MkdirTemp("", "workspace-")
	defer os.RemoveAll(dir)

	sb, err := sandbox.NewLocal(dir, sandbox.Limits{Timeout: 10 * time.Second, Output: 1 << 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()

	res, err := sb.Exec(context.Background(), sandbox.Command{Argv: []string{"sh", "-c", "echo hello; exit 2"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("isolated=%v exit=%d stdout=%q\n", sb.Info().Isolated, res.ExitCode, res.Stdout)
	// Output: isolated=false exit=2 stdout="hello\n"
}

// An embedder opens a kind by name, as database/sql opens a driver
// (importing the kind's package registers it): what the run gives every
// kind in the RunSpec, the kind's own settings as its Settings.
func ExampleOpen() {
	ctx := context.Background()
	sb, err := sandbox.Open(ctx, userns.Kind, sandbox.RunSpec{
		Workspace: "./project",
		Limits:    sandbox.Limits{Timeout: time.Minute, Memory: 1 << 30, Pids: 256},
		Settings:  userns.Config{DenyTCP: true}, // nil: the kind's defaults
	})
	if errors.Is(err, sandbox.ErrUnavailable) {
		fmt.Println(err) // says what to install or choose instead
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()
	res, err := sb.Exec(ctx, sandbox.Command{Argv: []string{"go", "test", "./..."}})
	if err != nil {
		fmt.Println(err) // the sandbox failed, not the command
		return
	}
	fmt.Println(res.ExitCode, sb.Info().Summary())
}
