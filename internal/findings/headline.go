package findings

import (
	"slices"
	"time"
)

// Headline is the run's result at one glance, the top of the report: each
// server's /slow at its most callers against its ceiling with the
// bystander's wait beside it, who stalled with k loops blocked, and the
// fix; each beside the published figure where the run measured the same
// thing. It holds the rows, which internal/prose says as the tables say
// them.
type Headline struct {
	Block   time.Duration
	Servers []HeadlineServer
	Stalls  []HeadlineStall
	Fixes   []HeadlineFix
}

// HeadlineServer is one server's sweep at its most callers (its row
// whether or not it left a figure).
type HeadlineServer struct {
	Server ServerSummary
	Row    SweepRow
}

// HeadlineStall is a loop server's stall phase: its rows with 1, 2, ...
// loops blocked.
type HeadlineStall struct {
	Name string
	Rows []StallRow
	// Exact: every judged measurement stalled exactly the connections on
	// the blocked loops.
	Exact bool
	// Published is the publication's stalled connections by k ("3 of
	// 12", ...), where the server has its loops and connections.
	Published []string
}

// HeadlineFix is a loop server with the call offloaded against on its loop.
type HeadlineFix struct {
	Offloaded, Blocking LoadRow
}

// Headline computes the headline from the run's rows.
func (f *Findings) Headline() Headline {
	h := Headline{Block: f.Params.Block.D()}
	if f.Params.SweepEndpoint == "/slow" {
		// Loops first, then pools, then any other kind, as measured.
		kinds := []string{"loop", "pool"}
		for _, r := range f.Sweep {
			if !slices.Contains(kinds, r.Step.Server.Kind) {
				kinds = append(kinds, r.Step.Server.Kind)
			}
		}
		for _, kind := range kinds {
			for _, r := range mostCallers(f.Sweep, kind) {
				h.Servers = append(h.Servers, HeadlineServer{Server: f.Server(r.Step.Server.Name), Row: r})
			}
		}
	}
	var stallOrder []string
	stalls := map[string]*HeadlineStall{}
	for _, r := range f.Stall {
		if r.Step.Server.Kind != "loop" || r.Step.K == 0 {
			continue
		}
		s := stalls[r.Step.Server.Name]
		if s == nil {
			s = &HeadlineStall{Name: r.Step.Server.Name, Exact: true}
			stalls[r.Step.Server.Name] = s
			stallOrder = append(stallOrder, r.Step.Server.Name)
			if r.Step.Server.Workers == PublishedLoops && r.Conns.Median() == 3*PublishedLoops {
				for _, p := range publishedFigures {
					if p.phase == "stall" {
						s.Published = append(s.Published, p.value)
					}
				}
			}
		}
		s.Rows = append(s.Rows, r)
		if r.Judged == 0 || !r.Match {
			s.Exact = false
		}
	}
	for _, n := range stallOrder {
		h.Stalls = append(h.Stalls, *stalls[n])
	}
	blocking := map[string]LoadRow{}
	for _, r := range f.Offload {
		if r.Step.Variant == "blocking" && r.Throughput.OK() {
			blocking[r.Step.Server.Name] = r
		}
	}
	for _, r := range f.Offload {
		b, ok := blocking[r.Step.Server.Name]
		if r.Step.Variant != "offloaded" || !r.Throughput.OK() || !ok {
			continue
		}
		h.Fixes = append(h.Fixes, HeadlineFix{Offloaded: r, Blocking: b})
	}
	return h
}

// mostCallers is each server of kind's sweep row at the most callers the
// run asked for, whether or not it left a figure.
func mostCallers(rows []SweepRow, kind string) []SweepRow {
	at := map[string]int{}
	var names []string
	for i, r := range rows {
		if r.Step.Server.Kind != kind {
			continue
		}
		j, ok := at[r.Step.Server.Name]
		if !ok {
			names = append(names, r.Step.Server.Name)
			at[r.Step.Server.Name] = i
		} else if r.Step.Conc > rows[j].Step.Conc {
			at[r.Step.Server.Name] = i
		}
	}
	var out []SweepRow
	for _, n := range names {
		out = append(out, rows[at[n]])
	}
	return out
}
