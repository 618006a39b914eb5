package experiment

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bystander-kit/bystander/internal/results"
)

// Group is one step over its repetitions, with its results read back.
type Group struct {
	Step  Step
	MS    []results.Measurement
	Load  []*results.Result
	Probe []*results.Result
	Conns []*results.Result
	Trace []*results.Result
	Why   string // the first failure's status and reason
}

// OK reports whether any repetition left a result.
func (g *Group) OK() bool { return len(g.Load)+len(g.Probe)+len(g.Conns)+len(g.Trace) > 0 }

// Vals maps f over the results that have it.
func Vals(rs []*results.Result, f func(*results.Result) (float64, bool)) []float64 {
	var out []float64
	for _, r := range rs {
		if v, ok := f(r); ok {
			out = append(out, v)
		}
	}
	return out
}

// num formats the median of v with the spread when there are several.
func num(v []float64, format string) string {
	if len(v) == 0 {
		return "-"
	}
	s := fmt.Sprintf(format, results.Median(v))
	if len(v) > 1 {
		s += fmt.Sprintf(" ["+format+"-"+format+"]", slices.Min(v), slices.Max(v))
	}
	return s
}

func ms(v []float64) string { // v in us
	if len(v) == 0 {
		return "-"
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x / 1e3
	}
	return num(out, "%.1fms")
}

// Groups reads every measurement's files back, in plan order.
func Groups(dir string, run *results.Run) []*Group {
	var gs []*Group
	byID := map[string]*Group{}
	for _, m := range run.Measurements {
		g := byID[m.ID]
		if g == nil {
			g = &Group{Step: m.Step}
			byID[m.ID] = g
			gs = append(gs, g)
		}
		g.MS = append(g.MS, m)
		if m.Status != "ok" {
			if g.Why == "" {
				g.Why = m.Outcome()
			}
			continue
		}
		read := func(rel string, dst *[]*results.Result) {
			if rel == "" {
				return
			}
			if r, err := results.Read(filepath.Join(dir, rel)); err == nil {
				*dst = append(*dst, r)
			}
		}
		read(m.LoadFile, &g.Load)
		read(m.ProbeFile, &g.Probe)
		read(m.PerConnFile, &g.Conns)
		read(m.TraceFile, &g.Trace)
	}
	return gs
}

// short is the table cell for a group that left no result: the reason is
// printed in full under "Not measured".
func (g *Group) short() string {
	status, _, _ := strings.Cut(g.Why, ":")
	if status == "" {
		status = "no result"
	}
	return status + " (see below)"
}

