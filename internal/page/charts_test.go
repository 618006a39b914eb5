package page

import (
	"testing"

	"github.com/bystander-kit/bystander/internal/findings"
)

// TestMissing: a phase with nothing to draw says why: the first failed
// group's reason, not run, or run and left nothing.
func TestMissing(t *testing.T) {
	for _, tc := range []struct {
		gs   []*findings.Group
		want string
	}{
		{nil, "the stall phase was not run (see --phases and --servers)"},
		{[]*findings.Group{{}, {Why: "the server died"}, {Why: "later"}}, "the stall phase did not complete: the server died"},
		{[]*findings.Group{{}}, "the stall phase left no results"},
	} {
		if got := missing(tc.gs, "stall"); got != tc.want {
			t.Errorf("missing(%d groups) = %q, want %q", len(tc.gs), got, tc.want)
		}
	}
}
