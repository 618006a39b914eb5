package findings

import (
	"fmt"

	"github.com/bystander-kit/bystander/internal/stall"
	"github.com/bystander-kit/bystander/internal/words"
)

// The words of the stall phase's rows: its columns and who held the
// loops, said from the figures stall.go computes.

// StalledText is the stalled column: "3 of 12", or the words of a row the
// rule could not judge, with how many repetitions it did judge.
func (r StallRow) StalledText() string {
	switch {
	case !r.Stalled.OK() && len(r.Unjudged) > 0:
		return stall.TooBusy
	case !r.Stalled.OK():
		return ""
	}
	s := num(r.Stalled, "%.0f") + fmt.Sprintf(" of %.0f", r.Conns.Median())
	if len(r.Unjudged) > 0 {
		s += fmt.Sprintf(" (%d of %d repetitions judged)", r.Judged, r.Judged+len(r.Unjudged))
	}
	return s
}

// DetectorText is the detector's column: the loops it saw blocked in
// /slow and whether they were the blockers' loops, or why there is none
// (and, for a server seen from outside, how many threads the kit found
// held).
func (r StallRow) DetectorText() string {
	if r.DetectorReps == 0 {
		if r.Seen != nil { // no detector of its own: the kit looked from outside
			n := len(r.Seen.Held)
			return fmt.Sprintf("none; from outside: %d thread%s held (below)", n, map[bool]string{true: "", false: "s"}[n == 1])
		}
		if r.Step.Server.Kind == "loop" {
			return "not streamed"
		}
		return "no loops"
	}
	loops := "none"
	if len(r.DetectorLoops) > 0 {
		loops = words.Ints(r.DetectorLoops, ",")
	}
	if r.DetectorMatch && len(r.DetectorLoops) == 0 {
		return "none (none blocked)"
	}
	if r.DetectorMatch {
		return loops + " (the blockers' loops)"
	}
	return loops + " (NOT the blockers' loops)"
}