// Summarize prints the run's tables, in the form of the published
// Netty-vs-Tomcat experiment.
func Summarize(w io.Writer, dir string, run *results.Run) {
	gs := Groups(dir, run)
	of := func(phase string) []*Group {
		var out []*Group
		for _, g := range gs {
			if g.Step.Phase == phase {
				out = append(out, g)
			}
		}
		return out
	}
	p := run.Params
	if run.Partial {
		fmt.Fprintf(w, "\nPARTIAL RUN: %s\n", run.PartialReason)
	}
	tput := func(r *results.Result) (float64, bool) {
		if r.Load == nil {
			return 0, false
		}
		return r.Load.ThroughputPerS, true
	}
	fastQ := func(q func(*results.Result) float64) func(*results.Result) (float64, bool) {
		return func(r *results.Result) (float64, bool) {
			if r.Probe == nil || r.Probe.Completed == 0 {
				return 0, false
			}
			return q(r), true
		}
	}
	p50 := fastQ(func(r *results.Result) float64 { return r.Probe.Corrected.P50Us })
	p95 := fastQ(func(r *results.Result) float64 { return r.Probe.Corrected.P95Us })
	p99 := fastQ(func(r *results.Result) float64 { return r.Probe.Corrected.P99Us })
	p50u := fastQ(func(r *results.Result) float64 { return r.Probe.Uncorrected.P50Us })
	boundOf := func(g *Group) string {
		for _, m := range g.MS {
			if m.Bound != nil {
				return m.Bound.Kind
			}
		}
		return "-"
	}
	boundShare := func(g *Group) []float64 {
		var v []float64
		for _, m := range g.MS {
			if m.Bound != nil && m.Bound.ShareOfBound > 0 {
				v = append(v, 100*m.Bound.ShareOfBound)
			}
		}
		return v
	}
	share := func(g *Group) []float64 {
		var v []float64
		for _, m := range g.MS {
			if m.Bound != nil && m.Cost != nil {
				v = append(v, 100*m.Cost.ThroughputPerS/m.Bound.WorkersCeilingPerS)
			}
		}
		return v
	}

	if sweep := of("sweep"); len(sweep) > 0 {
		fmt.Fprintf(w, "\n/slow throughput against the ceiling (block %s, workers / block)\n", time.Duration(p.BlockNs))
		tw := table(w, "callers", "server", "req/s", "ceiling", "% of ceiling", "bound", "% of bound")
		for _, g := range sweep {
			if !g.OK() {
				fmt.Fprintf(tw, "%d\t%s\t%s\t\t\t\n", g.Step.Conc, g.Step.Server.Name, g.short())
				continue
			}
			ceil := float64(g.Step.Server.Workers) / (float64(g.Step.Server.BlockNs) / 1e9)
			fmt.Fprintf(tw, "%d\t%s\t%s\t%.0f\t%s\t%s\t%s\n", g.Step.Conc, g.Step.Server.Name, num(Vals(g.Load, tput), "%.0f"), ceil,
				num(share(g), "%.0f%%"), boundOf(g), num(boundShare(g), "%.0f%%"))
		}
		tw.Flush()
		fmt.Fprintf(w, "\n/fast bystander latency meanwhile (50 ms probes on one connection, timed from when each was due;\n"+
			"a probe held up delays the ones due after it, and they count that wait; the last column times from the send)\n")
		tw = table(w, "callers", "server", "p50", "p95", "p99", "probes", "p50 from send")
		for _, g := range sweep {
			if !g.OK() {
				continue
			}
			n := Vals(g.Probe, func(r *results.Result) (float64, bool) {
				if r.Probe == nil {
					return 0, false
				}
				return float64(r.Probe.Completed), true
			})
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Step.Conc, g.Step.Server.Name, ms(Vals(g.Probe, p50)), ms(Vals(g.Probe, p95)),
				ms(Vals(g.Probe, p99)), num(n, "%.0f"), ms(Vals(g.Probe, p50u)))
		}
		tw.Flush()
	}

	if stall := of("stall"); len(stall) > 0 {
		fmt.Fprintf(w, "\nStalled connections: 12 /async connections, k loops kept blocked by %s calls (pool: as many callers)\n", time.Duration(p.StallBlockNs))
		tw := table(w, "k", "server", "stalled of 12", "expected", "p50 stalled", "p50 others")
		for _, g := range stall {
			exp := fmt.Sprintf("%d", 3*g.Step.K)
			if g.Step.Server.Kind == "pool" {
				exp = "0"
			}
			if len(g.Conns) == 0 {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t\t\n", g.Step.K, g.Step.Server.Name, g.short(), exp)
				continue
			}
			var stalled, sp, hp []float64
			for _, r := range g.Conns {
				if r.PerConn == nil {
					continue
				}
				stalled = append(stalled, float64(r.PerConn.Stalled))
				var s, h []float64
				for _, c := range r.PerConn.Conns {
					if c.Stalled {
						s = append(s, c.P50Us)
					} else {
						h = append(h, c.P50Us)
					}
				}
				if len(s) > 0 {
					sp = append(sp, results.Median(s))
				}
				if len(h) > 0 {
					hp = append(hp, results.Median(h))
				}
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", g.Step.K, g.Step.Server.Name, num(stalled, "%.0f"), exp, ms(sp), ms(hp))
		}
		tw.Flush()
	}

	if off := of("offload"); len(off) > 0 {
		fmt.Fprintf(w, "\nBlocking on the loop vs offloaded vs the pool (%d callers, block %s)\n", off[0].Step.Conc, time.Duration(p.BlockNs))
		tw := table(w, "variant", "server", "endpoint", "req/s", "/fast p50", "/fast p95", "bound")
		for _, g := range off {
			if !g.OK() {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\t\t\n", g.Step.Variant, g.Step.Server.Name, g.Step.Endpoint, g.short())
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Step.Variant, g.Step.Server.Name, g.Step.Endpoint,
				num(Vals(g.Load, tput), "%.0f"), ms(Vals(g.Probe, p50)), ms(Vals(g.Probe, p95)), boundOf(g))
		}
		tw.Flush()
	}

	if tr := of("trace"); len(tr) > 0 {
		fmt.Fprintf(w, "\n/async taken apart while %d callers block on /slow (%s); medians of the p50s\n", tr[0].Step.Conc, time.Duration(p.StallBlockNs))
		tw := table(w, "server", "samples", "accepted", "continuation late", "return", "total p50", "total p99")
		for _, g := range tr {
			if len(g.Trace) == 0 {
				fmt.Fprintf(tw, "%s\t%s\t\t\t\t\t\n", g.Step.Server.Name, g.short())
				continue
			}
			t := func(f func(*results.Trace) float64) []float64 {
				return Vals(g.Trace, func(r *results.Result) (float64, bool) {
					if r.Trace == nil || r.Trace.Total.Count == 0 {
						return 0, false
					}
					return f(r.Trace), true
				})
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Step.Server.Name, num(t(func(x *results.Trace) float64 { return float64(x.Total.Count) }), "%.0f"),
				ms(t(func(x *results.Trace) float64 { return x.Accepted.P50Us })), ms(t(func(x *results.Trace) float64 { return x.Lateness.P50Us })),
				ms(t(func(x *results.Trace) float64 { return x.Return.P50Us })), ms(t(func(x *results.Trace) float64 { return x.Total.P50Us })),
				ms(t(func(x *results.Trace) float64 { return x.Total.P99Us })))
		}
		tw.Flush()
	}

	if cl := of("cliff"); len(cl) > 0 {
		fmt.Fprintf(w, "\nThe pool's cliff: %d slots, block %s, /fast probed meanwhile\n", p.PoolSlots, time.Duration(p.StallBlockNs))
		tw := table(w, "callers", "of slots", "req/s", "/fast p50", "/fast p95", "/fast p99")
		for _, g := range cl {
			if !g.OK() {
				fmt.Fprintf(tw, "%d\t%s\t%s\t\t\t\n", g.Step.Conc, g.Step.Variant, g.short())
				continue
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", g.Step.Conc, g.Step.Variant, num(Vals(g.Load, tput), "%.0f"),
				ms(Vals(g.Probe, p50)), ms(Vals(g.Probe, p95)), ms(Vals(g.Probe, p99)))
		}
		tw.Flush()
	}

	fmt.Fprintf(w, "\nCost per request and what bounds each row (server from /proc over the measured window)\n")
	tw := table(w, "measurement", "server CPU us", "ctx switches", "threads", "peak RSS", "generator CPU us", "bound")
	rows := 0
	for _, g := range gs {
		var cpu, cs, th, rss, gen []float64
		var text string
		for _, m := range g.MS {
			if m.Cost == nil {
				continue
			}
			cpu = append(cpu, m.Cost.ServerCPUUsPerRequest)
			cs = append(cs, m.Cost.CtxSwitchesPerRequest)
			th = append(th, float64(m.Cost.Threads))
			rss = append(rss, float64(m.Cost.PeakRSSBytes)/(1<<20))
			gen = append(gen, m.Cost.GeneratorCPUUsPerReq)
			if m.Bound != nil {
				text = m.Bound.Text
				if m.Bound.GeneratorLimited {
					text = "FLAGGED " + text
				}
			}
		}
		if len(cpu) == 0 {
			continue
		}
		rows++
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Step.ID, num(cpu, "%.1f"), num(cs, "%.2f"), num(th, "%.0f"), num(rss, "%.0fMB"), num(gen, "%.1f"), text)
	}
	tw.Flush()
	if rows == 0 {
		fmt.Fprintln(w, "  (no load measurement completed)")
	}
	var failed []string
	for _, m := range run.Measurements {
		if m.Status != "ok" {
			failed = append(failed, fmt.Sprintf("  %s (rep %d): %s: %s", m.ID, m.Repeat, m.Status, m.Reason))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "\nNot measured:\n%s\n", strings.Join(failed, "\n"))
	}
}

func table(w io.Writer, cols ...string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	return tw
}
