package eval

import (
	"math"
	"testing"
)

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.6f, want %.6f", what, got, want)
	}
}

// TestWilson checks the interval against published values (Newcombe 1998,
// and R's prop.test without continuity correction).
func TestWilson(t *testing.T) {
	lo, hi := Wilson(8, 10)
	near(t, "Wilson(8,10) low", lo, 0.4902, 5e-4)
	near(t, "Wilson(8,10) high", hi, 0.9433, 5e-4)
	lo, hi = Wilson(0, 10)
	near(t, "Wilson(0,10) low", lo, 0, 1e-12)
	near(t, "Wilson(0,10) high", hi, 0.2775, 5e-4)
	lo, hi = Wilson(10, 10)
	near(t, "Wilson(10,10) low", lo, 0.7225, 5e-4)
	near(t, "Wilson(10,10) high", hi, 1, 1e-12)
	lo, hi = Wilson(0, 0)
	if lo != 0 || hi != 1 {
		t.Errorf("Wilson(0,0) = [%v, %v], want [0, 1]", lo, hi)
	}
}

func TestPassAtK(t *testing.T) {
	for _, c := range []struct {
		n, c, k int
		want    float64
	}{
		{5, 2, 3, 0.9},       // 1 - C(3,3)/C(5,3) = 1 - 1/10
		{5, 2, 1, 0.4},       // pass@1 is c/n
		{5, 0, 3, 0},         // never passed
		{5, 3, 3, 1},         // n-c < k: some draw of 3 always passes
		{10, 1, 5, 0.5},      // 1 - C(9,5)/C(10,5) = 1 - 126/252
		{3, 1, 2, 2.0 / 3.0}, // 1 - C(2,2)/C(3,2)
	} {
		near(t, "PassAtK", PassAtK(c.n, c.c, c.k), c.want, 1e-12)
	}
	if !math.IsNaN(PassAtK(2, 1, 3)) {
		t.Errorf("PassAtK(2,1,3) is not NaN: k > n has no estimate")
	}
}

func TestMcNemarExact(t *testing.T) {
	near(t, "McNemar(1,6)", McNemarExact(1, 6), 0.125, 1e-12) // 2·(1+7)/128
	near(t, "McNemar(0,5)", McNemarExact(0, 5), 0.0625, 1e-12)
	near(t, "McNemar(3,3)", McNemarExact(3, 3), 1, 1e-12)
	near(t, "McNemar(0,0)", McNemarExact(0, 0), 1, 1e-12)
	// R: binom.test(2, 12)$p.value = 0.03857422
	near(t, "McNemar(2,10)", McNemarExact(2, 10), 0.0385742, 1e-6)
}

func TestPercentile(t *testing.T) {
	xs := []float64{10, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	near(t, "p50", Percentile(xs, 50), 5.5, 1e-12)
	near(t, "p90", Percentile(xs, 90), 9.1, 1e-12)
	near(t, "p0", Percentile(xs, 0), 1, 1e-12)
	near(t, "p100", Percentile(xs, 100), 10, 1e-12)
}

// TestBootstrapSeeded: the same values and seed give the same interval,
// which holds the mean; another seed may differ only a little.
func TestBootstrapSeeded(t *testing.T) {
	xs := []float64{0, 1, 1, 0, 1, 1, 1, 0, 1, 1, 0.5, 0.25}
	lo1, hi1 := Bootstrap(xs, 2000, 7)
	lo2, hi2 := Bootstrap(xs, 2000, 7)
	if lo1 != lo2 || hi1 != hi2 {
		t.Fatalf("same seed, different intervals: [%v,%v] and [%v,%v]", lo1, hi1, lo2, hi2)
	}
	m := mean(xs)
	if !(lo1 < m && m < hi1) || lo1 < 0 || hi1 > 1 {
		t.Errorf("interval [%v, %v] does not hold the mean %v inside [0,1]", lo1, hi1, m)
	}
	// The normal approximation's half width is about 1.96·sd/√n ≈ 0.22.
	if w := hi1 - lo1; w < 0.3 || w > 0.6 {
		t.Errorf("interval width %v, want about 0.44", w)
	}
	if lo, hi := Bootstrap([]float64{3, 3, 3}, 100, 1); lo != 3 || hi != 3 {
		t.Errorf("constant values: [%v, %v], want [3, 3]", lo, hi)
	}
}

// TestSummarize: three tasks of three samples; pass@k per task and overall,
// the rates with Wilson's counts, and cost percentiles per task.
func TestSummarize(t *testing.T) {
	run := func(id string, sample int, pass, completed bool, cost float64) TaskResult {
		return TaskResult{ID: id, Sample: sample, Hidden: Hidden{Pass: pass}, Completed: completed, Cost: cost, Tokens: 100 * sample,
			Roles: map[string]RoleMetrics{"worker": {Calls: 1, Priced: true}, "critic": {Calls: 1}}, UnpricedRoles: []string{"critic"}}
	}
	results := []TaskResult{
		run("a", 1, true, true, 1), run("a", 2, true, true, 1), run("a", 3, true, true, 1),
		run("b", 1, false, true, 2), run("b", 2, true, true, 2), run("b", 3, false, false, 2),
		run("c", 1, false, false, 3), run("c", 2, false, false, 3), run("c", 3, false, true, 3),
	}
	st, per := Summarize(results, 3, DefaultSeed, 500)
	if st.Tasks != 3 || st.Runs != 9 || len(per) != 3 || len(st.PassAtK) != 3 {
		t.Fatalf("stats %+v, per task %+v", st, per)
	}
	if st.PassAt1.Successes != 4 || st.PassAt1.Trials != 9 || st.PassAt1.Method != MethodWilson {
		t.Errorf("pass@1 %+v, want 4/9 by Wilson", st.PassAt1)
	}
	near(t, "pass@1 bootstrap", st.PassAtK[0].Value, (1+1.0/3+0)/3, 1e-12)
	near(t, "pass@2", st.PassAtK[1].Value, (1+2.0/3+0)/3, 1e-12)
	near(t, "pass@3", st.PassAtK[2].Value, (1+1+0)/3.0, 1e-12)
	for _, k := range st.PassAtK {
		if k.Low > k.Value || k.High < k.Value || k.Method != MethodBootstrap {
			t.Errorf("pass@%d %+v: the interval does not hold the value", k.K, k.Estimate)
		}
	}
	// Completed 6 times (a 3, b 2, c 1), 2 of them with failing hidden
	// tests (b's first, c's third).
	if st.FalseSuccess.Successes != 2 || st.FalseSuccess.Trials != 6 {
		t.Errorf("false success %+v, want 2/6", st.FalseSuccess)
	}
	// Agreement: a 3, b 2, c 2.
	if st.Agreement.Successes != 7 || st.Agreement.Trials != 9 {
		t.Errorf("agreement %+v, want 7/9", st.Agreement)
	}
	near(t, "cost p50", st.Cost.P50, 2, 1e-12)
	near(t, "cost p90", st.Cost.P90, 2.8, 1e-12)
	near(t, "tokens mean", st.Tokens.Mean.Value, 200, 1e-9)
	if len(st.UnpricedRoles) != 1 || st.UnpricedRoles[0] != "critic" {
		t.Errorf("unpriced roles %v, want [critic]", st.UnpricedRoles)
	}
	if per[1].ID != "b" || per[1].Passed != 1 || per[1].Runs != 3 {
		t.Errorf("task b: %+v", per[1])
	}
}
