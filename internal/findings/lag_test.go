package findings

import (
	"slices"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/lag"
	"github.com/bystander-kit/bystander/internal/results"
)

// ev is a stream event at t (100 ms windows) over two loops: loop 1 held
// for heldNs of it, with slow blocks of loop 1 counted so far.
func ev(t, heldNs, slowSoFar, outsideSoFar int64) lag.Event {
	w := int64(100 * time.Millisecond)
	return lag.Event{TimeNs: t, WindowNs: w, IntervalNs: int64(time.Millisecond), WarnNs: int64(time.Millisecond), Loops: []lag.LoopEvent{
		{Loop: 0, Beats: 100, LagP50Ns: 30_000, LagMaxNs: 200_000, BlocksByRoute: map[string]int64{lag.Outside: outsideSoFar}},
		{Loop: 1, Beats: 50, LagP50Ns: 40_000, LagMaxNs: heldNs, BlockedNs: heldNs, BlockedShare: float64(heldNs) / float64(w),
			BlocksByRoute: map[string]int64{"/slow": slowSoFar}},
	}}
}

// TestLagOf: only the events inside the window count; block counts are the
// window's (the last event's less the one before the window), so blocks
// before it (a warm-up) do not make a loop "blocked in /slow".
func TestLagOf(t *testing.T) {
	s := int64(10 * time.Second)
	w := int64(100 * time.Millisecond)
	tr := &results.LagTrace{StartUnixNs: s, EndUnixNs: s + 3*w, Events: []lag.Event{
		ev(s, 0, 7, 1), // before the window: 7 /slow blocks from the warm-up
		ev(s+w, 60*int64(time.Millisecond), 8, 1),
		ev(s+2*w, 100*int64(time.Millisecond), 8, 2),
		ev(s+3*w, 20*int64(time.Millisecond), 9, 2),
		ev(s+4*w, 0, 12, 2), // after
	}}
	// Loop 0 held, not judged: 2 holds of 30 ms in all in the window,
	// one before it.
	for i, n := range []int64{1, 2, 2, 3, 3} {
		tr.Events[i].Loops[0].Unknown, tr.Events[i].Loops[0].UnknownNs = n, (n-1)*15*int64(time.Millisecond)+int64(time.Millisecond)
	}
	r, ok := lagOf(tr)
	if !ok || len(r.Loops) != 2 || r.WindowNs != w {
		t.Fatalf("%+v", r)
	}
	if l0 := r.Loops[0]; l0.Unknown != 2 || l0.UnknownShare != 0.1 || r.Loops[1].Unknown != 0 {
		t.Errorf("not judged: loop 0 %d holds, %.3f of the window; loop 1 %d: want 2, 0.1, 0", l0.Unknown, l0.UnknownShare, r.Loops[1].Unknown)
	}
	if !slices.Equal(r.HeldInSlow, []int{1}) {
		t.Errorf("blocked in /slow %v, want [1]", r.HeldInSlow)
	}
	l0, l1 := r.Loops[0], r.Loops[1]
	if len(l1.Windows) != 3 || l1.Blocks["/slow"] != 2 || l1.BlockedShare != 0.6 || l1.MaxUs != 100_000 {
		t.Errorf("loop 1: %+v", l1)
	}
	if l0.Blocks[lag.Outside] != 1 || l0.Blocks["/slow"] != 0 || l0.BlockedShare != 0 {
		t.Errorf("loop 0: %+v", l0)
	}
	// Nothing in the window: no row.
	tr.StartUnixNs = s + 10*w
	tr.EndUnixNs = s + 11*w
	if _, ok := lagOf(tr); ok {
		t.Error("a row from no event in the window")
	}
}

// TestHeldInSlowNotJudged: a loop held in /slow whose holds the detector
// could not judge (sleep and postgres modes: Go parks the loop's thread in
// the call, and only a hold whose stack was taken is judged) was still
// held there: a quick run's k=2 stall step said "2 (NOT the blockers'
// loops)" of loops 1 and 2, loop 1's holds all not judged. Holds not
// judged before the window, or in another route, do not count.
func TestHeldInSlowNotJudged(t *testing.T) {
	s := int64(10 * time.Second)
	w := int64(100 * time.Millisecond)
	tr := &results.LagTrace{StartUnixNs: s, EndUnixNs: s + 3*w, Events: []lag.Event{
		ev(s, 0, 7, 1), ev(s+w, 0, 8, 1), ev(s+2*w, 0, 9, 1), ev(s+3*w, 0, 9, 1),
	}}
	for i, n := range []int64{4, 5, 6, 6} { // loop 0: 2 holds in /slow in the window, 4 before
		tr.Events[i].Loops[0].Unknown = n + 3
		tr.Events[i].Loops[0].UnknownByRoute = map[string]int64{"/slow": n, "/async": 3}
	}
	r, ok := lagOf(tr)
	if !ok || !slices.Equal(r.HeldInSlow, []int{0, 1}) || r.Loops[0].UnknownIn["/slow"] != 2 || r.Loops[0].UnknownIn["/async"] != 0 {
		t.Fatalf("held in /slow %v, loop 0's not judged %v: want [0 1] and 2 in /slow", r.HeldInSlow, r.Loops[0].UnknownIn)
	}
	// Before the window only: not held in it.
	for i := range tr.Events {
		tr.Events[i].Loops[0].UnknownByRoute = map[string]int64{"/slow": 4}
	}
	if r, _ := lagOf(tr); !slices.Equal(r.HeldInSlow, []int{1}) {
		t.Errorf("holds before the window counted: %v", r.HeldInSlow)
	}
}
