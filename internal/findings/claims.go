package findings

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bystander-kit/bystander/internal/words"
)

// Claim is one of the story's claims, checked on the run's data.
type Claim struct {
	ID string `json:"id"`
	// Known: the run measured what the claim is about; Held: it held.
	Known bool `json:"known"`
	Held  bool `json:"held"`
	// Text is the claim in words; Figure the figures that decided, said
	// whether it held or not.
	Text   string `json:"text"`
	Figure string `json:"figure"`
}

// Sentence is what a page says of the claim: the claim with its figures
// when it held, that it did not hold with its figures when it did not,
// and nothing when the run did not measure it.
func (c Claim) Sentence() string {
	switch {
	case !c.Known:
		return ""
	case c.Held:
		return fmt.Sprintf("%s (%s).", c.Text, c.Figure)
	}
	return fmt.Sprintf("The story says %s; it did not hold in this run: %s.", words.LowerFirst(c.Text), c.Figure)
}

// The claims the pages state, by ID.
const (
	ClaimLoopsFlatten   = "loops-flatten"
	ClaimPoolClimbs     = "pool-climbs"
	ClaimBystanderWaits = "bystander-waits"
	ClaimQueueGrows     = "queue-grows"
	ClaimWholeLoops     = "whole-loops"
	ClaimPoolNoStall    = "pool-no-stall"
	ClaimOffloadHelps   = "offload-helps"
	ClaimTraceTwice     = "trace-twice"
	ClaimCliff          = "cliff"
	ClaimLagShows       = "lag-shows"
)

// Claim returns the claim with id (a zero, unknown one when there is none).
func (f *Findings) Claim(id string) Claim {
	for _, c := range f.Claims {
		if c.ID == id {
			return c
		}
	}
	return Claim{ID: id}
}

// highest is each server's sweep row at its highest concurrency, and its
// lowest, in the order the servers were measured.
func highest(rows []SweepRow, kind string) (hi, lo []SweepRow) {
	byName := map[string][2]int{}
	var names []string
	for i, r := range rows {
		if !r.Throughput.OK() || r.Step.Server.Kind != kind {
			continue
		}
		x, ok := byName[r.Step.Server.Name]
		if !ok {
			names = append(names, r.Step.Server.Name)
			x = [2]int{i, i}
		}
		if r.Step.Conc > rows[x[0]].Step.Conc {
			x[0] = i
		}
		if r.Step.Conc < rows[x[1]].Step.Conc {
			x[1] = i
		}
		byName[r.Step.Server.Name] = x
	}
	for _, n := range names {
		hi = append(hi, rows[byName[n][0]])
		lo = append(lo, rows[byName[n][1]])
	}
	return hi, lo
}

// The thresholds the story's claims are judged by.
const (
	// ClimbAtLeast: the pool keeps climbing when its throughput at its
	// most callers is this many times that at its fewest, or more.
	ClimbAtLeast = 1.5
	// WaitsTimes, WaitsAtLeastUs: the bystander waits beside the loops
	// when its /fast p50 there is this many times the pool's, and this
	// many microseconds or more.
	WaitsTimes     = 10
	WaitsAtLeastUs = 1000
	// OffloadTimes, OffloadFastTimes: moving the call off the loop buys
	// back the throughput when it is this many times the blocking one's,
	// and the bystander when its /fast p50 falls this many times.
	OffloadTimes     = 2
	OffloadFastTimes = 10
	// TraceLoopAtLeast, TracePoolUnder: shares of the block. On the loops
	// the wait to be accepted and the continuation's lateness are each
	// this share of it or more; on the pool each is under that share.
	TraceLoopAtLeast = 0.25
	TracePoolUnder   = 0.10
	// CliffTimes, CliffAtLeastUs: past its slots the pool's /fast p50 is
	// this many times its p50 with free slots, and this many
	// microseconds or more.
	CliffTimes     = 10
	CliffAtLeastUs = 10e3
)

// sweepEnds is what several checks start from: each loop server's and
// each pool's sweep row at its most callers (and the pools' at their
// fewest), and whether the sweep called the blocking endpoint.
type sweepEnds struct {
	loopsHi, poolsHi, poolsLo []SweepRow
	slow                      bool
}

// claimChecks are the story's claims, each a small check on the run, in
// the order the pages state them.
var claimChecks = []func(*Findings, sweepEnds) []Claim{
	loopsFlatten, poolClimbs, bystanderWaits, stallsWholeLoops, offloadHelps, traceTwice, poolCliff, lagShows,
}

