package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/trioagent/trio/agent"
)

func newDiffCmd(g *globals, io stdio) *cobra.Command {
	var stat bool
	cmd := &cobra.Command{
		Use:   "diff RUN",
		Short: "Show what a run changed: a unified diff against the workspace as the run started",
		Long: `Diff compares the run's workspace, as it is now, with the snapshot the run
took of it when it started (runs/<id>/start/, taken once and kept on resume)
and prints a unified diff: created files against /dev/null, changed files
with three lines of context, deleted files. Binary files and files over
2 MiB are named without their lines. RUN is a run id under the runs folder,
or a run folder path.

Exit codes: 0 shown (also when nothing changed), 3 no such run, or a run
folder without a starting snapshot (made by an older version).`,
		Example: `  trio diff 20261130-172510-6eab9f
  trio diff --stat trio-demo/runs/20261130-172510-6eab9f
  trio diff RUN > change.patch`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(g.config)
			if err != nil {
				return err
			}
			dir, err := resolveRun(args[0], runsDir(g, cfg))
			if err != nil {
				return err
			}
			return showDiff(io.out, dir, stat)
		},
	}
	cmd.Flags().BoolVar(&stat, "stat", false, "only the files with their added and removed lines")
	return cmd
}

func showDiff(w io.Writer, dir string, stat bool) error {
	c, err := agent.Diff(dir)
	switch {
	case errors.Is(err, agent.ErrNoRun):
		return configError(notRunFolder(dir))
	case errors.Is(err, agent.ErrNoSnapshot), errors.Is(err, agent.ErrInvalidInput):
		return configError(err)
	case err != nil:
		return failure(err)
	}
	if c.Incomplete != "" {
		fmt.Fprintf(w, "# the starting snapshot is incomplete (%s): files it left out show as added\n", c.Incomplete)
	}
	if stat || len(c.Files) == 0 {
		diffStat(w, c)
		return nil
	}
	fmt.Fprint(w, c.Unified())
	return nil
}

// diffStat is a line per changed file and the totals.
func diffStat(w io.Writer, c *agent.Changeset) {
	if len(c.Files) == 0 {
		fmt.Fprintf(w, "no change in %s since run %s started\n", c.Workspace, c.RunID)
		return
	}
	for _, f := range c.Files {
		line := fmt.Sprintf("  %-8s %-48s +%-5d -%d", f.Status, f.Path, f.Added, f.Removed)
		if f.Note != "" {
			line += "  (" + f.Note + ")"
		}
		fmt.Fprintln(w, line)
	}
	add, del := c.Totals()
	fmt.Fprintf(w, "  %s, +%d -%d lines\n", fileCount(len(c.Files)), add, del)
}

func fileCount(n int) string {
	if n == 1 {
		return "1 file"
	}
	return fmt.Sprintf("%d files", n)
}
