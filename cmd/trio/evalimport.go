package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/trioagent/trio/eval"
)

func newEvalImportCmd(_ *globals, io stdio) *cobra.Command {
	var opts eval.ImportOptions
	cmd := &cobra.Command{
		Use:   "import FORMAT FILE.jsonl OUTDIR",
		Short: "Turn a HumanEval- or MBPP-shaped JSONL file into an eval suite",
		Long: `Import reads FILE.jsonl in a published task shape and writes a suite in
Trio's format to OUTDIR (which must not exist, or be empty):

  humaneval  task_id, prompt, canonical_solution, test (defining
             check(candidate)) and entry_point on each line
  mbpp       task_id, text, code, test_list (assert statements),
             test_setup_code and challenge_test_list on each line

Each task's goal asks for solution.py with the entry point (HumanEval: the
prompt's stub; MBPP: the text, the function the first assert calls and
that assert as an example). Its hidden tests are a unittest file that checks
the entry point is a function of solution.py and runs the task's test code
(HumanEval: check(entry point); MBPP: every assert of test_list and
challenge_test_list, each a test, after test_setup_code).

Every bad line is reported as FILE:LINE with what is wrong, and then nothing
is written. --reference-replay gives each task a replay.yaml in which the
Worker writes the line's reference solution: trio eval OUTDIR then checks,
offline, that every reference passes its hidden tests.

Exit codes: 0 written, 3 a bad line, format or folder (nothing written), 1
the suite could not be written.`,
		Example: `  trio eval import humaneval problems.jsonl evals-he/
  trio eval import mbpp mbpp.jsonl evals-mbpp/ --reference-replay && trio eval evals-mbpp/`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			suite, err := eval.Import(args[0], args[1], args[2], opts)
			if err != nil {
				return configError(err)
			}
			fmt.Fprintf(io.out, "%s: %d tasks of %s imported as suite %s\n", abs(suite.Dir), len(suite.Tasks), args[1], suite.Name)
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.Name, "name", "", "the suite's name (default the file's name without .jsonl)")
	cmd.Flags().StringSliceVar(&opts.Tags, "tags", nil, "tags for every task, after the format's name (comma-separated)")
	cmd.Flags().BoolVar(&opts.ReferenceReplay, "reference-replay", false, "write each task a replay.yaml in which the Worker writes the reference solution")
	return cmd
}
