package eval

import (
	"math"
	"math/rand/v2"
	"slices"
)

// The statistics of an eval: pure functions of counts and samples, so that
// every number in eval.json can be recomputed from the per-run results.

// Confidence is the level of every interval: 95 %.
const Confidence = 0.95

// z95 is the standard normal quantile for a two-sided 95 % interval.
const z95 = 1.959963984540054

// DefaultSeed seeds the bootstrap unless the caller gives another: the
// same results give the same intervals.
const DefaultSeed uint64 = 20240601

// DefaultResamples is the number of bootstrap resamples.
const DefaultResamples = 2000

// Interval methods, as eval.json names them.
const (
	MethodWilson    = "wilson"
	MethodBootstrap = "bootstrap over tasks"
	MethodPaired    = "paired bootstrap over tasks"
)

// Wilson is the Wilson score interval at 95 % for c successes of n trials.
// With n = 0 it is [0, 1].
func Wilson(c, n int) (low, high float64) {
	if n <= 0 {
		return 0, 1
	}
	p := float64(c) / float64(n)
	nf := float64(n)
	z2 := z95 * z95
	den := 1 + z2/nf
	center := (p + z2/(2*nf)) / den
	half := z95 * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf)) / den
	return max(0, center-half), min(1, center+half)
}

// PassAtK is the unbiased estimator of pass@k for a task run n times with
// c passes: 1 - C(n-c, k) / C(n, k). It is NaN when k > n or k < 1.
func PassAtK(n, c, k int) float64 {
	if k < 1 || k > n || c < 0 || c > n {
		return math.NaN()
	}
	if n-c < k {
		return 1
	}
	// C(n-c,k)/C(n,k) = prod_{i=n-c+1}^{n} (1 - k/i), stable for large n.
	q := 1.0
	for i := n - c + 1; i <= n; i++ {
		q *= 1 - float64(k)/float64(i)
	}
	return 1 - q
}

