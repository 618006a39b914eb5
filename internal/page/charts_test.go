package page

import (
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
