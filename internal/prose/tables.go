package prose

import (
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bystander-kit/bystander/internal/findings"

	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/stall"
	"github.com/bystander-kit/bystander/internal/words"
)

// num formats the median of v with the spread when there are several.
func num(v findings.Figure, format string) string {
	if !v.OK() {
		return "-"
	}
	s := fmt.Sprintf(format, v.Median())
	if len(v) > 1 {
		lo, hi := v.Spread()
		s += fmt.Sprintf(" ["+format+"-"+format+"]", lo, hi)
	}
	return s
}

// JoinFigure is a figure's median, with its spread when it has several.
func JoinFigure(v findings.Figure) string { return num(v, "%.0f") }

// ms formats a figure in us as milliseconds.
func ms(v findings.Figure) string {
	out := make(findings.Figure, len(v))
	for i, x := range v {
		out[i] = x / 1e3
	}
	return num(out, "%.1fms")
}

// WriteTables prints the findings as the terminal's tables, in the form of
// the published Netty-vs-Tomcat experiment: it formats, and computes
// nothing the findings do not hold.
func WriteTables(w io.Writer, f *findings.Findings) {
	if f.Run.Partial {
		fmt.Fprintf(w, "\nPARTIAL RUN: %s\n", f.Run.PartialReason)
	}
	if f.Params.Stage {
		fmt.Fprintf(w, "\n%s.\n", findings.OnStage)
	}
	writeSweep(w, f)
	writeAsIs(w, f)
	// A phase every server skipped has no table (the report no section):
	// one line says which, and why.
	skipped := map[string]bool{}
	var all []findings.PhaseSkips
	for _, ps := range f.Skips() {
		if !ps.Ran && len(ps.Skipped) > 0 {
			skipped[ps.Phase] = true
			all = append(all, ps)
		}
	}
	if c := SkippedPhases(all, "Not measured, at the end, says why, measurement by measurement"); len(c) > 0 {
		fmt.Fprintf(w, "\nNot in these tables: %s.\n", strings.Join(c, "; "))
	}
	for _, ph := range []struct {
		name  string
		write func(io.Writer, *findings.Findings)
	}{{"stall", writeStall}, {"offload", writeOffload}, {"trace", writeTrace}, {"cliff", writeCliff}, {"slip", writeSlip}} {
		if !skipped[ph.name] {
			ph.write(w, f)
		}
	}
	writeClasses(w, f)
	writePublished(w, f)
	writeCost(w, f)
	writeNotes(w, f)
}

