package findings

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bystander-kit/bystander/internal/words"
)

// Headline is the run's result at one glance, the top of the report: each
// server's /slow at its most callers against its ceiling with the
// bystander's wait beside it, who stalled with k loops blocked, and the
// fix; each beside the published figure where the run measured the same
// thing. Every figure is formatted as the tables format it (the published
// comparison's "this run" column), from the same rows.
type Headline struct {
	Block   string           `json:"block"`
	Servers []HeadlineServer `json:"servers,omitempty"`
	Stalls  []HeadlineStall  `json:"stalls,omitempty"`
	Fixes   []HeadlineFix    `json:"fixes,omitempty"`
}

// HeadlineServer is one server's sweep at its most callers.
type HeadlineServer struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Workers string `json:"workers"` // "4 event loops"
	Callers int    `json:"callers"`
	// Throughput is "784 req/s"; Ceiling the ceiling in words; Fast the
	// /fast bystander's p50 from due meanwhile.
	Throughput string `json:"throughput"`
	Ceiling    string `json:"ceiling,omitempty"`
	// Held is what holds the throughput, from the row's bound: "its
	// workers", "its 64 callers (Little's law): 96% of 12,800".
	Held string `json:"held,omitempty"`
	Fast string `json:"fast,omitempty"`
	// The published figures of the same kind of server, workers and
	// block, "" where the run did not measure the same thing.
	PublishedThroughput string `json:"published_throughput,omitempty"`
	PublishedFast       string `json:"published_fast,omitempty"`
}

// HeadlineStall is a loop server's stall phase: stalled of the connections
// with 1, 2, ... loops blocked.
type HeadlineStall struct {
	Name string `json:"name"`
	// Stalled: for each k from 1, "3 of 12" (or why it was not judged).
	Stalled []string `json:"stalled"`
	// Exact: every judged measurement stalled exactly the connections on
	// the blocked loops.
	Exact     bool   `json:"exact"`
	Published string `json:"published,omitempty"` // "3, 6, 9, 12 of 12"
}

// HeadlineFix is a loop server with the call offloaded against on its loop.
type HeadlineFix struct {
	Name      string `json:"name"`
	Callers   int    `json:"callers"`
	Offloaded string `json:"offloaded"` // "15,800 req/s"
	Blocking  string `json:"blocking"`
	Times     string `json:"times"` // "20.2x"
	Fast      string `json:"fast"`  // /fast p50 from due, offloaded
	Published string `json:"published,omitempty"`
}

// sayOnce drops what differs from the first of two published figures
// shown together when the second says the same after it: "17,189 req/s;
// /fast 0 ms (the call: ...)", not the call twice.
func sayOnce(first, second string) (string, string) {
	if i := strings.LastIndex(second, " ("); i > 0 && strings.HasSuffix(first, second[i:]) {
		return strings.TrimSuffix(first, second[i:]), second
	}
	return first, second
}

// publishedFor is the published figure set beside server's in the
// comparison's row what, or "": with the conditions that differ where the
// publication states them ("callers: 64 here, 128 published").
func publishedFor(rows []PublishedRow, what, server string) string {
	for _, r := range rows {
		if r.What != what || r.Server != server {
			continue
		}
		// Every condition that differs, but one the publication does not
		// state (no figure to set against).
		var differs []string
		for _, d := range strings.Split(r.Differs, "; ") {
			if d != "" && !strings.Contains(d, "not published") {
				differs = append(differs, d)
			}
		}
		if len(differs) > 0 {
			return r.Published + " (" + strings.Join(differs, "; ") + ")"
		}
		return r.Published
	}
	return ""
}

// Headline computes the headline from the run's rows.
func (f *Findings) Headline() Headline {
	pub := f.Published()
	h := Headline{Block: f.Params.Block.String()}
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
				sv := f.Server(r.Step.Server.Name)
				s := HeadlineServer{Name: r.Step.Server.Name, Kind: r.Step.Server.Kind, Workers: sv.WorkersText(), Callers: r.Step.Conc,
					Throughput: words.PerS(r.Throughput.Median()), Ceiling: sv.CeilingText()}
				if !r.Throughput.OK() {
					// Said, not dropped: its figure at the most callers was
					// not measured or not read (NotMeasured says why).
					s.Throughput = r.Short()
					h.Servers = append(h.Servers, s)
					continue
				}
				if r.Fast.P50.OK() {
					s.Fast = fastText(r.LoadRow, r.Fast.P50)
				}
				s.Held = heldBy(r)
				s.PublishedThroughput, s.PublishedFast = sayOnce(publishedFor(pub, publishedSweep, sv.Name), publishedFor(pub, publishedSweepFast, sv.Name))
				h.Servers = append(h.Servers, s)
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
				var ks []string
				for _, p := range publishedFigures {
					if p.phase == "stall" {
						ks = append(ks, strings.TrimSuffix(p.value, " of 12"))
					}
				}
				s.Published = strings.Join(ks, ", ") + " of 12"
			}
		}
		text := r.StalledText()
		if text == "" {
			text = r.Short()
		}
		s.Stalled = append(s.Stalled, text)
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
		fx := HeadlineFix{Name: r.Step.Server.Name, Callers: r.Step.Conc, Offloaded: words.PerS(r.Throughput.Median()), Blocking: words.PerS(b.Throughput.Median()),
			Times: fmt.Sprintf("%.1fx", r.Throughput.Median()/b.Throughput.Median())}
		if r.Fast.P50.OK() {
			fx.Fast = fastText(r, r.Fast.P50)
		}
		fx.Published = publishedFor(pub, publishedOffload, r.Step.Server.Name)
		h.Fixes = append(h.Fixes, fx)
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

// Line is the stall counts in one line: "3, 6, 9, 12 of 12" when every k
// has the same connections, else each as it is, by k.
func (s HeadlineStall) Line() string {
	var counts []string
	of := ""
	for _, t := range s.Stalled {
		n, rest, ok := strings.Cut(t, " of ")
		if !ok || strings.ContainsAny(rest, " ([") || strings.ContainsAny(n, " [") || of != "" && rest != of {
			var parts []string
			for k, t := range s.Stalled {
				parts = append(parts, fmt.Sprintf("k=%d: %s", k+1, t))
			}
			return strings.Join(parts, "; ")
		}
		of = rest
		counts = append(counts, n)
	}
	return strings.Join(counts, ", ") + " of " + of
}

// heldBy says what holds a sweep row's throughput, from its bound.
func heldBy(r SweepRow) string {
	b := r.Bound()
	if b == nil {
		return ""
	}
	switch b.Kind {
	case "workers":
		return fmt.Sprintf("held by its workers: %.0f%% of %s, their ceiling from the block measured", 100*b.Share, words.Thousands(b.WorkersCeiling))
	case "callers":
		return fmt.Sprintf("held by its %d callers (Little's law): %.0f%% of %s", r.Step.Conc, 100*b.Share, words.Thousands(b.CallersCeiling))
	case "cpu":
		return "held by the CPU"
	case "generator":
		return "held by the load generator: not the server's figure"
	}
	return "near no ceiling"
}