// claims checks each of the story's claims on the run.
func claims(f *Findings) []Claim {
	var e sweepEnds
	e.loopsHi, _ = highest(f.Sweep, "loop")
	e.poolsHi, e.poolsLo = highest(f.Sweep, "pool")
	e.slow = f.Params.SweepEndpoint == "/slow"
	var out []Claim
	for _, check := range claimChecks {
		out = append(out, check(f, e)...)
	}
	for i := range out {
		out[i].Held = out[i].Held && out[i].Known // a claim not measured is not one that held
	}
	return out
}

// loopsFlatten: the event loops flatten at their ceiling.
func loopsFlatten(f *Findings, e sweepEnds) []Claim {
	c := Claim{ID: ClaimLoopsFlatten, Text: "The event loops flatten at their ceiling however many callers come"}
	if !e.slow || len(e.loopsHi) == 0 {
		return []Claim{c}
	}
	c.Known, c.Held = true, true
	var figs []string
	for _, r := range e.loopsHi {
		figs = append(figs, fmt.Sprintf("%s %s req/s at %d callers, %.0f%% of %s", r.Step.Server.Name, words.Thousands(r.Throughput.Median()), r.Step.Conc,
			100*r.CeilingShare().Median(), f.Server(r.Step.Server.Name).CeilingText()))
		if r.Kind() != "workers" {
			c.Held = false
		}
	}
	c.Figure = strings.Join(figs, "; ")
	return []Claim{c}
}

// poolClimbs: the pool climbs with the callers.
func poolClimbs(_ *Findings, e sweepEnds) []Claim {
	c := Claim{ID: ClaimPoolClimbs, Text: "The pool keeps climbing with the callers"}
	if !e.slow || len(e.poolsHi) == 0 {
		return []Claim{c}
	}
	c.Held = true
	var figs []string
	for i, r := range e.poolsHi {
		lo := e.poolsLo[i]
		if r.Step.Conc == lo.Step.Conc {
			continue // one concurrency: nothing to climb
		}
		c.Known = true
		figs = append(figs, fmt.Sprintf("%s from %s req/s at %d callers to %s at %d", r.Step.Server.Name, words.Thousands(lo.Throughput.Median()), lo.Step.Conc,
			words.Thousands(r.Throughput.Median()), r.Step.Conc))
		if r.Throughput.Median() < ClimbAtLeast*lo.Throughput.Median() || r.Kind() == "workers" {
			c.Held = false
		}
	}
	c.Figure = strings.Join(figs, "; ")
	return []Claim{c}
}

// bystanderWaits: the bystander waits beside the loops, not beside the
// pool, and the probes queue behind each other there.
func bystanderWaits(_ *Findings, e sweepEnds) []Claim {
	c := Claim{ID: ClaimBystanderWaits, Text: "The /fast bystander waits behind the blocked loop it shares, and finds a free slot on the pool"}
	c2 := Claim{ID: ClaimQueueGrows, Text: "Beside the loops the probes queue behind each other once one is held up; beside the pool they do not"}
	if !e.slow || len(e.loopsHi) == 0 || len(e.poolsHi) == 0 {
		return []Claim{c, c2}
	}
	c.Known, c.Held, c2.Known, c2.Held = true, true, true, true
	var figs, figs2 []string
	for _, r := range append(slices.Clone(e.loopsHi), e.poolsHi...) {
		if !r.Fast.P50.OK() {
			c.Held, c2.Held = false, false
			continue
		}
		figs = append(figs, fmt.Sprintf("%s %s at %d callers", r.Step.Server.Name, fastText(r.LoadRow, r.Fast.P50), r.Step.Conc))
		figs2 = append(figs2, fmt.Sprintf("%s answered %.0f of %.0f due probes", r.Step.Server.Name, r.Fast.Answered.Median(), r.Fast.Due.Median()))
	}
	for _, l := range e.loopsHi {
		for _, p := range e.poolsHi {
			if !(l.Fast.P50.Median() >= WaitsTimes*p.Fast.P50.Median() && l.Fast.P50.Median() >= WaitsAtLeastUs) {
				c.Held = false
			}
			if !l.Fast.Saturated || p.Fast.Saturated {
				c2.Held = false
			}
		}
	}
	c.Figure = "/fast p50 from due: " + strings.Join(figs, ", ")
	c2.Figure = strings.Join(figs2, "; ")
	return []Claim{c, c2}
}

