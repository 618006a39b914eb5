package compare

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/prose"
)

// The changes as a reader gets them: those that matter first, each as
// the cells of a table row, in the terminal and on the page.

// UntestedShown: where no test can be made (one repetition), a change of
// this many percent or more is shown among the first, said to be
// untested; smaller ones are folded with the rest.
const UntestedShown = 20.0

// Change is one figure of one measurement both runs made.
type Change struct {
	Row  Row
	Cell Cell
}

// Matters: the change is significant, or, untested, UntestedShown % or
// more.
func (ch Change) Matters() bool {
	c := ch.Cell
	if c.Tested {
		return c.Significant
	}
	return !math.IsNaN(c.Delta) && math.Abs(c.Delta) >= UntestedShown
}

// Split puts the changes that matter first, the largest first, and the
// rest after them in the rows' order.
func (c *Comparison) Split() (first, rest []Change) {
	for _, r := range c.Rows {
		for _, cell := range r.Cells {
			ch := Change{Row: r, Cell: cell}
			if ch.Matters() {
				first = append(first, ch)
			} else {
				rest = append(rest, ch)
			}
		}
	}
	slices.SortStableFunc(first, func(x, y Change) int {
		if x.Cell.Tested != y.Cell.Tested { // tested changes before untested
			if x.Cell.Tested {
				return -1
			}
			return 1
		}
		return -cmpFloat(math.Abs(x.Cell.Delta), math.Abs(y.Cell.Delta))
	})
	return first, rest
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Shared says which run was measured while other processes used the
// machine, or "" when neither was.
func (c *Comparison) Shared() []string {
	var out []string
	for _, x := range []struct {
		run string
		f   *findings.Findings
	}{{"A", c.A}, {"B", c.B}} {
		if s := prose.SharedText(x.f); s != "" {
			out = append(out, x.run+": "+s)
		}
	}
	return out
}

// Write prints the comparison as benchstat does, the changes that matter
// first; with all, every other figure after them, by phase, else how many
// there are.
func (c *Comparison) Write(w io.Writer, all bool) {
	fmt.Fprintf(w, "A: %s (%s)\nB: %s (%s)\n", c.DirA, c.A.Run.Manifest.StartUTC, c.DirB, c.B.Run.Manifest.StartUTC)
	if len(c.Differ) > 0 {
		fmt.Fprintf(w, "the runs differ in:\n  %s\n", strings.Join(c.Differ, "\n  "))
	} else {
		fmt.Fprintln(w, "the runs have the same parameters, on the same machine and commit")
	}
	for _, s := range c.Shared() {
		fmt.Fprintf(w, "shared machine, %s: its figures may be slower for it\n", s)
	}
	fmt.Fprintf(w, "each cell is the median over a run's repetitions; vs is B against A: a %% change when p <= %.2f (Mann-Whitney U over the\n"+
		"repetitions, benchstat's test), ~ when not; with one repetition the change is given and no significance can be:\n"+
		"--repeat 5 or more on both runs for a test. A saturated bystander's figures from due are lower bounds.\n", Alpha)
	first, rest := c.Split()
	fmt.Fprintf(w, "\nThe changes that matter: %s\n", FirstHeading)
	if len(first) == 0 {
		fmt.Fprintln(w, "  none")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "measurement\tfigure\tA\tB\tB vs A\tp")
		for _, ch := range first {
			fmt.Fprintln(tw, strings.Join(ch.Cells(), "\t"))
		}
		tw.Flush()
	}
	if !all {
		if len(rest) > 0 {
			fmt.Fprintf(w, "\n%d other figures: %s (--all prints them)\n", len(rest), RestHeading)
		}
	} else if len(rest) > 0 {
		fmt.Fprintf(w, "\nEvery other figure: %s\n", RestHeading)
		phase := ""
		var tw *tabwriter.Writer
		var key string
		for _, ch := range rest {
			if ch.Row.Phase != phase {
				if tw != nil {
					tw.Flush()
				}
				phase, key = ch.Row.Phase, ""
				fmt.Fprintf(w, "\n%s\n", phase)
				tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "measurement\tfigure\tA\tB\tB vs A\tp")
			}
			cells := ch.Cells()
			if cells[0] == key {
				cells[0] = ""
			} else {
				key = cells[0]
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
		tw.Flush()
	}
	if len(c.Only) > 0 {
		fmt.Fprintf(w, "\nin one run only (not compared):\n  %s\n", strings.Join(c.Only, "\n  "))
	}
}

// The headings of the two parts, the same in the terminal and on the page.
var (
	FirstHeading = fmt.Sprintf("significant (p <= %.2f), then untested changes of %.0f %% or more (one repetition: no test could be made)", Alpha, UntestedShown)
	RestHeading  = fmt.Sprintf("no significant change, or untested and under %.0f %%", UntestedShown)
)

// keyOf is a row's name in a table: its key, and its endpoints when the
// runs loaded different ones.
func keyOf(r Row) string {
	if strings.Contains(r.Endpoint, "->") {
		return r.Key + " (" + r.Endpoint + ")"
	}
	return r.Key
}

// Cells are the cells of a figure as the tables give them: measurement
// (name), figure, A, B, B vs A, test.
func (ch Change) Cells() []string {
	c := ch.Cell
	return []string{keyOf(ch.Row), label(c), format(c, c.A, c.CenterA), format(c, c.B, c.CenterB), c.Verdict(), c.PText()}
}

func label(c Cell) string {
	if c.Unit == "" {
		return c.Metric
	}
	return c.Metric + " (" + c.Unit + ")"
}

// format is a median with the spread of the repetitions.
func format(c Cell, v findings.Figure, center float64) string {
	f := "%.0f"
	if c.Unit == "ms" || c.Unit == "us" {
		f = "%.1f"
	}
	s := fmt.Sprintf(f, center)
	if len(v) > 1 {
		lo, hi := v.Spread()
		s += fmt.Sprintf(" ["+f+"-"+f+"]", lo, hi)
	}
	return s
}