// writeSweep prints the sweep: throughput against the ceiling, and the bystander meanwhile.
func writeSweep(w io.Writer, f *findings.Findings) {
	if !(len(f.Sweep) > 0) {
		return
	}
	p := f.Params
	fmt.Fprintf(w, "\n%s throughput against the ceiling (block %s, %s mode; ceiling = workers / block)\n", p.SweepEndpoint, p.Block, p.BlockMode)
	tw := table(w, "callers", "server", "req/s", "ceiling", "% of ceiling", "bound", "% of bound", "Little's law", "blocked")
	for _, r := range f.Sweep {
		if !r.OK() {
			fmt.Fprintf(tw, "%d\t%s\t%s\t\t\t\t\t\t\n", r.Step.Conc, r.Step.Server.Name, Short(r.Group))
			continue
		}
		var pct findings.Figure
		ceiling := "unknown"
		if r.NominalCeiling > 0 {
			ceiling = fmt.Sprintf("%.0f", r.NominalCeiling)
			for _, x := range r.CeilingShare() {
				pct = append(pct, 100*x)
			}
		}
		little := "-"
		if b := r.Bound(); b != nil && b.Little > 0 {
			little = fmt.Sprintf("%.3f", b.Little)
			if !b.LittleOK {
				little += " (off)"
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Step.Conc, r.Step.Server.Name, num(r.Throughput, "%.0f"), ceiling,
			num(pct, "%.0f%%"), r.Kind(), num(r.BoundShare(), "%.0f%%"), little, BlockedText(r.LoadRow))
	}
	tw.Flush()
	fmt.Fprintf(w, "\n/fast bystander meanwhile (one connection, a probe due every %s over the load's measured window;\n"+
		"\"from due\" counts the wait of probes held up behind an earlier one, \"from send\" does not)\n", p.ProbeInterval)
	bystanderTable(w, "callers", false, f.Sweep, func(r findings.SweepRow) (string, findings.LoadRow) {
		return fmt.Sprint(r.Step.Conc), r.LoadRow
	})
}

// writeAsIs prints each server measured as it is: its sweep with the
// figures inferred from it, who stalled at each step, its class.
func writeAsIs(w io.Writer, f *findings.Findings) {
	for _, a := range f.AsIs {
		fmt.Fprintf(w, "\n%s as it is: the sweep loads %s at each concurrency; its bystander %s is probed every %s on one connection, and every %s on %s\n",
			a.Server, a.Load, a.Bystander, f.Params.ProbeInterval, asIsInterval(f, a), words.Plural(asIsConns(f, a), "connection"))
		fmt.Fprintf(w, "  the call's own time %s (the load's median at 1 caller); plateau %s; behaves as %s; ceiling %s\n",
			callText(a), AsIsPlateau(a), AsIsWorkers(a), AsIsCeiling(a))
		tw := table(w, "callers", "req/s", "load p50", "not answered", "bound", "bystander p50 from due", "p95", "answered of due", "stalled", "which", "stalled wait", "others", "unloaded")
		var said []string
		for _, st := range a.Steps {
			if !st.OK() {
				fmt.Fprintf(tw, "%d\t%s\t\t\t\t\t\t\t\t\t\t\t\n", st.Step.Conc, Short(st.Group))
				continue
			}
			at := words.Plural(st.Step.Conc, "caller")
			if st.Said != "" {
				said = append(said, fmt.Sprintf("at %s: %s", at, st.Said))
			}
			for _, u := range asIsUnjudged(st) {
				said = append(said, fmt.Sprintf("at %s: %s", at, u))
			}
			if n := st.NotAnswered(); n > 0 {
				said = append(said, fmt.Sprintf("at %s: %s of the load's requests not answered 2xx or 3xx (%s): counted apart, never as answers", at, words.Thousands(float64(n)), results.ErrorsLine(st.Errors)))
			}
			if c := AsIsClosed(st); c != "" {
				said = append(said, fmt.Sprintf("at %s: %s", at, c))
			}
			if b := st.Bound(); b != nil && b.Kind != "workers" && b.Kind != "callers" {
				said = append(said, fmt.Sprintf("at %s: bound: %s", at, BoundLine(b)))
			}
			answered := "-"
			if st.Fast.Due.OK() {
				answered = fmt.Sprintf("%.0f of %.0f", st.Fast.Answered.Median(), st.Fast.Due.Median())
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", st.Step.Conc, num(st.Throughput, "%.0f"), ms(st.LoadP50), st.NotAnswered(), st.Kind(),
				ms(st.Fast.P50), ms(st.Fast.P95), answered, AsIsStalled(st), words.Dash(AsIsWho(st)), ms(st.StalledWait), ms(st.OthersWait), ms(st.Unloaded))
		}
		tw.Flush()
		fmt.Fprintf(w, "  stalled: %s;\n  which: the connections by number (the service says no loop); unloaded: their wait before the load\n", stall.RuleClient)
		for _, l := range said {
			fmt.Fprintf(w, "  %s\n", l)
		}
		fmt.Fprintf(w, "  class: %s: %s\n  %s\n", a.Class, AsIsClass(a), AsIsCPU(a))
		writeWatch(w, a)
	}
}

// asIsConns and asIsInterval are the 12-connection prober's shape, as its
// results say (the run's, else the kit's).
func asIsConns(f *findings.Findings, a findings.AsIs) int {
	for _, st := range a.Steps {
		for _, r := range st.Group.Conns {
			if r.PerConn != nil {
				return len(r.PerConn.Conns)
			}
		}
	}
	return 12
}

func asIsInterval(f *findings.Findings, a findings.AsIs) time.Duration {
	for _, st := range a.Steps {
		for _, r := range st.Group.Conns {
			if r.PerConn != nil {
				return time.Duration(r.PerConn.IntervalNs)
			}
		}
	}
	return f.Params.StallInterval
}

func callText(a findings.AsIs) string {
	if !a.Call.OK() {
		return "not measured"
	}
	return ms(a.Call)
}

// writeStall prints which connections stalled with k loops blocked.
func writeStall(w io.Writer, f *findings.Findings) {
	if !(len(f.Stall) > 0) {
		return
	}
	p := f.Params
	fmt.Fprintf(w, "\nStalled connections: %d /async connections per loop (the kit's servers: %d), each probed every %s; k loops kept blocked by %s calls (pool: k callers)\n",
		p.StallConns/max(p.Loops, 1), p.StallConns, p.StallInterval, p.StallBlock)
	tw := table(w, "k", "server", "stalled", "expected", "exactly those", "server made stalled wait", "others", "(stalled, from due)", "blockers' call", "machine", "loops blocked (server's detector)")
	var said, nopid []string
	for _, r := range f.Stall {
		name := fmt.Sprintf("k=%d %s", r.Step.K, r.Step.Server.Name)
		for _, u := range r.Unjudged {
			said = append(said, name+": "+StallUnjudged(u))
		}
		for _, m := range r.Mismatch {
			said = append(said, name+": not exactly those: "+StallMismatch(m))
		}
		if off := BlockOffText(r.Step.Block.D(), r.BlockOffNs); off != "" {
			said = append(said, name+": "+off)
		}
		if c := StallCulprit(r); c != "" {
			said = append(said, name+": held "+c)
		}
		for _, o := range r.Outside {
			said = append(said, name+": seen from outside: "+o)
		}
		if srv := r.Step.Server; srv.External && srv.PID == 0 && r.Step.K > 0 && !slices.Contains(nopid, srv.Name) {
			nopid = append(nopid, srv.Name)
			if u, err := url.Parse(srv.URL); err == nil && u.Hostname() != "" && !client.IsLoopback(u.Hostname()) {
				said = append(said, srv.Name+": not on this machine: the kit cannot look at its threads (from /proc) to name the ones its blockers held")
			} else {
				said = append(said, srv.Name+": no pid= given: with one, the kit names the threads its blockers held, from /proc (and a JVM's stacks, with jcmd)")
			}
		}
		if !r.Stalled.OK() && len(r.Unjudged) == 0 {
			fmt.Fprintf(tw, "%d\t%s\t%s\t\t\t\t\t\t\t\t\n", r.Step.K, r.Step.Server.Name, Short(r.Group))
			continue
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Step.K, r.Step.Server.Name, StallStalled(r), num(r.Expected, "%.0f"), StallMatch(r),
			ms(r.StalledWait), ms(r.OthersWait), ms(r.StalledP50), ms(us(r.BlockerBlock)), StallMachine(r), StallDetector(r))
	}
	tw.Flush()
	if slices.ContainsFunc(f.Stall, func(r findings.StallRow) bool { return r.OK() || len(r.Unjudged) > 0 }) { // else every row skipped or failed, each with why below
		fmt.Fprintf(w, "  stalled: %s (here %s of the %s call);\n"+
			"  expected: the connections on the loops the blockers' requests were answered on (their X-Loop);\n"+
			"  from due: a stalled connection's probes queue behind each other for as long as the run lasts;\n"+
			"  loops blocked: the loops the server's own detector saw held in /slow, and whether exactly the blockers' loops\n",
			stall.Rule, words.Round(time.Duration(stallAbove(f).Median()*1e3)), p.StallBlock)
	}
	for _, l := range said {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// writeOffload prints blocking on the loop against offloaded and the pool.
func writeOffload(w io.Writer, f *findings.Findings) {
	if !(len(f.Offload) > 0) {
		return
	}
	p := f.Params
	fmt.Fprintf(w, "\nBlocking on the loop vs offloaded vs the pool (%d callers, block %s)\n", f.Offload[0].Step.Conc, p.Block)
	tw := table(w, "variant", "server", "endpoint", "req/s", "/fast p50", "/fast p95", "bound")
	for _, r := range f.Offload {
		if !r.OK() {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\t\t\n", r.Step.Variant, r.Step.Server.Name, r.Step.Endpoint, Short(r.Group))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Step.Variant, r.Step.Server.Name, r.Step.Endpoint,
			num(r.Throughput, "%.0f"), ms(r.Fast.P50), ms(r.Fast.P95), r.Kind())
	}
	tw.Flush()
	saturation(w, f.Offload, func(r findings.LoadRow) string { return r.Step.Variant + " " + r.Step.Server.Name })
}

// writeTrace prints the /async trace taken apart.
func writeTrace(w io.Writer, f *findings.Findings) {
	if !(len(f.Trace) > 0) {
		return
	}
	p := f.Params
	fmt.Fprintf(w, "\n/async (delay %s) taken apart while %d callers block on /slow (%s); p50 of each span, n samples each\n", p.Delay, p.TraceCallers, p.StallBlock)
	tw := table(w, "server", "n", "accepted", "continuation late", "return", "total p50", "total p99")
	for _, r := range f.Trace {
		if !r.Total.N.OK() {
			fmt.Fprintf(tw, "%s\t%s\t\t\t\t\t\n", r.Step.Server.Name, Short(r.Group))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Step.Server.Name, num(r.Total.N, "%.0f"), ms(r.Accepted.P50), ms(r.Lateness.P50),
			ms(r.Return.P50), ms(r.Total.P50), ms(r.Total.P99))
	}
	tw.Flush()
}

// writeCliff prints the pools' cliff.
func writeCliff(w io.Writer, f *findings.Findings) {
	if !(len(f.Cliff) > 0) {
		return
	}
	p := f.Params
	db := ""
	if p.DBPool > 0 {
		db = ", or of its database connections where they are fewer"
	}
	fmt.Fprintf(w, "\nThe pools' cliff: callers at shares of each pool's slots%s (a server with no pool: at the run's pool's), block %s, /fast probed every %s meanwhile\n", db, p.StallBlock, p.ProbeInterval)
	bystanderTable(w, "callers (of slots)", true, f.Cliff, func(r findings.LoadRow) (string, findings.LoadRow) {
		if findings.DBBinds(r.Step, p.OffloadWorkers) { // the database's connections are the pool that binds
			return fmt.Sprintf("%d (%s of %d database connections)", r.Step.Conc, r.Step.Variant, r.Step.Server.DBConns), r
		}
		if r.Step.Server.Workers == 0 { // no pool declared: at the callers of the run's pool
			return fmt.Sprint(r.Step.Conc), r
		}
		return fmt.Sprintf("%d (%s of %d)", r.Step.Conc, r.Step.Variant, r.Step.Server.Workers), r
	})
}

// writeSlip prints the bad afternoon: each server on both sides of the
// step, against the ceiling that binds each side.
func writeSlip(w io.Writer, f *findings.Findings) {
	if len(f.Slip) == 0 {
		return
	}
	// The header says what the phase asked for: run.json's blocks, the one
	// road (a server measured as it is asks none: its call is its own),
	// at the first measured server's callers.
	first := f.Slip[0]
	if i := slices.IndexFunc(f.Slip, func(r findings.SlipRow) bool { return r.OK() }); i >= 0 {
		first = f.Slip[i]
	}
	fmt.Fprintf(w, "\nThe bad afternoon: /slow at %d callers asking for %s, then %s %s (the slip); /fast probed every %s meanwhile\n",
		first.Step.Conc, f.Params.Block, f.Params.SlipBlock, SlipMoment(f), f.Params.ProbeInterval)
	tw := table(w, "server", "side", "asked", "measured block", "req/s", "the ceiling that binds", "of it", "/fast p50 from due", "/fast answered")
	var notes []string
	for _, r := range f.Slip {
		name := r.Step.Server.Name
		if !r.OK() || !r.Before.PerS.OK() || !r.After.PerS.OK() {
			why := Short(r.Group)
			if r.OK() {
				why = "the two sides not told apart: " + SlipNotSplit(r)
			}
			fmt.Fprintf(tw, "%s\t%s\t\t\t\t\t\t\t\n", name, why)
			continue
		}
		sides := []struct {
			label string
			h     findings.SlipHalf
		}{
			{fmt.Sprintf("before (0-%s)", r.At.Round(time.Millisecond)), r.Before},
			{fmt.Sprintf("after (%s-%s)", time.Duration(r.AfterFrom.Median()), r.Step.Duration), r.After},
		}
		for i, sd := range sides {
			h := sd.h
			fast := ms(h.Fast)
			if h.FastCensored > 0 {
				fast = ">=" + fast // censored probes count at their wait so far
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s / %s = %s req/s\t%s\t%s\t%d of %d\n", map[bool]string{true: name}[i == 0], sd.label, h.Block,
				ms(us(h.MeasuredBlock)), perS(h.PerS), Workers(r.Workers, r.Binds), h.Block, words.Thousands(h.Ceiling), pct(h.Share), fast, h.FastProbes-h.FastCensored, h.FastProbes)
		}
		notes = append(notes, "  "+SlipSentence(r))
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	fmt.Fprintln(w, "  (/fast from due: a probe unanswered when the window ended counts at its wait so far, so a figure marked >= is a lower bound)")
}

// perS is answers per second: whole above 100, one decimal below.
func perS(v findings.Figure) string {
	if v.OK() && v.Median() < 100 {
		return num(v, "%.1f")
	}
	return num(v, "%.0f")
}

// pct is a share as a whole percentage.
func pct(v findings.Figure) string {
	out := make(findings.Figure, len(v))
	for i, x := range v {
		out[i] = 100 * x
	}
	return num(out, "%.0f%%")
}

// writeCost prints the cost per request and what bounds each row.
func writeCost(w io.Writer, f *findings.Findings) {
	fmt.Fprintf(w, "\nCost per request and what bounds each row (server from /proc over the measured window)\n")
	// The private database's CPU (--block-mode postgres) is a column of
	// its own when the run had one.
	db := slices.ContainsFunc(f.Cost, func(r findings.CostRow) bool { return r.Cost.DBCores > 0 })
	cols := []string{"measurement", "server CPU us", "ctx switches", "threads", "peak RSS", "generator CPU us"}
	if db {
		cols = append(cols, "database CPU us")
	}
	tw := table(w, append(cols, "bound")...)
	for _, r := range f.Cost {
		id := r.ID
		if r.Repeat > 1 {
			id += fmt.Sprintf(" (rep %d)", r.Repeat)
		}
		line := BoundLine(r.Bound)
		if r.Bound != nil && r.Bound.Flagged {
			line = "FLAGGED " + line
		}
		c := r.Cost
		if db {
			line = fmt.Sprintf("%.1f\t%s", c.DBCPUUsPerRequest, line)
		}
		if c.ServerNotMeasured {
			const nm = "not measured (external)"
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.1f\t%s\n", id, nm, nm, "-", "-", c.GeneratorCPUUsPerReq, line)
			continue
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.2f\t%d\t%.0fMB\t%.1f\t%s\n", id, c.ServerCPUUsPerRequest, c.CtxSwitchesPerRequest, c.Threads,
			float64(c.PeakRSSBytes)/(1<<20), c.GeneratorCPUUsPerReq, line)
	}
	tw.Flush()
	if len(f.Cost) == 0 {
		fmt.Fprintln(w, "  (no load measurement completed)")
	}
}

// writeNotes prints what was noticed and what was not measured.
func writeNotes(w io.Writer, f *findings.Findings) {
	if n := Noticed(f); len(n) > 0 {
		fmt.Fprintf(w, "\nNoticed while measuring:\n  %s\n", strings.Join(n, "\n  "))
	}
	if n := NotMeasured(f); len(n) > 0 {
		fmt.Fprintf(w, "\nNot measured:\n  %s\n", strings.Join(n, "\n  "))
	}
}

// writeClasses prints what each server did with a blocking call.
func writeClasses(w io.Writer, f *findings.Findings) {
	cs := Classes(f)
	if len(cs) == 0 {
		return
	}
	fmt.Fprintf(w, "\nWhat each server does with a blocking call, from this run's measurements\n(%s)\n", ClassesText)
	tw := table(w, "server", "class", "what the run showed")
	for _, c := range cs {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Server, c.Class, c.Text)
		if c.CPU != "" { // measured as it is: its sweep said its class, and whether its call ran on a CPU
			fmt.Fprintf(tw, "\t\t%s\n", c.CPU)
			continue
		}
		if c.Sweep != "" {
			line := "/slow " + c.Sweep
			if c.Fast != "" {
				line += "; /fast p50 " + c.Fast
			}
			fmt.Fprintf(tw, "\t\t%s\n", line)
		}
	}
	tw.Flush()
}

// stallAbove is where the rule put a stall in the stall rows, us.
func stallAbove(f *findings.Findings) findings.Figure {
	var out findings.Figure
	for _, r := range f.Stall {
		out = append(out, r.Above...)
	}
	return out
}

// writePublished prints this run beside the published experiment.
func writePublished(w io.Writer, f *findings.Findings) {
	rows := Published(f)
	fmt.Fprintf(w, "\nThis run beside the published Netty-vs-Tomcat experiment (%s)\n", PublishedHeading(f))
	if len(rows) == 0 {
		fmt.Fprintf(w, "  %s\n", PublishedNone)
		return
	}
	tw := table(w, "figure", "server", "this run", "of its ceiling", "published", "of its ceiling", "differs")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.What, r.Server, r.This, words.Dash(r.ThisShare), r.Published, words.Dash(r.PubShare), words.Dash(r.Differs))
	}
	tw.Flush()
}

// bystanderTable prints the /fast prober's figures for rows of a phase;
// label gives each row's first cell and its load row; withTput adds the
// load's throughput after the server.
func bystanderTable[R any](w io.Writer, first string, withTput bool, rows []R, label func(R) (string, findings.LoadRow)) {
	cols := []string{first, "server", "p50 from due", "p95", "p99", "p50 from send", "p95", "answered of due"}
	if withTput {
		cols = slices.Insert(cols, 2, "req/s")
	}
	tw := table(w, cols...)
	var said []findings.LoadRow // rows with something to say in words
	for _, row := range rows {
		a, r := label(row)
		b := r.Step.Server.Name
		if withTput {
			b += "\t" + num(r.Throughput, "%.0f")
		}
		if !r.OK() {
			fmt.Fprintf(tw, "%s\t%s\t%s\t\t\t\t\t\n", a, b, Short(r.Group))
			continue
		}
		mark := ""
		if r.Fast.Saturated {
			mark = "  SATURATED"
		}
		if r.Fast.Saturated || r.Fast.Misaligned != 0 {
			said = append(said, r)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s of %s%s\n", a, b, ms(r.Fast.P50), ms(r.Fast.P95), ms(r.Fast.P99),
			ms(r.Fast.SendP50), ms(r.Fast.SendP95), num(r.Fast.Answered, "%.0f"), num(r.Fast.Due, "%.0f"), mark)
	}
	tw.Flush()
	saturation(w, said, func(r findings.LoadRow) string {
		return fmt.Sprintf("%s at %d callers", r.Step.Server.Name, r.Step.Conc)
	})
}

// saturation says in words which rows' bystander saturated, and whose
// window did not coincide with the load's.
func saturation(w io.Writer, rows []findings.LoadRow, name func(findings.LoadRow) string) {
	for _, r := range rows {
		if r.Fast.Saturated {
			fmt.Fprintf(w, "  SATURATED, %s: %s; %s\n", name(r), Saturated(r.Fast), Censored(r.Fast))
		}
		if m := Misaligned(r.Fast); m != "" {
			fmt.Fprintf(w, "  %s: %s\n", name(r), m)
		}
	}
}

func table(w io.Writer, cols ...string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	return tw
}

// writeWatch prints the watch's lines under the server's table.
func writeWatch(w io.Writer, a findings.AsIs) {
	lines := AsIsWatchLines(a)
	if !a.Watch.Watched() {
		fmt.Fprintf(w, "  %s\n", strings.Join(lines, "\n  "))
		return
	}
	fmt.Fprintf(w, "  %s:\n    %s\n", AsIsWatchHeading(a.Watch), strings.Join(lines, "\n    "))
}

// us is a figure in ns as us.
func us(v findings.Figure) findings.Figure {
	out := make(findings.Figure, len(v))
	for i, x := range v {
		out[i] = x / 1e3
	}
	return out
}
