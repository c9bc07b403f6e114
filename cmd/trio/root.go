package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// Exit codes of every trio command.
const (
	exitOK          = 0
	exitFailed      = 1 // the checks failed, or the run gave up with a reason
	exitBudget      = 2 // a budget was spent
	exitConfig      = 3 // configuration or usage error
	exitInterrupted = 130
	// trio policy explain only.
	exitExplainAsk  = 10
	exitExplainDeny = 11
)

const exitCodesHelp = `Exit codes:
  0    success: the Critic's checks pass
  1    the checks failed, or the run gave up with a reason (repeated failure,
       invalid plan, model or sandbox failure; see the report)
  2    a budget was spent (steps, repair rounds, tokens, wall time, context)
  3    configuration or usage error (bad flag, trio.yaml or policy file, no
       model endpoint, containerd unreachable with --sandbox containerd, no
       isolating sandbox for an unattended run, a control file in the
       workspace changed since the last session: --trust-config)
  130  interrupted (Ctrl-C): the checkpoint is written; continue with
       trio resume RUN`

// stdio is where a command reads and writes; in is a file so that it can
// be tested for a terminal.
type stdio struct {
	in       *os.File
	out, err io.Writer
}

// exitError carries an exit code; a nil err prints nothing more.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit code %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// configError is a configuration or usage problem (exit code 3).
func configError(err error) error { return &exitError{code: exitConfig, err: err} }

// failure is a problem while running (exit code 1).
func failure(err error) error { return &exitError{code: exitFailed, err: err} }

// execute runs the trio command line and returns its exit code.
func execute(ctx context.Context, args []string, io stdio) int {
	root := newRoot(io)
	root.SetArgs(args)
	root.SetIn(io.in)
	root.SetOut(io.out)
	root.SetErr(io.err)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(io.err, "trio:", ee.err)
		}
		return ee.code
	}
	// Cobra's own errors: unknown command or flag, wrong number of arguments.
	fmt.Fprintf(io.err, "trio: %v\nRun '%s --help' for usage.\n", err, cmd.CommandPath())
	return exitConfig
}

// globals are the flags every command shares.
type globals struct {
	config  string
	runsDir string
	// envFile is --env-file: a .env to load into Trio's own process.
	envFile string
}

func newRoot(io stdio) *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "trio",
		Short: "Turn a written goal into a working, tested project: Planner, Worker and Critic over one tool gate",
		Long: `Trio turns a written goal into a working multi-file project without a person at
the keyboard. A Planner writes a plan, a Worker carries it out by calling
tools, and a Critic checks the result with real tests and sends the Worker
back until the checks pass. Every tool call passes one policy gate; commands
run in a sandbox with no network: containerd when it answers, else the
userns sandbox (bubblewrap, no root needed).

Start with the offline demo (no API key needed):

  trio demo

` + exitCodesHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.config, "config", "", "trio.yaml configuration file (default ./trio.yaml when it exists)")
	root.PersistentFlags().StringVar(&g.runsDir, "runs-dir", "", "folder of run folders (default runs_dir of trio.yaml, else ./runs)")
	root.PersistentFlags().StringVar(&g.envFile, "env-file", "", "load KEY=VALUE lines of a .env file (default ./.env) into Trio's own environment, never a sandbox's; a variable already set wins")
	root.PersistentFlags().Lookup("env-file").NoOptDefVal = ".env"
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if g.envFile == "" {
			return nil
		}
		if err := loadEnvFile(g.envFile); err != nil {
			return configError(fmt.Errorf("--env-file: %w", err))
		}
		return nil
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return configError(fmt.Errorf("%w\nRun '%s --help' for usage", err, c.CommandPath()))
	})
	root.AddCommand(
		withTemporalRun(newRunCmd(g, io), g, io),
		newDemoCmd(g, io),
		newResumeCmd(g, io),
		newInspectCmd(g, io),
		newDiffCmd(g, io),
		newViewCmd(g, io),
		newEvalCmd(g, io),
		newToolsCmd(g, io),
		newMCPCmd(g, io),
		newPolicyCmd(io),
		newSandboxCmd(g, io),
		newVersionCmd(io),
		newWorkerCmd(g, io),
		newStatusCmd(io),
		newConfirmCmd(io),
	)
	return root
}