// Percentile is the p-th percentile (0..100) of xs by linear interpolation
// between closest ranks; 0 for no values.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 1 {
		return s[0]
	}
	pos := p / 100 * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (pos-float64(lo))*(s[hi]-s[lo])
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Bootstrap is the percentile bootstrap interval at 95 % of the mean of
// xs, resampling xs with replacement resamples times from a generator
// seeded with seed: the same input and seed give the same interval.
func Bootstrap(xs []float64, resamples int, seed uint64) (low, high float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	if resamples < 1 {
		resamples = DefaultResamples
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	means := make([]float64, resamples)
	for r := range means {
		var s float64
		for range xs {
			s += xs[rng.IntN(len(xs))]
		}
		means[r] = s / float64(len(xs))
	}
	a := (1 - Confidence) / 2 * 100
	return Percentile(means, a), Percentile(means, 100-a)
}

// McNemarExact is the two-sided exact McNemar p-value for b and c
// discordant pairs (one side passed and the other failed): the binomial
// test of min(b, c) against Binomial(b+c, 1/2). 1 without discordant pairs.
func McNemarExact(b, c int) float64 {
	n := b + c
	if n == 0 {
		return 1
	}
	k := min(b, c)
	// P(X <= k) for X ~ Binomial(n, 1/2), summed in logs.
	var cdf float64
	for i := 0; i <= k; i++ {
		cdf += math.Exp(logChoose(n, i) - float64(n)*math.Ln2)
	}
	return min(1, 2*cdf)
}

func logChoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// Estimate is a rate or a mean with its 95 % interval.
type Estimate struct {
	Value float64 `json:"value"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
	// Method is how the interval was made: wilson or bootstrap over tasks.
	Method string `json:"method"`
	// Successes and Trials are the counts of a proportion (Wilson).
	Successes int `json:"successes,omitempty"`
	Trials    int `json:"trials,omitempty"`
}

// Proportion is c of n with its Wilson interval.
func Proportion(c, n int) Estimate {
	lo, hi := Wilson(c, n)
	return Estimate{Value: ratio(c, n), Low: lo, High: hi, Method: MethodWilson, Successes: c, Trials: n}
}

// MeanOf is the mean of per-task values with a bootstrap interval over
// tasks.
func MeanOf(xs []float64, resamples int, seed uint64) Estimate {
	lo, hi := Bootstrap(xs, resamples, seed)
	return Estimate{Value: mean(xs), Low: lo, High: hi, Method: MethodBootstrap}
}

// Distribution summarises per-task values: the mean with its bootstrap
// interval, and percentiles.
type Distribution struct {
	Mean Estimate `json:"mean"`
	P50  float64  `json:"p50"`
	P90  float64  `json:"p90"`
	Max  float64  `json:"max"`
}

// Distribute summarises xs (one value per task).
func Distribute(xs []float64, resamples int, seed uint64) Distribution {
	d := Distribution{Mean: MeanOf(xs, resamples, seed), P50: Percentile(xs, 50), P90: Percentile(xs, 90)}
	if len(xs) > 0 {
		d.Max = slices.Max(xs)
	}
	return d
}

// Summarize computes an eval's statistics from its runs: samples is the
// number of runs asked per task (pass@k is given for k = 1..samples, over
// the tasks with at least k runs), seed and resamples drive the bootstrap.
func Summarize(results []TaskResult, samples int, seed uint64, resamples int) (Stats, []TaskStats) {
	if resamples < 1 {
		resamples = DefaultResamples
	}
	st := Stats{Runs: len(results), Samples: samples, Seed: seed, Resamples: resamples, Confidence: Confidence}
	var per []TaskStats
	index := map[string]int{}
	var costs, tokens [][]float64
	var pass, completed, agreed, falseSuccess int
	var unpricedRoles []string
	for _, r := range results {
		i, ok := index[r.ID]
		if !ok {
			i = len(per)
			index[r.ID] = i
			per = append(per, TaskStats{ID: r.ID, Tags: r.Tags})
			costs, tokens = append(costs, nil), append(tokens, nil)
		}
		ts := &per[i]
		ts.Runs++
		if r.Hidden.Pass {
			ts.Passed++
			pass++
		}
		if r.Completed {
			ts.Completed++
			completed++
		}
		if r.Completed == r.Hidden.Pass {
			ts.Agreed++
			agreed++
		}
		if r.Disagrees() {
			falseSuccess++
		}
		costs[i] = append(costs[i], r.Cost)
		tokens[i] = append(tokens[i], float64(r.Tokens))
		for _, role := range r.UnpricedRoles {
			if !slices.Contains(unpricedRoles, role) {
				unpricedRoles = append(unpricedRoles, role)
			}
		}
	}
	slices.Sort(unpricedRoles)
	st.Tasks = len(per)
	st.UnpricedRoles = unpricedRoles
	st.PassAt1 = Proportion(pass, len(results))
	st.CompletionRate = Proportion(completed, len(results))
	st.Agreement = Proportion(agreed, len(results))
	st.FalseSuccess = Proportion(falseSuccess, completed)
	taskCost := make([]float64, len(per))
	taskTokens := make([]float64, len(per))
	for i := range per {
		ts := &per[i]
		ts.PassRate = Proportion(ts.Passed, ts.Runs)
		for k := 1; k <= ts.Runs; k++ {
			ts.PassAtK = append(ts.PassAtK, PassAtK(ts.Runs, ts.Passed, k))
		}
		ts.MeanCost, ts.MeanTokens = mean(costs[i]), mean(tokens[i])
		taskCost[i], taskTokens[i] = ts.MeanCost, ts.MeanTokens
	}
	for k := 1; k <= samples; k++ {
		var xs []float64
		for _, ts := range per {
			if ts.Runs >= k {
				xs = append(xs, ts.PassAtK[k-1])
			}
		}
		if len(xs) == 0 {
			break
		}
		// Each k resamples with its own stream, so adding a k never
		// changes the intervals of the others.
		st.PassAtK = append(st.PassAtK, PassK{K: k, Estimate: MeanOf(xs, resamples, seed+uint64(k))})
	}
	st.Cost = Distribute(taskCost, resamples, seed)
	st.Tokens = Distribute(taskTokens, resamples, seed)
	return st, per
}
