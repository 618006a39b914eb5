package page

import (
	"strings"
	"testing"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
)

// TestMissing: a phase with nothing to draw says why: the first failed
// group's reason, not run, or run and left nothing.
func TestMissing(t *testing.T) {
	for _, tc := range []struct {
		gs   []*findings.Group
		want string
	}{
		{nil, "the stall phase was not run (see --phases and --servers)"},
		{[]*findings.Group{{}, {Miss: &findings.Miss{M: results.Measurement{Status: "failed", Reason: "the server died\nexit status 2"}}}, {Miss: &findings.Miss{M: results.Measurement{Status: "failed", Reason: "later"}}}},
			"the stall phase did not complete: failed: the server died"},
		{[]*findings.Group{{Miss: &findings.Miss{Unread: &findings.Unread{Field: "load_file", File: "x.json", Why: "over its cap"}}}},
			`the stall phase did not complete: not read: its load_file "x.json": over its cap`},
		{[]*findings.Group{{}}, "the stall phase left no results"},
	} {
		if got := missing(tc.gs, "stall"); got != tc.want {
			t.Errorf("missing(%d groups) = %q, want %q", len(tc.gs), got, tc.want)
		}
	}
}

// TestSlipCaptionFirstMeasured: the bad afternoon's caption says what the
// phase asked for, the first measured server's blocks, even when the first
// server was measured as it is (its step asks for no block: its call is
// its own) and skipped.
func TestSlipCaptionFirstMeasured(t *testing.T) {
	dir := "../findings/testdata/slip-run"
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := results.Measurement{Step: results.Step{ID: "slip-shop", Phase: "slip", Endpoint: "/slow", Conc: 64,
		Server: results.Server{Name: "shop", Kind: "other", External: true, Load: "GET /accounts/42/balance"}}}
	m.Block, m.SlipBlock = run.Params.BlockOf(m.Step), run.Params.SlipBlockOf(m.Step)
	m.Repeat, m.Status, m.Reason = 1, "skipped", "it needs the protocol's /slow?block= to slow the call mid-window"
	run.Measurements = append([]results.Measurement{m}, run.Measurements...)
	secs := slipCharts(findings.Compute(dir, run))
	if len(secs) != 2 || !strings.Contains(secs[0].Caption, "on /slow asking for 5ms;") || !strings.Contains(secs[0].Caption, "ask for 50ms") {
		t.Fatalf("the caption does not say the phase's blocks: %+v", secs)
	}
}
