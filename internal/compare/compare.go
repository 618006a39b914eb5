// Package compare puts two runs side by side, the way benchstat does for
// Go benchmarks: for every measurement both runs made, each figure in A
// and in B, the change, and whether it is significant across the runs'
// repetitions (Mann-Whitney U test, from golang.org/x/perf/benchmath,
// benchstat's own statistics). With one repetition no test can be made and
// it says so. It computes nothing the findings do not hold: it matches
// them and tests their repetitions.
package compare

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/perf/benchmath"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
)

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

// Row is one measurement both runs made.
type Row struct {
	Key      string // phase, server and point: "sweep loop-gnet 64 callers"
	Phase    string
	Endpoint string // "/slow", or "/slow -> /offload" when the runs loaded different ones
	Cells    []Cell
}

// Comparison is run A against run B.
type Comparison struct {
	DirA, DirB string
	A, B       *findings.Findings
	// Differ lists the parameters and environment that differ, "name: A
	// vs B"; Only lists measurements made in one run only.
	Differ []string
	Only   []string
	Rows   []Row
}

// Runs reads two run directories and compares them. It refuses runs it
// cannot compare: one that is not a run, or two with no measurement in
// common (saying what each measured and which parameters differ).
func Runs(dirA, dirB string) (*Comparison, error) {
	a, err := findings.Read(dirA)
	if err != nil {
		return nil, fmt.Errorf("compare: A (%s): %w", dirA, err)
	}
	b, err := findings.Read(dirB)
	if err != nil {
		return nil, fmt.Errorf("compare: B (%s): %w", dirB, err)
	}
	c := &Comparison{DirA: dirA, DirB: dirB, A: a, B: b, Differ: differ(a.Run, b.Run)}
	ra, unreadA := rowsOf(a)
	rb, unreadB := rowsOf(b)
	for _, k := range keys(ra) {
		if _, ok := rb[k]; !ok {
			if why, ok := unreadB[k]; ok {
				c.Only = append(c.Only, fmt.Sprintf("%s: B's %s", k, why))
				continue
			}
			c.Only = append(c.Only, "A only: "+k)
		}
	}
	for _, k := range keys(rb) {
		x, ok := ra[k]
		if !ok {
			if why, ok := unreadA[k]; ok {
				c.Only = append(c.Only, fmt.Sprintf("%s: A's %s", k, why))
				continue
			}
			c.Only = append(c.Only, "B only: "+k)
			continue
		}
		c.Rows = append(c.Rows, pair(k, x, rb[k]))
	}
	for _, side := range []struct {
		name   string
		unread map[string]string
		other  map[string]measured
	}{{"A", unreadA, rb}, {"B", unreadB, ra}} {
		var ks []string
		for k := range side.unread {
			if _, ok := side.other[k]; !ok {
				ks = append(ks, k)
			}
		}
		slices.Sort(ks)
		for _, k := range ks {
			c.Only = append(c.Only, fmt.Sprintf("%s: %s's %s", k, side.name, side.unread[k]))
		}
	}
	if len(c.Rows) == 0 {
		why := "no measurement in common: A measured " + summary(ra) + "; B measured " + summary(rb)
		if len(c.Differ) > 0 {
			why += "; the runs differ in " + strings.Join(c.Differ, "; ")
		}
		return nil, fmt.Errorf("compare: the runs cannot be compared: %s", why)
	}
	slices.SortStableFunc(c.Rows, func(x, y Row) int { return order(x.Phase) - order(y.Phase) })
	return c, nil
}

func order(phase string) int { return slices.Index(findings.Phases, phase) }

func summary(m map[string]measured) string {
	if len(m) == 0 {
		return "nothing that succeeded"
	}
	ks := keys(m)
	if len(ks) > 4 {
		ks = append(ks[:4], fmt.Sprintf("and %d more", len(m)-4))
	}
	return strings.Join(ks, ", ")
}

// measured is one measurement's figures, by metric, in plan order.
type measured struct {
	phase, endpoint string
	seq             int
	cells           []Cell
}

func keys(m map[string]measured) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(x, y string) int { return m[x].seq - m[y].seq })
	return ks
}

