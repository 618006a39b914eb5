package prose

import (
	"regexp"
	"strings"
	"testing"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
)

// TestStallTooBusySaid: a stall row the rule could not judge says why in
// the tables, under its server, and no count in its row (findings'
// TestStallTooBusy computes the row).
func TestStallTooBusySaid(t *testing.T) {
	step := results.Step{ID: "stall-loop-gnet-k1", Phase: "stall", K: 1, Server: results.Server{Name: "loop-gnet", Kind: "loop"}}
	why := "machine too busy to judge: connection 1 (loop 1) waited 14ms"
	f := &findings.Findings{Run: &results.Run{}, Stall: []findings.StallRow{{Group: &findings.Group{Step: step}, Unjudged: []findings.StallUnjudged{{Why: why}}}}}
	var sb strings.Builder
	WriteTables(&sb, f)
	if !strings.Contains(sb.String(), "k=1 loop-gnet: "+why) {
		t.Errorf("the tables do not say why:\n%s", sb.String())
	}
	if !regexp.MustCompile(`\n1 +loop-gnet +machine too busy to judge +- +- +- `).MatchString(sb.String()) {
		t.Errorf("the row does not say it was not judged:\n%s", sb.String())
	}
	// With a judged repetition beside it, the count is the judged one's,
	// and says how many were judged.
	r := findings.StallRow{Group: &findings.Group{Step: step}, Stalled: findings.Figure{1}, Conns: findings.Figure{3}, Judged: 1, Unjudged: []findings.StallUnjudged{{Repeat: 2, Why: why}}}
	if got := StallStalled(r); got != "1 of 3 (1 of 2 repetitions judged)" {
		t.Errorf("stalled %q", got)
	}
	f.Stall[0] = r
	sb.Reset()
	if WriteTables(&sb, f); !strings.Contains(sb.String(), "k=1 loop-gnet: repetition 2: "+why) {
		t.Errorf("the tables do not name the repetition not judged:\n%s", sb.String())
	}
}

// TestStallMismatchSaid: a connection on the wrong side of its loop says
// which way, and how long the server made it wait; a repetition whose
// blockers left no result says which loops they held is not known.
func TestStallMismatchSaid(t *testing.T) {
	for _, tc := range []struct {
		m    findings.StallMismatch
		text string
	}{
		{findings.StallMismatch{Conn: 0, Loop: 0, Stalled: true, Wait: 150e6}, "connection 0 (loop 0) stalled, though no blocker was on its loop: the server made it wait 150ms"},
		{findings.StallMismatch{Conn: 4, Loop: 1, Wait: 90e3}, "connection 4 (loop 1) did not stall, though its loop was blocked: the server made it wait 90µs"},
		{findings.StallMismatch{NotKnown: true}, "the blockers left no result, so which loops they held is not known"},
	} {
		if got := StallMismatch(tc.m); got != tc.text {
			t.Errorf("%+v: %q, want %q", tc.m, got, tc.text)
		}
	}
}

// TestCulprits: records grouped by where they held, starved ones and
// ones without a stack left out; one of unknown cause (no locked thread)
// still says where.
func TestCulprits(t *testing.T) {
	at := []culprit.Frame{{Function: "github.com/x/internal/block.nanosleep", File: "/src/internal/block/block.go", Line: 82}}
	rs := []culprit.Record{
		{Loop: 0, Cause: culprit.Blocked, State: "syscall", Frames: at},
		{Loop: 1, Cause: culprit.Starved},
		{Loop: 2, Cause: culprit.Unknown, State: "syscall", Frames: at},
		{Loop: 3, Cause: culprit.Blocked},
	}
	if got, want := Culprits(rs), "in syscall at block.nanosleep (block/block.go:82): loops 0, 2"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got := Culprits(rs[1:2]); got != "" {
		t.Errorf("a starved hold is named: %q", got)
	}
}

// TestCulpritNotJudged: where the loops are named, a loop held in /slow
// whose holds the detector could not judge is said held, not judged
// (findings' TestHeldInSlowNotJudged finds it): loop 1 named, loop 0 held.
func TestCulpritNotJudged(t *testing.T) {
	row := findings.StallRow{DetectorLoops: []int{0, 1}, NotJudged: []int{0}, Culprits: []culprit.Record{{Loop: 1, State: "sleep", Frames: []culprit.Frame{{Function: "example/internal/block.For", File: "/src/internal/block/block.go", Line: 80}}}}}
	if got := StallCulprit(row); !strings.Contains(got, ": loop 1") || !strings.HasSuffix(got, "; in /slow, not judged (its thread parked by Go, no stack taken while it held): loop 0") {
		t.Errorf("culprit text %q", got)
	}
}

// TestStallColumns: the exactly-those and machine columns say the row's
// judgment and its machine: "-" not judged, yes, NO; busy, and by whom
// when shared.
func TestStallColumns(t *testing.T) {
	r := findings.StallRow{MachineBusy: findings.Figure{1}, MachineOthers: findings.Figure{0.9}}
	if got := StallMatch(r); got != "-" {
		t.Errorf("not judged: %q", got)
	}
	if r.Judged = 1; StallMatch(r) != "NO" {
		t.Errorf("judged, not a match: %q", StallMatch(r))
	}
	if r.Match = true; StallMatch(r) != "yes" {
		t.Errorf("a match: %q", StallMatch(r))
	}
	if got := StallMachine(r); got != "100% busy, shared: 90% others" {
		t.Errorf("machine %q", got)
	}
	r.MachineOthers = findings.Figure{0.05}
	if StallMachine(r) != "100% busy" {
		t.Errorf("machine not shared %q", StallMachine(r))
	}
	if got := StallMachine(findings.StallRow{}); got != "not read" {
		t.Errorf("machine not read %q", got)
	}
}
