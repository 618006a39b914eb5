package findings

import "slices"

// Claim is one of the story's claims, checked on the run's data: whether
// the run measured what it is about and whether it held, with the rows
// that decided it, which internal/prose says.
type Claim struct {
	ID string
	// Known: the run measured what the claim is about; Held: it held.
	Known, Held bool
	// Sweep are the sweep rows it was judged on (each server's at its most
	// callers; for pool-climbs SweepLo are the same servers' at their
	// fewest); Stall the stall rows, Trace the trace rows; Offload each
	// loop server's offloaded row with its blocking one; Cliff each pool's
	// cliff rows.
	Sweep, SweepLo []SweepRow
	Stall          []StallRow
	Trace          []TraceRow
	Offload        [][2]LoadRow
	Cliff          [][]LoadRow
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
func loopsFlatten(_ *Findings, e sweepEnds) []Claim {
	c := Claim{ID: ClaimLoopsFlatten}
	if !e.slow || len(e.loopsHi) == 0 {
		return []Claim{c}
	}
	c.Known, c.Held, c.Sweep = true, true, e.loopsHi
	for _, r := range e.loopsHi {
		if r.Kind() != "workers" {
			c.Held = false
		}
	}
	return []Claim{c}
}

// poolClimbs: the pool climbs with the callers.
func poolClimbs(_ *Findings, e sweepEnds) []Claim {
	c := Claim{ID: ClaimPoolClimbs}
	if !e.slow || len(e.poolsHi) == 0 {
		return []Claim{c}
	}
	c.Held = true
	for i, r := range e.poolsHi {
		lo := e.poolsLo[i]
		if r.Step.Conc == lo.Step.Conc {
			continue // one concurrency: nothing to climb
		}
		c.Known = true
		c.Sweep, c.SweepLo = append(c.Sweep, r), append(c.SweepLo, lo)
		if r.Throughput.Median() < ClimbAtLeast*lo.Throughput.Median() || r.Kind() == "workers" {
			c.Held = false
		}
	}
	return []Claim{c}
}

// bystanderWaits: the bystander waits beside the loops, not beside the
// pool, and the probes queue behind each other there.
func bystanderWaits(_ *Findings, e sweepEnds) []Claim {
	c := Claim{ID: ClaimBystanderWaits}
	c2 := Claim{ID: ClaimQueueGrows}
	if !e.slow || len(e.loopsHi) == 0 || len(e.poolsHi) == 0 {
		return []Claim{c, c2}
	}
	c.Known, c.Held, c2.Known, c2.Held = true, true, true, true
	for _, r := range append(slices.Clone(e.loopsHi), e.poolsHi...) {
		if !r.Fast.P50.OK() {
			c.Held, c2.Held = false, false
			continue
		}
		c.Sweep = append(c.Sweep, r)
	}
	c2.Sweep = c.Sweep
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
	return []Claim{c, c2}
}

// stallsWholeLoops: stalls come in whole loops; the pool stalls nobody.
func stallsWholeLoops(f *Findings, _ sweepEnds) []Claim {
	c := Claim{ID: ClaimWholeLoops}
	c2 := Claim{ID: ClaimPoolNoStall}
	c.Held, c2.Held = true, true
	for _, r := range f.Stall {
		if r.Judged == 0 {
			continue
		}
		switch r.Step.Server.Kind {
		case "loop":
			c.Known, c.Stall = true, append(c.Stall, r)
			if !r.Match {
				c.Held = false
			}
		case "pool":
			c2.Known, c2.Stall = true, append(c2.Stall, r)
			if r.Stalled.Median() != 0 {
				c2.Held = false
			}
		}
	}
	return []Claim{c, c2}
}

// offloadHelps: moving the call off the loop buys back the throughput and
// the bystander.
func offloadHelps(f *Findings, _ sweepEnds) []Claim {
	c := Claim{ID: ClaimOffloadHelps}
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
	for _, n := range offNames {
		b, ok := blocking[n]
		if !ok || !b.Fast.P50.OK() {
			continue
		}
		o := offloaded[n]
		c.Known, c.Offload = true, append(c.Offload, [2]LoadRow{o, b})
		if o.Throughput.Median() < OffloadTimes*b.Throughput.Median() || o.Fast.P50.Median()*OffloadFastTimes > b.Fast.P50.Median() {
			c.Held = false
		}
	}
	return []Claim{c}
}

// traceTwice: on the loops an /async request waits twice, on the pool not.
func traceTwice(f *Findings, _ sweepEnds) []Claim {
	c := Claim{ID: ClaimTraceTwice}
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
	c.Known, c.Held, c.Trace = true, true, append(loopsT, poolsT...)
	for _, r := range c.Trace {
		block := float64(r.Step.Block) / 1e3 // us
		acc, late := r.Accepted.P50.Median(), r.Lateness.P50.Median()
		loop := r.Step.Server.Kind == "loop"
		if loop && (acc < TraceLoopAtLeast*block || late < TraceLoopAtLeast*block) || !loop && (acc >= TracePoolUnder*block || late >= TracePoolUnder*block) {
			c.Held = false
		}
	}
	return []Claim{c}
}

// poolCliff: the pool forgives blocking only while it has free slots.
func poolCliff(f *Findings, _ sweepEnds) []Claim {
	c := Claim{ID: ClaimCliff}
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
	for _, n := range pools {
		rs := byPool[n]
		if len(rs) < 2 {
			continue
		}
		c.Known, c.Cliff = true, append(c.Cliff, rs)
		first, last := rs[0], rs[len(rs)-1]
		if last.Step.Conc <= first.Step.Server.Workers || last.Fast.P50.Median() < CliffTimes*first.Fast.P50.Median() || last.Fast.P50.Median() < CliffAtLeastUs {
			c.Held = false
		}
	}
	return []Claim{c}
}

// lagShows: the loops' own lag shows the held loop.
func lagShows(f *Findings, _ sweepEnds) []Claim {
	c := Claim{ID: ClaimLagShows}
	c.Held = true
	for _, r := range f.Stall {
		if r.DetectorReps == 0 {
			continue
		}
		c.Known, c.Stall = true, append(c.Stall, r)
		if !r.DetectorMatch {
			c.Held = false
		}
	}
	return []Claim{c}
}

// StoryHeld says whether the run shows the story's claim whole: a loop
// server and a pool both measured, the loops flattened at their ceiling
// and the pool climbed (with one concurrency there is no climbing to see:
// the pool's claim then stands on its not being held to its workers);
// with the first loop server and the first pool it was shown on.
func (f *Findings) StoryHeld() (loop, pool ServerSummary, held bool) {
	loops, _ := highest(f.Sweep, "loop")
	pools, _ := highest(f.Sweep, "pool")
	flatten, climbs := f.Claim(ClaimLoopsFlatten), f.Claim(ClaimPoolClimbs)
	poolFine := climbs.Held || !climbs.Known && len(pools) > 0 && pools[0].Kind() != "workers"
	if len(loops) > 0 && len(pools) > 0 && flatten.Held && poolFine {
		return f.Server(loops[0].Step.Server.Name), f.Server(pools[0].Step.Server.Name), true
	}
	return ServerSummary{}, ServerSummary{}, false
}

// CliffShares are the cliff phase's callers, in percent of a pool's slots.
var CliffShares = []int{64, 100, 150}

// Shared is how many of the run's measurements other processes used
// SharedAbove of the machine or more during (of the measurements whose
// use of the machine was read: each load's and each stall measurement's
// reading of /proc), and the most they used, as a share of the machine.
func (f *Findings) Shared() (n, of int, most float64) {
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
			if o >= SharedAbove {
				n++
				most = max(most, o)
			}
		}
	}
	return n, of, most
}