// stallsWholeLoops: stalls come in whole loops; the pool stalls nobody.
func stallsWholeLoops(f *Findings, _ sweepEnds) []Claim {
	c := Claim{ID: ClaimWholeLoops, Text: "Only the connections that share a blocked loop stall, whatever they ask for"}
	c2 := Claim{ID: ClaimPoolNoStall, Text: "With free slots, the pool stalls nobody"}
	var loopRows, poolRows []string
	c.Held, c2.Held = true, true
	for _, r := range f.Stall {
		if r.Judged == 0 {
			continue
		}
		switch r.Step.Server.Kind {
		case "loop":
			c.Known = true
			loopRows = append(loopRows, fmt.Sprintf("k=%d %s %s", r.Step.K, r.Step.Server.Name, r.StalledText()))
			if !r.Match {
				c.Held = false
			}
		case "pool":
			c2.Known = true
			poolRows = append(poolRows, fmt.Sprintf("%s with %d callers: %s stalled", r.Step.Server.Name, r.Step.K, r.StalledText()))
			if r.Stalled.Median() != 0 {
				c2.Held = false
			}
		}
	}
	c.Figure = "stalled, exactly the connections on the blockers' loops: " + strings.Join(loopRows, ", ")
	if !c.Held {
		c.Figure = "stalled: " + strings.Join(loopRows, ", ") + "; not all of them on the blockers' loops"
	}
	c2.Figure = strings.Join(poolRows, ", ")
	return []Claim{c, c2}
}

// offloadHelps: moving the call off the loop buys back the throughput and
// the bystander.
func offloadHelps(f *Findings, _ sweepEnds) []Claim {
	c := Claim{ID: ClaimOffloadHelps, Text: "Moving the call off the loop buys back both the throughput and the bystander"}
	blocking, offloaded := map[string]LoadRow{}, map[string]LoadRow{}
	var offNames []string
	for _, r := range f.Offload {
		if !r.Throughput.OK() {
			continue
		}
		switch r.Step.Variant {
		case "blocking":
			blocking[r.Step.Server.Name] = r
		case "offloaded":
			offloaded[r.Step.Server.Name] = r
			offNames = append(offNames, r.Step.Server.Name)
		}
	}
	c.Held = true
	var figs []string
	for _, n := range offNames {
		b, ok := blocking[n]
		if !ok || !b.Fast.P50.OK() {
			continue
		}
		o := offloaded[n]
		c.Known = true
		figs = append(figs, fmt.Sprintf("%s %s req/s offloaded against %s blocking, /fast %s against %s", n, words.Thousands(o.Throughput.Median()),
			words.Thousands(b.Throughput.Median()), fastText(o, o.Fast.P50), fastText(b, b.Fast.P50)))
		if o.Throughput.Median() < OffloadTimes*b.Throughput.Median() || o.Fast.P50.Median()*OffloadFastTimes > b.Fast.P50.Median() {
			c.Held = false
		}
	}
	c.Figure = strings.Join(figs, "; ")
	return []Claim{c}
}

// traceTwice: on the loops an /async request waits twice, on the pool not.
func traceTwice(f *Findings, _ sweepEnds) []Claim {
	c := Claim{ID: ClaimTraceTwice, Text: "On the loops a request waits to be accepted and its continuation waits again behind the blocked loop; on the pool both are immediate"}
	var loopsT, poolsT []TraceRow
	for _, r := range f.Trace {
		if !r.Total.N.OK() {
			continue
		}
		switch r.Step.Server.Kind {
		case "loop":
			loopsT = append(loopsT, r)
		case "pool":
			poolsT = append(poolsT, r)
		}
	}
	if len(loopsT) == 0 || len(poolsT) == 0 {
		return []Claim{c}
	}
	c.Known, c.Held = true, true
	var figs []string
	for _, r := range append(loopsT, poolsT...) {
		block := float64(r.Step.Block) / 1e3 // us
		acc, late := r.Accepted.P50.Median(), r.Lateness.P50.Median()
		figs = append(figs, fmt.Sprintf("%s accepted %.1f ms, continuation late %.1f ms", r.Step.Server.Name, acc/1e3, late/1e3))
		loop := r.Step.Server.Kind == "loop"
		if loop && (acc < TraceLoopAtLeast*block || late < TraceLoopAtLeast*block) || !loop && (acc >= TracePoolUnder*block || late >= TracePoolUnder*block) {
			c.Held = false
		}
	}
	c.Figure = "p50: " + strings.Join(figs, "; ")
	return []Claim{c}
}

