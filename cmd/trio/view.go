package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/trioagent/trio/viewer"
)

func newViewCmd(g *globals, io stdio) *cobra.Command {
	var out string
	var open bool
	cmd := &cobra.Command{
		Use:   "view RUN",
		Short: "Write a run as one self-contained HTML page (timeline, model and tool calls, verdicts, plan, tokens)",
		Long: `View reads a run folder (RUN is a run id under the runs folder, or a path)
and writes one HTML file that needs no network: a timeline of the roles with
durations, every model call with its tokens (and cost when priced), every
tool call with its arguments, the gate's decision and rule and its output
(click to expand), the Critic's verdicts and findings, the plan with each
step's state, a chart of prompt tokens per call marking the summaries, and
the files written. It prints the file's path.

Exit codes: 0 written, 3 no such run (or not a run folder), 1 the file could
not be written.`,
		Example: `  trio view runs/20261130-172510-6eab9f        # writes runs/…/view.html
  trio view --open 20261130-172510-6eab9f
  trio view --out run.html trio-demo/runs/20261130-172510-6eab9f`,
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
			if _, err := inspectRun(dir); err != nil {
				return err
			}
			path, err := viewer.WriteFile(dir, out)
			if err != nil {
				return failure(err)
			}
			fmt.Fprintln(io.out, abs(path))
			if open {
				if err := openBrowser(abs(path)); err != nil {
					fmt.Fprintf(io.err, "trio: %v; open %s yourself\n", err, abs(path))
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the HTML file to write (default RUN/view.html)")
	cmd.Flags().BoolVar(&open, "open", false, "open the page in a browser ($BROWSER, else xdg-open or open)")
	return cmd
}

// openBrowser starts a browser on path without waiting for it.
func openBrowser(path string) error {
	var candidates [][]string
	if b := os.Getenv("BROWSER"); b != "" {
		candidates = append(candidates, []string{b, path})
	}
	if runtime.GOOS == "darwin" {
		candidates = append(candidates, []string{"open", path})
	}
	candidates = append(candidates, []string{"xdg-open", path})
	for _, c := range candidates {
		bin, err := exec.LookPath(c[0])
		if err != nil {
			continue
		}
		cmd := exec.Command(bin, c[1:]...)
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("--open: %s: %w", c[0], err)
		}
		go cmd.Wait()
		return nil
	}
	return errors.New("--open: no browser found ($BROWSER is unset and there is no xdg-open)")
}
