package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrNoReport is wrapped when a path holds no readable eval.json.
var ErrNoReport = errors.New("not an eval result")

// LoadReport reads an eval's eval.json: path is the file or the output
// folder holding it.
func LoadReport(path string) (*Report, error) {
	file := path
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		file = filepath.Join(path, ReportJSON)
	}
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s does not exist (want an eval output folder or its %s)", ErrNoReport, file, ReportJSON)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoReport, err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNoReport, file, err)
	}
	if len(r.Tasks) == 0 {
		return nil, fmt.Errorf("%w: %s holds no task results", ErrNoReport, file)
	}
	// Results of an older Trio name no sample: each task ran once.
	for i := range r.Tasks {
		if r.Tasks[i].Sample == 0 {
			r.Tasks[i].Sample = 1
		}
	}
	return &r, nil
}

// Task changes between two evals, as Comparison names them.
const (
	ChangeFixed   = "fixed"  // every run failed in A, every run passed in B
	ChangeBroken  = "broken" // every run passed in A, every run failed in B
	ChangeBetter  = "better" // a higher pass rate in B
	ChangeWorse   = "worse"  // a lower pass rate in B
	ChangeSame    = "same"
	ChangeOnlyInA = "only in A"
	ChangeOnlyInB = "only in B"
)

// Comparison is what changed from eval A to eval B. Differences are B
// minus A, over the tasks both ran.
type Comparison struct {
	A CompareSide `json:"a"`
	B CompareSide `json:"b"`
	// SameConfig says both evals have the same configuration hash.
	SameConfig bool         `json:"same_config"`
	Tasks      []TaskChange `json:"tasks"`
	// Common counts the tasks both evals ran.
	Common int `json:"common_tasks"`
	// PassRateDiff is the mean over common tasks of B's pass rate minus
	// A's, with a paired bootstrap interval over tasks.
	PassRateDiff Estimate `json:"pass_rate_diff"`
	// McNemar is the exact test on paired runs.
	McNemar McNemar `json:"mcnemar"`
	// CostDiff and TokensDiff are the mean per-task differences.
	CostDiff   Estimate `json:"cost_diff_usd"`
	TokensDiff Estimate `json:"tokens_diff"`
	Seed       uint64   `json:"seed"`
	Resamples  int      `json:"resamples"`
}

// CompareSide is one eval of a comparison.
type CompareSide struct {
	Path       string   `json:"path"`
	Suite      string   `json:"suite"`
	ConfigHash string   `json:"config_hash,omitempty"`
	Models     string   `json:"models,omitempty"`
	Samples    int      `json:"samples"`
	PassAt1    Estimate `json:"pass_at_1"`
	MeanCost   float64  `json:"mean_cost_usd"`
}

// TaskChange is one task's pass rates and costs in A and B.
type TaskChange struct {
	ID      string  `json:"id"`
	Change  string  `json:"change"`
	ARuns   int     `json:"a_runs"`
	APassed int     `json:"a_passed"`
	BRuns   int     `json:"b_runs"`
	BPassed int     `json:"b_passed"`
	Delta   float64 `json:"pass_rate_diff"`
	ACost   float64 `json:"a_mean_cost_usd"`
	BCost   float64 `json:"b_mean_cost_usd"`
}

// McNemar is McNemar's exact test on the runs paired by task and sample
// number (sample k of A with sample k of B): the discordant pairs and the
// two-sided p-value.
type McNemar struct {
	Pairs int `json:"pairs"`
	// APassBFail and AFailBPass are the discordant pairs.
	APassBFail int     `json:"a_pass_b_fail"`
	AFailBPass int     `json:"a_fail_b_pass"`
	P          float64 `json:"p_value"`
}

