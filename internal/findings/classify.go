package findings

import (
	"math"
	"slices"
)

// What a server did with a blocking call, as the run measured it, not as
// its documentation says: its stall phase (did k blockers stall the
// connections that share a loop with them?), its cliff (does its
// throughput stop growing with the callers at some size?) and the threads
// it held meanwhile (/proc).
const (
	ClassLoop     = "loop"     // k blocked loops stalled exactly their connections
	ClassPool     = "pool"     // forgives up to a measured number of blocked callers, then queues
	ClassThreads  = "threads"  // forgives every caller measured, an OS thread held per blocked request
	ClassForgives = "forgives" // forgives every caller measured, without a thread each (the goroutine parks)
	ClassUnknown  = "unknown"  // the run cannot say (not measured, too busy to judge, or not by whole loops)
)

// Class is one server's classification, with the case that decided it
// and its figures, which internal/prose says.
type Class struct {
	Server string
	Class  string
	Case   ClassCase
	// Loops is how many loops the server's X-Loop named in the stall phase.
	Loops int
	// ServedAtOnce is how many callers a pool's cliff served at once at
	// its most, as measured (its throughput times its measured block; 0: no
	// pool found, or not measured); Configured the slots the server says it
	// has (0: not declared). The measured figure is not a size: a pool of
	// 200 measures about 193 when its callers spend a moment between calls.
	ServedAtOnce int
	Configured   int
	// Callers and Threads are the cliff's most callers and the server's
	// threads then; CliffCallers every caller count of its cliff.
	Callers, Threads int
	CliffCallers     []int
	// Kind, Workers and DBConns are the server's, as it declares them.
	Kind             string
	Workers, DBConns int
	// Stalls are its stall phase's rows with blockers, in k's order;
	// Blockers the most blockers judged; TooBusy, when no measurement
	// could be judged, the first row that says why (nil: none says).
	Stalls   []StallRow
	Blockers int
	TooBusy  *StallRow
	// Top is its sweep row at the most callers (nil: none measured).
	Top *SweepRow
	// AsIs is the server measured as it is, classified from its sweep.
	AsIs *AsIs
}

// ClassCase is the case that decided a class.
type ClassCase int

// The cases, as classify meets them.
const (
	ClassedAsIs           ClassCase = iota + 1 // measured as it is: its sweep decided
	ClassedNoStall                             // the stall phase was not measured
	ClassedTooBusy                             // no stall measurement could be judged
	ClassedWholeLoops                          // k blocked loops stalled exactly their connections
	ClassedNotWhole                            // it stalled, not by whole loops
	ClassedNoCliff                             // it stalled nobody; no cliff measured
	ClassedPoolDB                              // a pool: its database connections
	ClassedPoolSlots                           // a pool: its slots, as declared
	ClassedPoolUndeclared                      // a pool, its size not declared
	ClassedThreadEach                          // forgives, an OS thread per blocked request
	ClassedForgivesAll                         // forgives, without a thread each
)

// PoolBelow: a server whose cliff served fewer than this share of its
// callers at once (throughput x block) has a pool.
const PoolBelow = 0.9

// ThreadsPerCaller: a server that forgave every caller holds an OS thread
// per blocked request when its threads reach this share of the callers.
const ThreadsPerCaller = 0.9

// Classes classifies every server the run measured, in its order.
func (f *Findings) Classes() []Class {
	var out []Class
	for _, sv := range f.Servers {
		out = append(out, f.classify(sv))
	}
	return out
}

func (f *Findings) classify(sv ServerSummary) Class {
	c := Class{Server: sv.Name, Class: ClassUnknown, Kind: sv.Kind, Workers: sv.Workers, DBConns: sv.DBConns}
	if a := f.AsIsOf(sv.Name); a != nil {
		// Measured as it is: decided from its sweep alone.
		c.Case, c.Class, c.ServedAtOnce, c.AsIs = ClassedAsIs, a.Class, int(math.Round(a.Workers)), a
		return c
	}
	c.Top = f.topOf(sv)
	st := f.stallsOf(sv)
	c.Loops, c.Stalls, c.Blockers = st.loops, st.withBlockers, st.blockers
	switch {
	case st.rows == nil:
		c.Case = ClassedNoStall
	case st.judged == 0:
		c.Case, c.TooBusy = ClassedTooBusy, stallTooBusy(st.rows)
	case st.stalls && st.exact && c.Loops > 0:
		c.Case, c.Class = ClassedWholeLoops, ClassLoop
	case st.stalls:
		c.Case = ClassedNotWhole
	default:
		f.forgiven(&c, sv)
	}
	return c
}

