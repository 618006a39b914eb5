package compare

import (
	"fmt"
	"math"

	"github.com/bystander-kit/bystander/internal/findings"
	"golang.org/x/perf/benchmath"
)

// One figure in both runs: its centers, its change, and whether the
// change is significant across the repetitions.

// Alpha is the significance level: a change with p above it is "~".
const Alpha = 0.05

// Cell is one figure of one measurement in both runs.
type Cell struct {
	Metric string
	Unit   string
	// Better: "higher" or "lower" is better, for the reader.
	Better string
	A, B   findings.Figure
	// Centers are the medians; Delta is B against A in %, NaN when A is 0.
	CenterA, CenterB, Delta float64
	// Tested: both runs had at least two repetitions; then P is the
	// Mann-Whitney U test's p-value and Significant says P <= Alpha.
	Tested      bool
	P           float64
	N1, N2      int
	Significant bool
	// Saturated: in that run the bystander's queue grew without bound, so
	// its figures from due are lower bounds set by the run's length.
	SaturatedA, SaturatedB bool
}

// Verdict is the change as benchstat prints it: "+12.3%" when significant,
// "~" when not, and the change with "(no test)" without repetitions.
func (c Cell) Verdict() string {
	d := "?"
	if !math.IsNaN(c.Delta) {
		d = fmt.Sprintf("%+.1f%%", c.Delta)
	}
	switch {
	case !c.Tested:
		return d
	case !c.Significant:
		return "~"
	}
	return d
}

// PText is the test's p-value and sizes, or why there is none.
func (c Cell) PText() string {
	s := fmt.Sprintf("no test (n=%d+%d)", c.N1, c.N2)
	if c.Tested {
		s = fmt.Sprintf("p=%.3f n=%d+%d", c.P, c.N1, c.N2)
		if !c.Significant && minP(c.N1, c.N2) > Alpha {
			s += fmt.Sprintf(" (with %d+%d repetitions p cannot go below %.3f: --repeat 5 or more)", c.N1, c.N2, minP(c.N1, c.N2))
		}
	}
	switch {
	case c.SaturatedA && c.SaturatedB:
		s += "; saturated in both: lower bounds"
	case c.SaturatedA:
		s += "; saturated in A: A is a lower bound"
	case c.SaturatedB:
		s += "; saturated in B: B is a lower bound"
	}
	return s
}

// minP is the smallest two-sided p the U test can give for samples of n1
// and n2 without ties: all of one above all of the other.
func minP(n1, n2 int) float64 {
	// 2 / C(n1+n2, n1)
	c := 1.0
	for i := 1; i <= n1; i++ {
		c = c * float64(n2+i) / float64(i)
	}
	return 2 / c
}

// test fills in the centers, the change and the U test.
func test(c *Cell) {
	th := benchmath.DefaultThresholds
	th.CompareAlpha = Alpha
	sa, sb := benchmath.NewSample(c.A, &th), benchmath.NewSample(c.B, &th)
	c.CenterA = benchmath.AssumeNothing.Summary(sa, 0.95).Center
	c.CenterB = benchmath.AssumeNothing.Summary(sb, 0.95).Center
	c.Delta = math.NaN()
	if c.CenterA == 0 && c.CenterB == 0 {
		c.Delta = 0
	} else if c.CenterA != 0 {
		c.Delta = 100 * (c.CenterB/c.CenterA - 1)
	}
	c.N1, c.N2 = len(c.A), len(c.B)
	if c.N1 < 2 || c.N2 < 2 {
		return
	}
	cmp := benchmath.AssumeNothing.Compare(sa, sb)
	c.Tested, c.P = true, cmp.P
	c.Significant = cmp.P <= cmp.Alpha
}