// rowsOf lists each successful measurement's figures under a key that
// names it the same way in any run: phase, server and point, not the
// endpoint (so /slow and /offload runs of the sweep match); and, under the
// same keys, why each measurement whose files were not read was not.
func rowsOf(f *findings.Findings) (map[string]measured, map[string]string) {
	out := map[string]measured{}
	unread := map[string]string{}
	seq := 0
	add := func(g *findings.Group, point string, cells ...Cell) {
		key := strings.TrimSpace(fmt.Sprintf("%s %s %s", g.Step.Phase, g.Step.Server.Name, point))
		var kept []Cell
		for _, c := range cells {
			if c.A.OK() {
				kept = append(kept, c)
			}
		}
		if len(kept) == 0 {
			if strings.HasPrefix(g.Why, findings.NotRead) {
				unread[key] = g.Why
			}
			return
		}
		seq++
		out[key] = measured{phase: g.Step.Phase, endpoint: g.Step.Endpoint, seq: seq, cells: kept}
	}
	load := func(r findings.LoadRow, point string) {
		sat := r.Fast.Saturated
		add(r.Group, point,
			Cell{Metric: r.Step.Endpoint + " throughput", Unit: "req/s", Better: "higher", A: r.Throughput},
			Cell{Metric: "/fast p50 from due", Unit: "ms", Better: "lower", A: toMs(r.Fast.P50), SaturatedA: sat},
			Cell{Metric: "/fast p99 from due", Unit: "ms", Better: "lower", A: toMs(r.Fast.P99), SaturatedA: sat},
			Cell{Metric: "server CPU per request", Unit: "us", Better: "lower", A: serverCPU(r.Group)})
	}
	for _, r := range f.Sweep {
		load(r.LoadRow, fmt.Sprintf("%d callers", r.Step.Conc))
	}
	for _, a := range f.AsIs {
		// A server measured as it is: its sweep step by step, with the
		// bystander's connections that stalled, and what its sweep said of
		// it as a whole under the key of its first step.
		for i, st := range a.Steps {
			sat := st.Fast.Saturated
			cells := []Cell{
				{Metric: st.Step.Endpoint + " throughput", Unit: "req/s", Better: "higher", A: st.Throughput},
				{Metric: st.Step.Endpoint + " p50", Unit: "ms", Better: "lower", A: toMs(st.LoadP50)},
				{Metric: "bystander p50 from due", Unit: "ms", Better: "lower", A: toMs(st.Fast.P50), SaturatedA: sat},
				{Metric: "bystander p99 from due", Unit: "ms", Better: "lower", A: toMs(st.Fast.P99), SaturatedA: sat},
				{Metric: "stalled connections", Unit: "", Better: "lower", A: st.Stalled},
				{Metric: "server CPU per request", Unit: "us", Better: "lower", A: serverCPU(st.Group)},
			}
			if i == 0 {
				cells = append(cells,
					Cell{Metric: "the call's own time (the load's p50 at 1 caller)", Unit: "ms", Better: "lower", A: toMs(a.Call)},
					Cell{Metric: "workers it behaves as (plateau x the call's time)", Unit: "", Better: "higher", A: positive(a.Workers)})
			}
			add(st.Group, fmt.Sprintf("%d callers", st.Step.Conc), cells...)
		}
	}
	for _, r := range f.Stall {
		add(r.Group, fmt.Sprintf("k=%d", r.Step.K),
			Cell{Metric: "stalled connections", Unit: "", Better: "lower", A: r.Stalled},
			Cell{Metric: "p50 of the stalled, from due", Unit: "ms", Better: "lower", A: toMs(r.StalledP50)},
			Cell{Metric: "p50 of the others, from due", Unit: "ms", Better: "lower", A: toMs(r.OthersP50)})
	}
	for _, r := range f.Offload {
		load(r, r.Step.Variant)
	}
	for _, r := range f.Trace {
		add(r.Group, "",
			Cell{Metric: "/async total p50", Unit: "ms", Better: "lower", A: toMs(r.Total.P50)},
			Cell{Metric: "/async continuation lateness p50", Unit: "ms", Better: "lower", A: toMs(r.Lateness.P50)})
	}
	for _, r := range f.Cliff {
		load(r, fmt.Sprintf("%d callers (%s)", r.Step.Conc, r.Step.Variant))
	}
	for _, r := range f.Slip {
		// Each side of the step on its own: the whole window mixes them.
		add(r.Group, fmt.Sprintf("%d callers (%s)", r.Step.Conc, r.Step.Variant),
			Cell{Metric: fmt.Sprintf("throughput at %s, before the slip", r.Before.Block), Unit: "req/s", Better: "higher", A: r.Before.PerS},
			Cell{Metric: fmt.Sprintf("throughput at %s, after the slip", r.After.Block), Unit: "req/s", Better: "higher", A: r.After.PerS},
			Cell{Metric: "/fast p50 from due, before the slip", Unit: "ms", Better: "lower", A: toMs(r.Before.Fast)},
			Cell{Metric: "/fast p50 from due, after the slip", Unit: "ms", Better: "lower", A: toMs(r.After.Fast)})
	}
	return out, unread
}

