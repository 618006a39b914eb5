package findings

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/stall"
)

func round(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	case d >= 100*time.Microsecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// StallCell is one connection of one stall measurement, on the loop it
// was dealt to in that measurement.
type StallCell struct {
	Conn, Loop     int
	P50Us          float64 // from due
	SendP50Us      float64 // from send
	Answered, Due  int64
	Stalled        bool
	OnBlockedLoop  bool // its loop is one the blockers' requests were answered on
	CensoredProbes int64
}

// StallRow is one k of the stall phase over its repetitions.
type StallRow struct {
	*Group
	Stalled, Expected, Conns Figure
	// Medians over the stalled and the other connections of their p50
	// from due, in us, one per repetition.
	StalledP50, OthersP50 Figure
	// StalledSendP50 is the same for the stalled connections timed from
	// each probe's send: one request's wait, without the queue behind it.
	StalledSendP50          Figure
	ThresholdUs, BaselineUs Figure
	// Match: in every repetition the stalled connections were exactly
	// those on the loops the blockers' requests were answered on.
	Match bool
	Rule  string
	// BlockerBlock is the blockers' measured block (their X-Blocked-Ns),
	// ns, one per repetition that has it: what the verdict is judged against.
	BlockerBlock Figure
	// The first repetition's loops blocked and connections.
	BlockedLoops []int
	Cells        []StallCell
	// What the server's own blocked-loop detector said (loop servers):
	// the loops it saw blocked in /slow in the first repetition with a lag
	// trace, in how many repetitions it was read, and whether in every one
	// of them those were exactly the loops the blockers' requests were
	// answered on.
	DetectorLoops []int
	DetectorReps  int
	DetectorMatch bool
}

func stallRow(g *Group) StallRow {
	r := StallRow{Group: g, Match: true, DetectorMatch: true}
	for _, rep := range g.Reps {
		if rep.Conns == nil || rep.Conns.PerConn == nil {
			continue
		}
		pc := rep.Conns.PerConn
		// Where the blockers' requests were answered, from their X-Loop.
		blocked := map[int]bool{}
		known := g.Step.K == 0
		if rep.Load != nil && rep.Load.Load != nil {
			known = true
			for _, lc := range rep.Load.Load.RequestsPerLoop {
				if lc.Count > 0 {
					blocked[lc.Loop] = true
				}
			}
		}
		block := time.Duration(g.Step.Server.BlockNs)
		if rep.Load != nil && rep.Load.Load != nil && rep.Load.Load.BlockedSamples > 0 {
			block = time.Duration(rep.Load.Load.MeanBlockedNs)
			r.BlockerBlock = append(r.BlockerBlock, rep.Load.Load.MeanBlockedNs)
		}
		v := stall.Judge(stall.From(pc), block)
		var cells []StallCell
		var s, h, ss []float64
		expected, nStalled := 0, 0
		for i, c := range pc.Conns {
			cell := StallCell{Conn: c.Conn, Loop: c.Loop, P50Us: c.Latency.P50Us, SendP50Us: c.FromSend.P50Us, Answered: c.Samples, Due: c.Due,
				Stalled: v.Stalled[i], OnBlockedLoop: c.Loop >= 0 && blocked[c.Loop], CensoredProbes: c.Censored}
			cells = append(cells, cell)
			if cell.OnBlockedLoop {
				expected++
			}
			if cell.Stalled != cell.OnBlockedLoop {
				r.Match = false
			}
			if cell.Stalled {
				nStalled++
				s = append(s, c.Latency.P50Us)
				if c.FromSend.Count > 0 {
					ss = append(ss, c.FromSend.P50Us)
				}
			} else {
				h = append(h, c.Latency.P50Us)
			}
		}
		if rep.Lag != nil {
			if lr, ok := lagOf(rep.Lag); ok {
				var want []int
				for l := range blocked {
					want = append(want, l)
				}
				slices.Sort(want)
				if r.DetectorReps == 0 {
					r.DetectorLoops = lr.BlockedInSlow
				}
				r.DetectorReps++
				if !known || !slices.Equal(lr.BlockedInSlow, want) {
					r.DetectorMatch = false
				}
			}
		}
		if !known {
			r.Match = false
		} else {
			r.Expected = append(r.Expected, float64(expected))
		}
		if r.Cells == nil {
			r.Cells, r.Rule = cells, stall.Rule
			for l := range blocked {
				r.BlockedLoops = append(r.BlockedLoops, l)
			}
			slices.Sort(r.BlockedLoops)
		}
		r.Stalled = append(r.Stalled, float64(nStalled))
		r.Conns = append(r.Conns, float64(len(pc.Conns)))
		r.ThresholdUs = append(r.ThresholdUs, float64(v.Threshold)/1e3)
		r.BaselineUs = append(r.BaselineUs, pc.BaselineUs)
		if len(s) > 0 {
			r.StalledP50 = append(r.StalledP50, results.Median(s))
		}
		if len(h) > 0 {
			r.OthersP50 = append(r.OthersP50, results.Median(h))
		}
		if len(ss) > 0 {
			r.StalledSendP50 = append(r.StalledSendP50, results.Median(ss))
		}
	}
	if !r.Stalled.OK() {
		r.Match = false
	}
	if r.DetectorReps == 0 {
		r.DetectorMatch = false
	}
	return r
}

// DetectorText is the detector's column: the loops it saw blocked in
// /slow and whether they were the blockers' loops, or why there is none.
func (r StallRow) DetectorText() string {
	if r.DetectorReps == 0 {
		if r.Step.Server.Kind == "loop" {
			return "not streamed"
		}
		return "no loops"
	}
	loops := "none"
	if len(r.DetectorLoops) > 0 {
		loops = JoinInts(r.DetectorLoops, ",")
	}
	if r.DetectorMatch && len(r.DetectorLoops) == 0 {
		return "none (none blocked)"
	}
	if r.DetectorMatch {
		return loops + " (the blockers' loops)"
	}
	return loops + " (NOT the blockers' loops)"
}

// JoinInts writes v with sep between: "1,2,3".
func JoinInts(v []int, sep string) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, sep)
}
