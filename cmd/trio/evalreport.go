package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/trioagent/trio/evalreport"
)

func newEvalReportCmd(_ *globals, io stdio) *cobra.Command {
	var out string
	var open bool
	cmd := &cobra.Command{
		Use:   "report OUT",
		Short: "Write an eval's results as one self-contained HTML page",
		Long: `Report reads the eval output folder OUT (eval.json and the task folders
under it) and writes one HTML file that needs no network: the hidden-test pass
rate per tag with its 95 % interval, each task's mean cost (or tokens, when
nothing is priced) against its pass rate as a chart, and every run where the
Critic's verdict and the hidden tests disagree, linked by a relative path to
that run's trio view page (written beside the run as view.html). The rates
and intervals are eval.json's where it has them; an eval.json without
statistics gets Wilson's intervals computed from its runs. It prints the
file's path.

Exit codes: 0 written, 3 OUT holds no readable eval.json, 1 the file could
not be written.`,
		Example: `  trio eval report runs/eval-trio-small            # writes runs/eval-trio-small/report.html
  trio eval report --out eval.html --open runs/eval-trio-small`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := evalreport.WriteFile(args[0], out)
			switch {
			case errors.Is(err, evalreport.ErrNoEval):
				return configError(err)
			case err != nil:
				return failure(err)
			}
			fmt.Fprintln(io.out, path)
			if open {
				if err := openBrowser(path); err != nil {
					fmt.Fprintf(io.err, "trio: %v; open %s yourself\n", err, path)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the HTML file to write (default OUT/report.html)")
	cmd.Flags().BoolVar(&open, "open", false, "open the page in a browser ($BROWSER, else xdg-open or open)")
	return cmd
}
