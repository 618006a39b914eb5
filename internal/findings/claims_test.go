package findings

import (
	"strings"
	"testing"

	"github.com/bystander-kit/bystander/internal/words"
)

// realRun is a default run of ./run.sh kept by the report's tests.
const realRun = "testdata/run"

// TestClaims: each claim of the story is checked on the run: a default
// run holds them all; a run of one server states only what it measured;
// a claim the data contradict is said not to have held, with the figure.
func TestClaims(t *testing.T) {
	f, err := Read(realRun)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range f.Claims {
		if !c.Known || !c.Held || c.Figure == "" || !strings.HasSuffix(c.Sentence(), ").") {
			t.Errorf("%s: known %v held %v: %q", c.ID, c.Known, c.Held, c.Sentence())
		}
	}
	if lead := f.Lead(); !strings.HasPrefix(lead, "A 5ms blocking call is harmless on pool's 200 slots and ruinous on loop-gnet's 4 event loops") {
		t.Errorf("lead %q", lead)
	}
	node, err := Read("testdata/node-run")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{ClaimPoolClimbs, ClaimBystanderWaits, ClaimQueueGrows, ClaimPoolNoStall, ClaimTraceTwice, ClaimCliff} {
		if c := node.Claim(id); c.Known || c.Held || c.Sentence() != "" {
			t.Errorf("node alone, %s: %+v", id, c)
		}
	}
	if c := node.Claim(ClaimWholeLoops); !c.Held {
		t.Errorf("node's one loop: %+v", c)
	}
	if lead := node.Lead(); strings.Contains(lead, "harmless") || !strings.Contains(lead, "node (1 event loop") {
		t.Errorf("node alone, lead %q", lead)
	}
	// The data contradict a claim: a stalled connection off the blockers'
	// loops.
	f.Stall[1].Match = false
	for _, c := range claims(f) {
		if c.ID == ClaimWholeLoops && (c.Held || !strings.Contains(c.Sentence(), "it did not hold in this run: stalled: ")) {
			t.Errorf("a contradicted claim: %q", c.Sentence())
		}
	}
	if got := words.Percents(CliffShares); got != "64 %, 100 % and 150 %" {
		t.Errorf("CliffSharesText %q", got)
	}
}
