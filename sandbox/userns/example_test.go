package userns_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/userns"
)

// An embedder opens the sandbox on a workspace with its path rules and
// limits, runs commands in it, and closes it. Its own program is the init
// helper: nothing to call from main.
func ExampleNew() {
	ctx := context.Background()
	if err := userns.Available(ctx, ""); errors.Is(err, userns.ErrUnavailable) {
		log.Print(err) // says how to install bwrap or enable user namespaces
		return
	}
	sb, err := userns.New(ctx, sandbox.RunSpec{
		Workspace: "./project",
		Limits:    sandbox.Limits{Timeout: time.Minute, Memory: 1 << 30, Pids: 256, Disk: 1 << 30},
		PathRules: func(rel string) sandbox.Access {
			switch {
			case rel == ".env", rel == ".git", strings.HasPrefix(rel, ".git/"):
				return sandbox.Hidden
			case rel == "tests", strings.HasPrefix(rel, "tests/"):
				return sandbox.ReadOnly
			}
			return sandbox.Writable
		},
		Settings: userns.Config{DenyTCP: true}, // the kind's own; nil: its defaults
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close()
	res, err := sb.Exec(ctx, sandbox.Command{Argv: []string{"go", "test", "./..."}})
	if err != nil {
		log.Fatal(err) // the sandbox failed, not the command
	}
	fmt.Println(res.ExitCode, sb.Info().Summary())
}