// positive is v as a figure of one value, none when it is not known (0).
func positive(v float64) findings.Figure {
	if v <= 0 {
		return nil
	}
	return findings.Figure{v}
}

func toMs(us findings.Figure) findings.Figure {
	var out findings.Figure
	for _, v := range us {
		out = append(out, v/1e3)
	}
	return out
}

// serverCPU is each repetition's server CPU per request, where measured.
func serverCPU(g *findings.Group) findings.Figure {
	var out findings.Figure
	for _, rep := range g.Reps {
		if c := rep.Cost; c != nil && !c.ServerNotMeasured {
			out = append(out, c.ServerCPUUsPerRequest)
		}
	}
	return out
}

// pair tests each metric both runs have.
func pair(key string, a, b measured) Row {
	r := Row{Key: key, Phase: a.phase, Endpoint: a.endpoint}
	if a.endpoint != b.endpoint {
		r.Endpoint = a.endpoint + " -> " + b.endpoint
	}
	for _, ca := range a.cells {
		for _, cb := range b.cells {
			if metricName(ca.Metric) != metricName(cb.Metric) {
				continue
			}
			c := ca
			if ca.Metric != cb.Metric {
				c.Metric = ca.Metric + " -> " + cb.Metric
			}
			c.B, c.SaturatedB = cb.A, cb.SaturatedA
			test(&c)
			r.Cells = append(r.Cells, c)
		}
	}
	return r
}

// metricName drops the endpoint from a throughput's name, so /slow and
// /offload throughputs pair.
func metricName(m string) string {
	if strings.HasSuffix(m, " throughput") && strings.HasPrefix(m, "/") {
		return "throughput"
	}
	return m
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

// differ lists what differs between the runs' parameters and machines.
func differ(a, b *results.Run) []string {
	var out []string
	d := func(name string, x, y any) {
		if sx, sy := fmt.Sprint(x), fmt.Sprint(y); sx != sy {
			out = append(out, fmt.Sprintf("%s: %s vs %s", name, sx, sy))
		}
	}
	pa, pb := a.Params, b.Params
	ns := func(v int64) time.Duration { return time.Duration(v) }
	d("schema", a.Schema, b.Schema)
	d("sweep endpoint", orSlow(pa.SweepEndpoint), orSlow(pb.SweepEndpoint))
	d("block", pa.Block, pb.Block)
	d("stall block", pa.StallBlock, pb.StallBlock)
	d("block mode", pa.BlockMode, pb.BlockMode)
	d("/async delay", ns(pa.AsyncDelayNs), ns(pb.AsyncDelayNs))
	d("callers", pa.Conc, pb.Conc)
	d("measured time", ns(pa.DurationNs), ns(pb.DurationNs))
	d("warm-up", ns(pa.WarmupNs), ns(pb.WarmupNs))
	d("servers", pa.Servers, pb.Servers)
	d("engines", pa.Engines, pb.Engines)
	d("loops", pa.Loops, pb.Loops)
	d("pool slots", pa.PoolSlots, pb.PoolSlots)
	d("offload workers", pa.OffloadWorkers, pb.OffloadWorkers)
	d("probe interval", ns(pa.ProbeEveryNs), ns(pb.ProbeEveryNs))
	d("repetitions", pa.Repeat, pb.Repeat)
	d("given on stage (--stage)", pa.Stage, pb.Stage)
	d("pinned", pa.Pin, pb.Pin)
	d("targets", targets(pa.Targets), targets(pb.Targets))
	d("asked as it is (--load, --bystander)", asked(pa.Targets), asked(pb.Targets))
	d("cores", a.Manifest.Cores, b.Manifest.Cores)
	d("CPU", a.Manifest.CPUModel, b.Manifest.CPUModel)
	d("kernel", a.Manifest.Kernel, b.Manifest.Kernel)
	d("commit", a.Manifest.GitCommit, b.Manifest.GitCommit)
	if a.Partial {
		out = append(out, "A is partial: "+a.PartialReason)
	}
	if b.Partial {
		out = append(out, "B is partial: "+b.PartialReason)
	}
	return out
}

func orSlow(s string) string {
	if s == "" {
		return "/slow"
	}
	return s
}

// asked is what each target measured as it is was asked.
func asked(ts []results.Server) string {
	var s []string
	for _, t := range ts {
		if t.AsIs() {
			s = append(s, fmt.Sprintf("%s: %s, bystander %s", t.Name, t.Load, t.Bystander))
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, "; ")
}

func targets(ts []results.Server) string {
	var s []string
	for _, t := range ts {
		s = append(s, t.Name+"="+t.URL)
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ",")
}

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
		if s := x.f.SharedText(); s != "" {
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
