package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/trioagent/trio/sandbox"
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
