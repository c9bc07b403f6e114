package main

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/trioagent/trio/eval"
)

func newEvalCompareCmd(io stdio) *cobra.Command {
	var asJSON bool
	var seed uint64
	cmd := &cobra.Command{
		Use:   "compare A B",
		Short: "Compare two evals: per-task changes, the paired difference in pass rate and cost, McNemar's test",
		Long: `Compare reads two evals (output folders of trio eval, or their eval.json) and
prints, B minus A:

  - each task's passed runs in A and B and what changed (fixed, broken,
    better, worse, same, only in A, only in B), with the mean cost;
  - the mean over the tasks both ran of the difference in pass rate, with a
    95% paired bootstrap interval over tasks (seeded by --seed);
  - McNemar's exact test on the runs paired by task and sample number
    (sample k of A with sample k of B): the discordant pairs and p-value;
  - the mean difference in cost and tokens per task, with the same interval.

--json writes the comparison as one JSON object instead.

Exit codes:
  0    compared
  3    usage error: A or B is not an eval output folder or eval.json`,
		Example: `  trio eval compare runs/eval-gpt-4.1 runs/eval-gpt-5
  trio eval compare a/eval.json b/eval.json --json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := eval.LoadReport(args[0])
			if err != nil {
				return configError(err)
			}
			b, err := eval.LoadReport(args[1])
			if err != nil {
				return configError(err)
			}
			c := eval.Compare(a, b, seed, eval.DefaultResamples)
			c.A.Path, c.B.Path = args[0], args[1]
			if asJSON {
				enc := json.NewEncoder(io.out)
				enc.SetIndent("", "  ")
				return enc.Encode(c)
			}
			_, err = io.out.Write([]byte(c.Text()))
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "write the comparison as JSON")
	cmd.Flags().Uint64Var(&seed, "seed", eval.DefaultSeed, "seed of the paired bootstrap")
	return cmd
}