// poolCliff: the pool forgives blocking only while it has free slots.
func poolCliff(f *Findings, _ sweepEnds) []Claim {
	c := Claim{ID: ClaimCliff, Text: "The pool forgives blocking only while it has free slots: past its size the bystander waits in the queue, as beside a loop"}
	byPool := map[string][]LoadRow{}
	var pools []string
	for _, r := range f.Cliff {
		if !r.Fast.P50.OK() {
			continue
		}
		if byPool[r.Step.Server.Name] == nil {
			pools = append(pools, r.Step.Server.Name)
		}
		byPool[r.Step.Server.Name] = append(byPool[r.Step.Server.Name], r)
	}
	c.Held = true
	var figs []string
	for _, n := range pools {
		rs := byPool[n]
		if len(rs) < 2 {
			continue
		}
		c.Known = true
		first, last := rs[0], rs[len(rs)-1]
		var parts []string
		for _, r := range rs {
			parts = append(parts, fmt.Sprintf("%s at %d callers", fastText(r, r.Fast.P50), r.Step.Conc))
		}
		figs = append(figs, fmt.Sprintf("%s (%d slots): /fast p50 %s", n, first.Step.Server.Workers, strings.Join(parts, ", ")))
		if last.Step.Conc <= first.Step.Server.Workers || last.Fast.P50.Median() < CliffTimes*first.Fast.P50.Median() || last.Fast.P50.Median() < CliffAtLeastUs {
			c.Held = false
		}
	}
	c.Figure = strings.Join(figs, "; ")
	return []Claim{c}
}

// lagShows: the loops' own lag shows the held loop.
func lagShows(f *Findings, _ sweepEnds) []Claim {
	c := Claim{ID: ClaimLagShows, Text: "A loop held by a blocking call shows as held for as long as it is held; the others do not"}
	c.Held = true
	var lagRows []string
	for _, r := range f.Stall {
		if r.DetectorReps == 0 {
			continue
		}
		c.Known = true
		lagRows = append(lagRows, fmt.Sprintf("k=%d %s: %s", r.Step.K, r.Step.Server.Name, r.DetectorText()))
		if !r.DetectorMatch {
			c.Held = false
		}
	}
	c.Figure = "the server's detector saw " + strings.Join(lagRows, ", ")
	return []Claim{c}
}

// Lead is the report's opening sentence, from the servers the run
// measured: the story's claim where a loop server and a pool were both
// measured and it held, else what the run measured; and a claim that did
// not hold, said so.
func (f *Findings) Lead() string {
	loops, _ := highest(f.Sweep, "loop")
	pools, _ := highest(f.Sweep, "pool")
	flatten, climbs := f.Claim(ClaimLoopsFlatten), f.Claim(ClaimPoolClimbs)
	tail := " These are this run's measurements, with real servers on loopback; every figure says what bounds it."
	// With one concurrency there is no climbing to see: the pool's claim
	// then stands on its not being held to its workers.
	poolFine := climbs.Held || !climbs.Known && len(pools) > 0 && pools[0].Kind() != "workers"
	if len(loops) > 0 && len(pools) > 0 && flatten.Held && poolFine {
		l, p := f.Server(loops[0].Step.Server.Name), f.Server(pools[0].Step.Server.Name)
		return fmt.Sprintf("A %s blocking call is harmless on %s's %s and ruinous on %s's %s: throughput is capped at workers / block (%s against %s), "+
			"and every connection that shares a blocked loop waits, whatever it asks for.", l.Block, p.Name, p.WorkersText(), l.Name, l.WorkersText(),
			l.CeilingText(), p.CeilingText()) + tail
	}
	var measured []string
	for _, s := range f.Servers {
		if a := f.asIs(s.Name); a != nil {
			measured = append(measured, fmt.Sprintf("%s as it is (%s)", s.Name, a.Short()))
			continue
		}
		w := s.WorkersText()
		if c := s.CeilingText(); c != "" {
			w += ", ceiling " + c
		}
		measured = append(measured, fmt.Sprintf("%s (%s)", s.Name, w))
	}
	lead := "This run measured " + strings.Join(measured, ", ") + "."
	for _, c := range []Claim{flatten, climbs} {
		if c.Known && !c.Held {
			lead += " " + c.Sentence()
		}
	}
	return lead + tail
}

// CliffShares are the cliff phase's callers, in percent of a pool's slots.
var CliffShares = []int{64, 100, 150}

// SharedText says whether other processes used the machine while the run
// measured, from each load's and each stall measurement's reading of
// /proc: "other processes used 10 % or more of the machine during 3 of 14
// measurements (up to 34 %)", or "" when none did (or none was read).
func (f *Findings) SharedText() string {
	n, of, most := 0, 0, 0.0
	cores := float64(f.Run.Manifest.Cores)
	for _, r := range f.Cost {
		if r.Bound == nil || cores == 0 || r.Cost == nil || r.Cost.ServerNotMeasured {
			continue
		}
		of++
		if r.Bound.Shared {
			n++
			most = max(most, r.Bound.OtherCores/cores)
		}
	}
	for _, r := range f.Stall {
		for _, o := range r.MachineOthers {
			of++
			if o >= sharedAbove {
				n++
				most = max(most, o)
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("other processes used %.0f %% or more of the machine during %d of %d measurements (up to %.0f %%)", 100*sharedAbove, n, of, 100*most)
}
