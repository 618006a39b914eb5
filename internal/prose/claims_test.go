package prose

import (
	"strings"
	"testing"

	"github.com/bystander-kit/bystander/internal/findings"
)

// TestClaimWords: each claim of the story is said with its figures: a
// default run holds them all; a run of one server states only what it
// measured; a claim the data contradict is said not to have held, with
// the figure; the lead says the story where it held, else what was
// measured.
func TestClaimWords(t *testing.T) {
	f, err := findings.Read(realRun)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range f.Claims {
		if s := ClaimSentence(f, c); !c.Known || !c.Held || ClaimFigure(f, c) == "" || !strings.HasSuffix(s, ").") || !strings.HasPrefix(s, claimTexts[c.ID]) {
			t.Errorf("%s: known %v held %v: %q", c.ID, c.Known, c.Held, s)
		}
	}
	if lead := Lead(f); !strings.HasPrefix(lead, "A 5ms blocking call is harmless on pool's 200 slots and ruinous on loop-gnet's 4 event loops") {
		t.Errorf("lead %q", lead)
	}
	node, err := findings.Read("../findings/testdata/node-run")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{findings.ClaimPoolClimbs, findings.ClaimBystanderWaits, findings.ClaimQueueGrows, findings.ClaimPoolNoStall, findings.ClaimTraceTwice, findings.ClaimCliff} {
		if s := ClaimSentence(node, node.Claim(id)); s != "" {
			t.Errorf("node alone, %s: %q", id, s)
		}
	}
	if lead := Lead(node); strings.Contains(lead, "harmless") || !strings.Contains(lead, "node (1 event loop") {
		t.Errorf("node alone, lead %q", lead)
	}
	asIs, err := findings.Read("../findings/testdata/asis-node-run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(Lead(asIs), "node as it is (a thread the load holds") {
		t.Errorf("the lead: %s", Lead(asIs))
	}
	// The data contradict a claim (findings' TestClaims makes it so).
	c := f.Claim(findings.ClaimWholeLoops)
	c.Held = false
	if s := ClaimSentence(f, c); !strings.HasPrefix(s, "The story says only the connections") || !strings.Contains(s, "it did not hold in this run: stalled: k=0 loop-gnet 0 of 12, k=1 ") ||
		!strings.HasSuffix(s, "; not all of them on the blockers' loops.") {
		t.Errorf("a contradicted claim: %q", s)
	}
}
