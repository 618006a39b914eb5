package findings

import "testing"

// TestHeadlineRows: the headline holds each server's sweep row at its
// most callers, loops first; a loop server's stall rows with blockers, in
// k's order, with the publication's stalled connections where it has its
// loops; the fix's two rows. (prose's TestHeadlineMatchesTables says them.)
func TestHeadlineRows(t *testing.T) {
	f, err := Read(realRun)
	if err != nil {
		t.Fatal(err)
	}
	h := f.Headline()
	if len(h.Servers) != 2 || h.Servers[0].Server.Kind != "loop" || h.Servers[1].Server.Kind != "pool" || h.Block != f.Params.Block.D() {
		t.Fatalf("servers %+v", h.Servers)
	}
	for _, s := range h.Servers {
		if s.Row.Step.Conc != 64 || s.Row.Step.Server.Name != s.Server.Name {
			t.Errorf("%s at %d callers", s.Server.Name, s.Row.Step.Conc)
		}
	}
	if len(h.Stalls) != 1 || len(h.Stalls[0].Rows) != 4 || !h.Stalls[0].Exact || len(h.Stalls[0].Published) != 4 {
		t.Errorf("stalls %+v", h.Stalls)
	}
	for i, r := range h.Stalls[0].Rows {
		if r.Step.K != i+1 {
			t.Errorf("stall row %d has k=%d", i, r.Step.K)
		}
	}
	for _, fx := range h.Fixes {
		if fx.Offloaded.Step.Variant != "offloaded" || fx.Blocking.Step.Variant != "blocking" || fx.Offloaded.Step.Server.Name != fx.Blocking.Step.Server.Name {
			t.Errorf("fix %s against %s", fx.Offloaded.Step.ID, fx.Blocking.Step.ID)
		}
	}
	rows := f.Published()
	perS := 0
	for _, r := range rows {
		if r.This == 0 || r.What == "" || r.Published == "" {
			t.Errorf("published row %+v", r)
		}
		if r.This == ThisPerS && r.PerS > 0 {
			perS++
		}
	}
	if perS == 0 {
		t.Errorf("no throughput set beside the publication's: %+v", rows)
	}
}
