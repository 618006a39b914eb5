package findings

import (
	"slices"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/lag"
	"github.com/bystander-kit/bystander/internal/results"
)

// LoopLag is what one loop's own heartbeat and the blocked-loop detector
// said over one measured window.
type LoopLag struct {
	Loop int
	// Windows are the stream's events inside the measured window, in order.
	Windows []LagWindow
	// MaxUs is the largest lag, P50Us the median of the windows' medians.
	MaxUs, P50Us float64
	// BlockedShare is the part of the window the loop was held past the
	// detector's threshold.
	BlockedShare float64
	// Blocks counts the blocks that began in the window, by route.
	Blocks map[string]int64
	// Unknown counts the holds past the threshold the detector could not
	// judge (not blocks) in the window, and UnknownShare is the part of
	// the window they held the loop (those that ended in it).
	Unknown      int64
	UnknownShare float64
	// UnknownIn counts those holds by the route they began in (a server
	// that says so): a loop held in /slow and not judged was held there.
	UnknownIn map[string]int64
	// Culprit is the last block in the window with a stack: where the loop
	// was held (nil: none, or a server that does not say).
	Culprit *culprit.Record
}

// LagWindow is one event of the stream for one loop.
type LagWindow struct {
	EndNs        int64 // unix ns the window ended
	MaxUs, P50Us float64
	BlockedShare float64
	Route        string // of a block ongoing at its end
}

// LagRow is one measurement's loop lag: its first repetition's.
type LagRow struct {
	*Group
	WarnNs, IntervalNs int64
	// WindowNs is the median length of the stream's stretches.
	WindowNs       int64
	StartNs, EndNs int64
	Loops          []LoopLag
	// HeldInSlow are the loops with a block, or a hold the detector could
	// not judge, that began in /slow inside the window: where the blocking
	// call held a loop. (In sleep and postgres modes Go parks the loop's
	// thread in the call, and only the holds whose stack was taken are
	// judged: a loop's first a StackEvery.)
	HeldInSlow []int
}

// lagOf computes the loop lag of one repetition's trace; ok is false when
// it holds no event inside the measured window.
func lagOf(t *results.LagTrace) (LagRow, bool) {
	evs := t.InWindow()
	if len(evs) == 0 {
		return LagRow{}, false
	}
	r := LagRow{WarnNs: evs[0].WarnNs, IntervalNs: evs[0].IntervalNs, StartNs: t.StartUnixNs, EndNs: t.EndUnixNs}
	// Counts are since the server started: the window's are the last
	// event's less those of the event before the window's first.
	before := map[int]lag.LoopEvent{}
	for _, ev := range t.Events {
		if ev.TimeNs <= evs[0].TimeNs-evs[0].WindowNs {
			for _, le := range ev.Loops {
				before[le.Loop] = le
			}
		}
	}
	byLoop := map[int]*LoopLag{}
	var order []int
	var span int64
	var lens []float64
	blocked := map[int]int64{}
	p50s := map[int][]float64{}
	for _, ev := range evs {
		span += ev.WindowNs
		lens = append(lens, float64(ev.WindowNs))
		for _, le := range ev.Loops {
			ll := byLoop[le.Loop]
			if ll == nil {
				ll = &LoopLag{Loop: le.Loop}
				byLoop[le.Loop] = ll
				order = append(order, le.Loop)
			}
			w := LagWindow{EndNs: ev.TimeNs, MaxUs: float64(le.LagMaxNs) / 1e3, P50Us: float64(le.LagP50Ns) / 1e3, BlockedShare: le.BlockedShare, Route: le.Route}
			ll.Windows = append(ll.Windows, w)
			ll.MaxUs = max(ll.MaxUs, w.MaxUs)
			p50s[le.Loop] = append(p50s[le.Loop], w.P50Us)
			blocked[le.Loop] += le.BlockedNs
			if c := le.Culprit; c != nil && c.StartNs >= t.StartUnixNs && c.StartNs <= t.EndUnixNs {
				ll.Culprit = c
			}
		}
	}
	r.WindowNs = int64(results.Median(lens))
	last := evs[len(evs)-1]
	slices.Sort(order)
	for _, i := range order {
		ll := byLoop[i]
		ll.P50Us = results.Median(p50s[i])
		if span > 0 {
			ll.BlockedShare = float64(blocked[i]) / float64(span)
		}
		ll.Blocks = map[string]int64{}
		for _, le := range last.Loops {
			if le.Loop != i {
				continue
			}
			for route, n := range le.BlocksByRoute {
				if d := n - before[i].BlocksByRoute[route]; d > 0 {
					ll.Blocks[route] = d
				}
			}
			ll.Unknown = max(le.Unknown-before[i].Unknown, 0)
			for route, n := range le.UnknownByRoute {
				if d := n - before[i].UnknownByRoute[route]; d > 0 {
					if ll.UnknownIn == nil {
						ll.UnknownIn = map[string]int64{}
					}
					ll.UnknownIn[route] = d
				}
			}
			if span > 0 {
				ll.UnknownShare = float64(max(le.UnknownNs-before[i].UnknownNs, 0)) / float64(span)
			}
		}
		if ll.Blocks["/slow"] > 0 || ll.UnknownIn["/slow"] > 0 {
			r.HeldInSlow = append(r.HeldInSlow, i)
		}
		r.Loops = append(r.Loops, *ll)
	}
	return r, true
}

// lagRows lists the loop lag of every measurement that has it.
func lagRows(gs []*Group) []LagRow {
	var out []LagRow
	for _, g := range gs {
		for _, rep := range g.Reps {
			if rep.Lag == nil {
				continue
			}
			if r, ok := lagOf(rep.Lag); ok {
				r.Group = g
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// Lag returns the loop-lag row of g, or nil.
func (f *Findings) Lag(g *Group) *LagRow {
	for i := range f.LagRows {
		if f.LagRows[i].Group == g {
			return &f.LagRows[i]
		}
	}
	return nil
}
