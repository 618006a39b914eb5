package prose

import (
	"fmt"
	"strings"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/words"
)

// The words of the headline and of the published comparison, said from
// the rows findings' headline.go and published.go chose. Every figure is
// formatted as the tables format it (the published comparison's "this
// run" column), from the same rows.

// FaceHeadline is the headline as findings.json holds it.
type FaceHeadline struct {
	Block   string               `json:"block"`
	Servers []FaceHeadlineServer `json:"servers,omitempty"`
	Stalls  []FaceHeadlineStall  `json:"stalls,omitempty"`
	Fixes   []FaceHeadlineFix    `json:"fixes,omitempty"`
}

// FaceHeadlineServer is one server's sweep at its most callers.
type FaceHeadlineServer struct {
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

// FaceHeadlineStall is a loop server's stall phase: stalled of the
// connections with 1, 2, ... loops blocked.
type FaceHeadlineStall struct {
	Name string `json:"name"`
	// Stalled: for each k from 1, "3 of 12" (or why it was not judged).
	Stalled []string `json:"stalled"`
	// Exact: every judged measurement stalled exactly the connections on
	// the blocked loops.
	Exact     bool   `json:"exact"`
	Published string `json:"published,omitempty"` // "3, 6, 9, 12 of 12"
}

// Line is the stall counts in one line (StallLine).
func (s FaceHeadlineStall) Line() string { return StallLine(s.Stalled) }

// FaceHeadlineFix is a loop server with the call offloaded against on its
// loop.
type FaceHeadlineFix struct {
	Name      string `json:"name"`
	Callers   int    `json:"callers"`
	Offloaded string `json:"offloaded"` // "15,800 req/s"
	Blocking  string `json:"blocking"`
	Times     string `json:"times"` // "20.2x"
	Fast      string `json:"fast"`  // /fast p50 from due, offloaded
	Published string `json:"published,omitempty"`
}

// Headline says the run's headline.
func Headline(f *findings.Findings) FaceHeadline {
	h := f.Headline()
	pub := Published(f)
	x := FaceHeadline{Block: h.Block.String()}
	for _, hs := range h.Servers {
		r, sv := hs.Row, hs.Server
		s := FaceHeadlineServer{Name: r.Step.Server.Name, Kind: r.Step.Server.Kind, Workers: ServerWorkers(sv), Callers: r.Step.Conc,
			Throughput: words.PerS(r.Throughput.Median()), Ceiling: ServerCeiling(sv)}
		if !r.Throughput.OK() {
			// Said, not dropped: its figure at the most callers was not
			// measured or not read (NotMeasured says why).
			s.Throughput = Short(r.Group)
			x.Servers = append(x.Servers, s)
			continue
		}
		if r.Fast.P50.OK() {
			s.Fast = FastText(r.LoadRow, r.Fast.P50)
		}
		s.Held = heldBy(r)
		s.PublishedThroughput, s.PublishedFast = sayOnce(publishedFor(pub, findings.PublishedSweep, sv.Name), publishedFor(pub, findings.PublishedSweepFast, sv.Name))
		x.Servers = append(x.Servers, s)
	}
	for _, hs := range h.Stalls {
		s := FaceHeadlineStall{Name: hs.Name, Exact: hs.Exact}
		if len(hs.Published) > 0 {
			var ks []string
			for _, p := range hs.Published {
				ks = append(ks, strings.TrimSuffix(p, " of 12"))
			}
			s.Published = strings.Join(ks, ", ") + " of 12"
		}
		for _, r := range hs.Rows {
			text := StallStalled(r)
			if text == "" {
				text = Short(r.Group)
			}
			s.Stalled = append(s.Stalled, text)
		}
		x.Stalls = append(x.Stalls, s)
	}
	for _, fx := range h.Fixes {
		r, b := fx.Offloaded, fx.Blocking
		s := FaceHeadlineFix{Name: r.Step.Server.Name, Callers: r.Step.Conc, Offloaded: words.PerS(r.Throughput.Median()), Blocking: words.PerS(b.Throughput.Median()),
			Times: fmt.Sprintf("%.1fx", r.Throughput.Median()/b.Throughput.Median())}
		if r.Fast.P50.OK() {
			s.Fast = FastText(r, r.Fast.P50)
		}
		s.Published = publishedFor(pub, findings.PublishedOffload, r.Step.Server.Name)
		x.Fixes = append(x.Fixes, s)
	}
	return x
}

// heldBy says what holds a sweep row's throughput, from its bound.
func heldBy(r findings.SweepRow) string {
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
func publishedFor(rows []FacePublished, what, server string) string {
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

// FacePublished is one published figure beside this run's, as
// findings.json holds it.
type FacePublished struct {
	What      string `json:"what"`       // the figure: "/slow, 5ms block, on 4 event loops"
	Server    string `json:"server"`     // this run's server
	This      string `json:"this_run"`   // this run's figure, "781 req/s"
	ThisShare string `json:"this_share"` // its share of its own ceiling, "98% of 800", or ""
	Published string `json:"published"`
	PubShare  string `json:"published_share"`
	Differs   string `json:"differs"` // the conditions that differ, or ""
}

// PublishedNone says why no row matched.
const PublishedNone = "no measurement of this run matches a published one: those were made on 4 event loops and 200 threads, with 5ms and 100ms blocks"

// PublishedHeading says what the publication measured on and where this
// run did, for the heading of the comparison.
func PublishedHeading(f *findings.Findings) string {
	return fmt.Sprintf("the published run: Netty on %d event loops and Tomcat on %d threads, on %s; this run: %d cores, %s",
		findings.PublishedLoops, findings.PublishedThreads, findings.PublishedMachine, f.Run.Manifest.Cores, f.Run.Manifest.CPUModel)
}

// Published says the run's figures beside the published experiment's.
func Published(f *findings.Findings) []FacePublished {
	var out []FacePublished
	for _, r := range f.Published() {
		out = append(out, publishedRow(r))
	}
	return out
}

func publishedRow(r findings.PublishedRow) FacePublished {
	x := FacePublished{What: r.What, Server: r.Server, This: thisFigure(r), Published: r.Published}
	if r.PubCeiling > 0 {
		x.PubShare = fmt.Sprintf("%.0f%% of %s", 100*shareOf(r.PubPerS, r.PubCeiling), words.Thousands(r.PubCeiling))
	}
	if r.This == findings.ThisPerS && r.Ceiling > 0 && r.PerS > 0 {
		x.ThisShare = fmt.Sprintf("%.0f%% of %s", 100*shareOf(r.PerS, r.Ceiling), words.Thousands(r.Ceiling))
	}
	var differs []string
	switch {
	case r.PubCallers == 0 && r.Conc > 0:
		differs = append(differs, fmt.Sprintf("callers: %d here, not published", r.Conc))
	case r.PubCallers > 0 && r.Conc > 0 && r.Conc != r.PubCallers:
		differs = append(differs, fmt.Sprintf("callers: %d here, %d published", r.Conc, r.PubCallers))
	}
	// The publication's call was Thread.sleep: a database call brings its
	// connections' ceiling, which the published figure never had.
	if r.DBPool > 0 {
		differs = append(differs, fmt.Sprintf("the call: a database call through %d connections here, Thread.sleep published", r.DBPool))
	}
	x.Differs = strings.Join(differs, "; ")
	return x
}

// thisFigure is the run's figure of a published row, as the tables say it.
func thisFigure(r findings.PublishedRow) string {
	switch r.This {
	case findings.ThisNotOK:
		return Short(r.NotOK)
	case findings.ThisPerS:
		return words.PerS(r.PerS)
	case findings.ThisFast:
		s := fmt.Sprintf("%.1f ms", r.Fast/1e3)
		if r.Saturated {
			s = "at least " + s + " (saturated)"
		}
		return s
	case findings.ThisStalled:
		return fmt.Sprintf("%.0f of %.0f", r.Stalled, r.Conns)
	case findings.ThisWaits:
		s := fmt.Sprintf("%.0f-%.0f ms", r.Lo/1e3, r.Hi/1e3)
		if r.OthersKnown {
			s += fmt.Sprintf(" (others: %.1f ms)", r.Others/1e3)
		}
		return s
	case findings.ThisSpan:
		return fmt.Sprintf("%.0f-%.0f ms (p50-p99)", r.Span.P50.Median()/1e3, r.Span.P99.Median()/1e3)
	}
	return ""
}

// shareOf is perS as a share of ceiling (0 when either is not known).
func shareOf(perS, ceiling float64) float64 {
	if perS <= 0 || ceiling <= 0 {
		return 0
	}
	return perS / ceiling
}
