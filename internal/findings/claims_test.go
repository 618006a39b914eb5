package findings

import (
	"testing"

	"github.com/bystander-kit/bystander/internal/words"
)

// realRun is a default run of ./run.sh kept by the report's tests.
const realRun = "testdata/run"

// TestClaims: each claim of the story is checked on the run, with the
// rows that decided it: a default run holds them all; a run of one server
// knows only what it measured; a claim the data contradict does not hold.
// (prose's TestClaimWords says them.)
func TestClaims(t *testing.T) {
	f, err := Read(realRun)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range f.Claims {
		rows := len(c.Sweep) + len(c.Stall) + len(c.Trace) + len(c.Offload) + len(c.Cliff)
		if !c.Known || !c.Held || rows == 0 || len(c.SweepLo) != 0 && len(c.SweepLo) != len(c.Sweep) {
			t.Errorf("%s: known %v held %v, %d rows: %+v", c.ID, c.Known, c.Held, rows, c)
		}
	}
	if l, p, ok := f.StoryHeld(); !ok || l.Name != "loop-gnet" || p.Name != "pool" {
		t.Errorf("the story: %v on %s and %s", ok, l.Name, p.Name)
	}
	node, err := Read("testdata/node-run")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{ClaimPoolClimbs, ClaimBystanderWaits, ClaimQueueGrows, ClaimPoolNoStall, ClaimTraceTwice, ClaimCliff} {
		if c := node.Claim(id); c.Known || c.Held {
			t.Errorf("node alone, %s: %+v", id, c)
		}
	}
	if c := node.Claim(ClaimWholeLoops); !c.Held {
		t.Errorf("node's one loop: %+v", c)
	}
	if _, _, ok := node.StoryHeld(); ok {
		t.Error("node alone holds the story of a loop beside a pool")
	}
	// The data contradict a claim: a stalled connection off the blockers'
	// loops.
	f.Stall[1].Match = false
	for _, c := range claims(f) {
		if c.ID == ClaimWholeLoops && (c.Held || !c.Known) {
			t.Errorf("a contradicted claim: %+v", c)
		}
	}
	if got := words.Percents(CliffShares); got != "64 %, 100 % and 150 %" {
		t.Errorf("CliffSharesText %q", got)
	}
}