// topOf is the server's sweep row at its most callers, nil without one.
func (f *Findings) topOf(sv ServerSummary) *SweepRow {
	var top *SweepRow
	for i, r := range f.Sweep {
		if r.Step.Server.Name == sv.Name && r.Throughput.OK() && (top == nil || r.Step.Conc > top.Step.Conc) {
			top = &f.Sweep[i]
		}
	}
	return top
}

// serverStalls is what the stall phase said of one server: whole loops,
// or nobody.
type serverStalls struct {
	rows, withBlockers      []StallRow
	stalls, exact           bool
	judged, blockers, loops int
}

func (f *Findings) stallsOf(sv ServerSummary) serverStalls {
	st := serverStalls{exact: true}
	for _, r := range f.Stall {
		if r.Step.Server.Name == sv.Name {
			st.rows = append(st.rows, r)
		}
	}
	loops := map[int]bool{}
	for _, r := range st.rows {
		for _, cell := range r.Cells {
			if cell.Loop >= 0 {
				loops[cell.Loop] = true
			}
		}
		if r.Step.K == 0 {
			continue
		}
		st.withBlockers = append(st.withBlockers, r)
		if r.Judged == 0 {
			continue
		}
		st.judged++
		st.blockers = max(st.blockers, r.Step.K)
		if r.Stalled.Median() > 0 {
			st.stalls = true
		}
		if !r.Match {
			st.exact = false
		}
	}
	st.loops = len(loops)
	return st
}

// forgiven classifies a server that stalled nobody: how many blocked
// callers does it forgive, and how?
func (f *Findings) forgiven(c *Class, sv ServerSummary) {
	var cliff []LoadRow
	for _, r := range f.Cliff {
		if r.Step.Server.Name == sv.Name && r.Throughput.OK() {
			cliff = append(cliff, r)
		}
	}
	if len(cliff) == 0 {
		c.Case, c.Class = ClassedNoCliff, ClassForgives
		return
	}
	busiest, at := 0.0, cliff[0]
	for _, r := range cliff {
		block := r.Step.Block.D()
		if b := r.Bound(); b != nil && b.MeasuredBlock > 0 {
			block = b.MeasuredBlock
		}
		busiest = max(busiest, r.Throughput.Median()*block.Seconds()) // callers served at once (Little's law)
		if r.Step.Conc > at.Step.Conc {
			at = r
		}
		if !slices.Contains(c.CliffCallers, r.Step.Conc) {
			c.CliffCallers = append(c.CliffCallers, r.Step.Conc)
		}
	}
	slices.Sort(c.CliffCallers)
	c.Callers = at.Step.Conc
	c.Threads = f.threadsOf(at.Step.ID)
	switch {
	case busiest < PoolBelow*float64(c.Callers):
		c.Class, c.ServedAtOnce = ClassPool, int(math.Round(busiest))
		switch {
		case sv.DBConns > 0 && (sv.Workers == 0 || sv.DBConns < sv.Workers || sv.Kind != "pool"):
			// Behind fewer database connections than slots, the pool that
			// binds is the database's.
			c.Case, c.Configured = ClassedPoolDB, sv.DBConns
		case sv.Kind == "pool" && sv.Workers > 0:
			c.Case, c.Configured = ClassedPoolSlots, sv.Workers
		default:
			c.Case = ClassedPoolUndeclared
		}
	case c.Threads >= int(ThreadsPerCaller*float64(c.Callers)):
		c.Case, c.Class = ClassedThreadEach, ClassThreads
	default:
		c.Case, c.Class = ClassedForgivesAll, ClassForgives
	}
}

// threadsOf is the most threads the server had at the end of any
// repetition of the measurement id (/proc), 0 when not read.
func (f *Findings) threadsOf(id string) int {
	n := 0
	for _, r := range f.Cost {
		if r.ID == id && r.Cost != nil && !r.Cost.ServerNotMeasured {
			n = max(n, r.Cost.Threads)
		}
	}
	return n
}

// stallTooBusy is the first row that says why no stall measurement could
// be judged (nil when none does): a repetition not judged, or not
// measured.
func stallTooBusy(rows []StallRow) *StallRow {
	for i, r := range rows {
		if len(r.Unjudged) > 0 || r.Miss != nil {
			return &rows[i]
		}
	}
	return nil
}
