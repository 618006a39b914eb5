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
	"slices"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/prose"
	"github.com/bystander-kit/bystander/internal/results"
)

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
			if g.Miss != nil && g.Miss.Unread != nil {
				unread[key] = prose.GroupWhy(g)
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