// Compare compares eval a with eval b (B minus A), the bootstrap seeded
// with seed.
func Compare(a, b *Report, seed uint64, resamples int) Comparison {
	if resamples < 1 {
		resamples = DefaultResamples
	}
	c := Comparison{A: side(a), B: side(b), Seed: seed, Resamples: resamples}
	c.SameConfig = c.A.ConfigHash != "" && c.A.ConfigHash == c.B.ConfigHash
	_, perA := Summarize(a.Tasks, max(a.Samples, 1), seed, resamples)
	_, perB := Summarize(b.Tasks, max(b.Samples, 1), seed, resamples)
	inB := map[string]TaskStats{}
	for _, t := range perB {
		inB[t.ID] = t
	}
	runs := func(r *Report) map[string]map[int]bool {
		out := map[string]map[int]bool{}
		for _, t := range r.Tasks {
			if out[t.ID] == nil {
				out[t.ID] = map[int]bool{}
			}
			out[t.ID][t.Sample] = t.Hidden.Pass
		}
		return out
	}
	runsA, runsB := runs(a), runs(b)
	var passDiff, costDiff, tokenDiff []float64
	seen := map[string]bool{}
	for _, ta := range perA {
		seen[ta.ID] = true
		tb, ok := inB[ta.ID]
		tc := TaskChange{ID: ta.ID, ARuns: ta.Runs, APassed: ta.Passed, ACost: ta.MeanCost}
		if !ok {
			tc.Change = ChangeOnlyInA
			c.Tasks = append(c.Tasks, tc)
			continue
		}
		tc.BRuns, tc.BPassed, tc.BCost = tb.Runs, tb.Passed, tb.MeanCost
		tc.Delta = tb.PassRate.Value - ta.PassRate.Value
		switch {
		case ta.Passed == 0 && tb.Passed == tb.Runs:
			tc.Change = ChangeFixed
		case ta.Passed == ta.Runs && tb.Passed == 0:
			tc.Change = ChangeBroken
		case tc.Delta > 0:
			tc.Change = ChangeBetter
		case tc.Delta < 0:
			tc.Change = ChangeWorse
		default:
			tc.Change = ChangeSame
		}
		c.Tasks = append(c.Tasks, tc)
		c.Common++
		passDiff = append(passDiff, tc.Delta)
		costDiff = append(costDiff, tb.MeanCost-ta.MeanCost)
		tokenDiff = append(tokenDiff, tb.MeanTokens-ta.MeanTokens)
		for k, pa := range runsA[ta.ID] {
			pb, ok := runsB[ta.ID][k]
			if !ok {
				continue
			}
			c.McNemar.Pairs++
			switch {
			case pa && !pb:
				c.McNemar.APassBFail++
			case !pa && pb:
				c.McNemar.AFailBPass++
			}
		}
	}
	for _, tb := range perB {
		if !seen[tb.ID] {
			c.Tasks = append(c.Tasks, TaskChange{ID: tb.ID, Change: ChangeOnlyInB, BRuns: tb.Runs, BPassed: tb.Passed, BCost: tb.MeanCost})
		}
	}
	c.McNemar.P = McNemarExact(c.McNemar.APassBFail, c.McNemar.AFailBPass)
	c.PassRateDiff = MeanOf(passDiff, resamples, seed)
	c.CostDiff = MeanOf(costDiff, resamples, seed)
	c.TokensDiff = MeanOf(tokenDiff, resamples, seed)
	for _, e := range []*Estimate{&c.PassRateDiff, &c.CostDiff, &c.TokensDiff} {
		e.Method = MethodPaired
	}
	return c
}

func side(r *Report) CompareSide {
	st, _ := Summarize(r.Tasks, max(r.Samples, 1), DefaultSeed, 1)
	return CompareSide{Path: r.Out, Suite: r.Suite, ConfigHash: r.Provenance.ConfigHash, Models: roleModels(r.Provenance.Roles),
		Samples: max(r.Samples, 1), PassAt1: st.PassAt1, MeanCost: st.Cost.Mean.Value}
}

// Text renders the comparison for people.
func (c Comparison) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "A: %s (suite %s, configuration %s, %d samples): pass@1 %.3f [%.3f, %.3f], mean cost $%.4f\n",
		c.A.Path, c.A.Suite, orDash(c.A.ConfigHash), c.A.Samples, c.A.PassAt1.Value, c.A.PassAt1.Low, c.A.PassAt1.High, c.A.MeanCost)
	fmt.Fprintf(&b, "B: %s (suite %s, configuration %s, %d samples): pass@1 %.3f [%.3f, %.3f], mean cost $%.4f\n",
		c.B.Path, c.B.Suite, orDash(c.B.ConfigHash), c.B.Samples, c.B.PassAt1.Value, c.B.PassAt1.Low, c.B.PassAt1.High, c.B.MeanCost)
	if c.SameConfig {
		b.WriteString("(both have the same configuration)\n")
	}
	b.WriteString("\n| task | A passed | B passed | change | A cost $ | B cost $ |\n|---|---|---|---|---|---|\n")
	for _, t := range c.Tasks {
		a, bb := fmt.Sprintf("%d/%d", t.APassed, t.ARuns), fmt.Sprintf("%d/%d", t.BPassed, t.BRuns)
		if t.Change == ChangeOnlyInB {
			a = "—"
		}
		if t.Change == ChangeOnlyInA {
			bb = "—"
		}
		ch := t.Change
		if ch != ChangeSame {
			ch = "**" + ch + "**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.4f | %.4f |\n", t.ID, a, bb, ch, t.ACost, t.BCost)
	}
	fmt.Fprintf(&b, "\n%d tasks in both. B minus A, 95 %% paired bootstrap over tasks (%d resamples, seed %d):\n", c.Common, c.Resamples, c.Seed)
	fmt.Fprintf(&b, "  pass rate: %+.3f [%+.3f, %+.3f]\n", c.PassRateDiff.Value, c.PassRateDiff.Low, c.PassRateDiff.High)
	fmt.Fprintf(&b, "  cost per task ($): %+.4f [%+.4f, %+.4f]\n", c.CostDiff.Value, c.CostDiff.Low, c.CostDiff.High)
	fmt.Fprintf(&b, "  tokens per task: %+.0f [%+.0f, %+.0f]\n", c.TokensDiff.Value, c.TokensDiff.Low, c.TokensDiff.High)
	fmt.Fprintf(&b, "McNemar's exact test over %d paired runs: %d passed only in A, %d passed only in B, p = %.4g\n",
		c.McNemar.Pairs, c.McNemar.APassBFail, c.McNemar.AFailBPass, c.McNemar.P)
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
