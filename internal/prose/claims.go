package prose

import (
	"fmt"
	"strings"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/words"
)

// The words of the story's claims and of the report's lead, said from
// the verdicts and rows findings' claims.go decided them on.

// FaceClaim is a claim as findings.json holds it: whether the run measured
// it and it held, the claim in words and the figures that decided it.
type FaceClaim struct {
	ID    string `json:"id"`
	Known bool   `json:"known"`
	Held  bool   `json:"held"`
	// Text is the claim in words; Figure the figures that decided, said
	// whether it held or not.
	Text   string `json:"text"`
	Figure string `json:"figure"`
}

// claimTexts are the claims in words, by id.
var claimTexts = map[string]string{
	findings.ClaimLoopsFlatten:   "The event loops flatten at their ceiling however many callers come",
	findings.ClaimPoolClimbs:     "The pool keeps climbing with the callers",
	findings.ClaimBystanderWaits: "The /fast bystander waits behind the blocked loop it shares, and finds a free slot on the pool",
	findings.ClaimQueueGrows:     "Beside the loops the probes queue behind each other once one is held up; beside the pool they do not",
	findings.ClaimWholeLoops:     "Only the connections that share a blocked loop stall, whatever they ask for",
	findings.ClaimPoolNoStall:    "With free slots, the pool stalls nobody",
	findings.ClaimOffloadHelps:   "Moving the call off the loop buys back both the throughput and the bystander",
	findings.ClaimTraceTwice:     "On the loops a request waits to be accepted and its continuation waits again behind the blocked loop; on the pool both are immediate",
	findings.ClaimCliff:          "The pool forgives blocking only while it has free slots: past its size the bystander waits in the queue, as beside a loop",
	findings.ClaimLagShows:       "A loop held by a blocking call shows as held for as long as it is held; the others do not",
}

// FaceClaims are the run's claims in words, in its order.
func FaceClaims(f *findings.Findings) []FaceClaim {
	var out []FaceClaim
	for _, c := range f.Claims {
		out = append(out, FaceClaim{ID: c.ID, Known: c.Known, Held: c.Held, Text: claimTexts[c.ID], Figure: ClaimFigure(f, c)})
	}
	return out
}

// ClaimSentence is what a page says of the claim: the claim with its
// figures when it held, that it did not hold with its figures when it did
// not, and nothing when the run did not measure it.
func ClaimSentence(f *findings.Findings, c findings.Claim) string {
	switch {
	case !c.Known:
		return ""
	case c.Held:
		return fmt.Sprintf("%s (%s).", claimTexts[c.ID], ClaimFigure(f, c))
	}
	return fmt.Sprintf("The story says %s; it did not hold in this run: %s.", words.LowerFirst(claimTexts[c.ID]), ClaimFigure(f, c))
}

// ClaimFigure says the figures that decided the claim.
func ClaimFigure(f *findings.Findings, c findings.Claim) string {
	var figs []string
	switch c.ID {
	case findings.ClaimLoopsFlatten:
		for _, r := range c.Sweep {
			figs = append(figs, fmt.Sprintf("%s %s req/s at %d callers, %.0f%% of %s", r.Step.Server.Name, words.Thousands(r.Throughput.Median()), r.Step.Conc,
				100*r.CeilingShare().Median(), ServerCeiling(f.Server(r.Step.Server.Name))))
		}
	case findings.ClaimPoolClimbs:
		for i, r := range c.Sweep {
			lo := c.SweepLo[i]
			figs = append(figs, fmt.Sprintf("%s from %s req/s at %d callers to %s at %d", r.Step.Server.Name, words.Thousands(lo.Throughput.Median()), lo.Step.Conc,
				words.Thousands(r.Throughput.Median()), r.Step.Conc))
		}
	case findings.ClaimBystanderWaits:
		if !c.Known {
			return ""
		}
		for _, r := range c.Sweep {
			figs = append(figs, fmt.Sprintf("%s %s at %d callers", r.Step.Server.Name, FastText(r.LoadRow, r.Fast.P50), r.Step.Conc))
		}
		return "/fast p50 from due: " + strings.Join(figs, ", ")
	case findings.ClaimQueueGrows:
		for _, r := range c.Sweep {
			figs = append(figs, fmt.Sprintf("%s answered %.0f of %.0f due probes", r.Step.Server.Name, r.Fast.Answered.Median(), r.Fast.Due.Median()))
		}
	case findings.ClaimOffloadHelps:
		for _, p := range c.Offload {
			o, b := p[0], p[1]
			figs = append(figs, fmt.Sprintf("%s %s req/s offloaded against %s blocking, /fast %s against %s", o.Step.Server.Name, words.Thousands(o.Throughput.Median()),
				words.Thousands(b.Throughput.Median()), FastText(o, o.Fast.P50), FastText(b, b.Fast.P50)))
		}
	case findings.ClaimCliff:
		for _, rs := range c.Cliff {
			var parts []string
			for _, r := range rs {
				parts = append(parts, fmt.Sprintf("%s at %d callers", FastText(r, r.Fast.P50), r.Step.Conc))
			}
			figs = append(figs, fmt.Sprintf("%s (%d slots): /fast p50 %s", rs[0].Step.Server.Name, rs[0].Step.Server.Workers, strings.Join(parts, ", ")))
		}
	default:
		return stallClaimFigure(c)
	}
	return strings.Join(figs, "; ")
}

// stallClaimFigure says the figures of the claims on the stall phase and
// the trace.
func stallClaimFigure(c findings.Claim) string {
	var figs []string
	switch c.ID {
	case findings.ClaimWholeLoops:
		for _, r := range c.Stall {
			figs = append(figs, fmt.Sprintf("k=%d %s %s", r.Step.K, r.Step.Server.Name, StallStalled(r)))
		}
		// Not measured, it was not contradicted either.
		if c.Held || !c.Known {
			return "stalled, exactly the connections on the blockers' loops: " + strings.Join(figs, ", ")
		}
		return "stalled: " + strings.Join(figs, ", ") + "; not all of them on the blockers' loops"
	case findings.ClaimPoolNoStall:
		for _, r := range c.Stall {
			figs = append(figs, fmt.Sprintf("%s with %d callers: %s stalled", r.Step.Server.Name, r.Step.K, StallStalled(r)))
		}
		return strings.Join(figs, ", ")
	case findings.ClaimLagShows:
		for _, r := range c.Stall {
			figs = append(figs, fmt.Sprintf("k=%d %s: %s", r.Step.K, r.Step.Server.Name, StallDetector(r)))
		}
		return "the server's detector saw " + strings.Join(figs, ", ")
	case findings.ClaimTraceTwice:
		if !c.Known {
			return ""
		}
		for _, r := range c.Trace {
			acc, late := r.Accepted.P50.Median(), r.Lateness.P50.Median()
			figs = append(figs, fmt.Sprintf("%s accepted %.1f ms, continuation late %.1f ms", r.Step.Server.Name, acc/1e3, late/1e3))
		}
		return "p50: " + strings.Join(figs, "; ")
	}
	return ""
}

// Lead is the report's opening sentence, from the servers the run
// measured: the story's claim where a loop server and a pool were both
// measured and it held, else what the run measured; and a claim that did
// not hold, said so.
func Lead(f *findings.Findings) string {
	tail := " These are this run's measurements, with real servers on loopback; every figure says what bounds it."
	if l, p, ok := f.StoryHeld(); ok {
		return fmt.Sprintf("A %s blocking call is harmless on %s's %s and ruinous on %s's %s: throughput is capped at workers / block (%s against %s), "+
			"and every connection that shares a blocked loop waits, whatever it asks for.", l.Block, p.Name, ServerWorkers(p), l.Name, ServerWorkers(l),
			ServerCeiling(l), ServerCeiling(p)) + tail
	}
	var measured []string
	for _, s := range f.Servers {
		if a := f.AsIsOf(s.Name); a != nil {
			measured = append(measured, fmt.Sprintf("%s as it is (%s)", s.Name, AsIsShort(*a)))
			continue
		}
		w := ServerWorkers(s)
		if c := ServerCeiling(s); c != "" {
			w += ", ceiling " + c
		}
		measured = append(measured, fmt.Sprintf("%s (%s)", s.Name, w))
	}
	lead := "This run measured " + strings.Join(measured, ", ") + "."
	for _, id := range []string{findings.ClaimLoopsFlatten, findings.ClaimPoolClimbs} {
		if c := f.Claim(id); c.Known && !c.Held {
			lead += " " + ClaimSentence(f, c)
		}
	}
	return lead + tail
}

// SharedText says whether other processes used the machine while the run
// measured: "other processes used 10 % or more of the machine during 3 of
// 14 measurements (up to 34 %)", or "" when none did (or none was read).
func SharedText(f *findings.Findings) string {
	n, of, most := f.Shared()
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("other processes used %.0f %% or more of the machine during %d of %d measurements (up to %.0f %%)", 100*findings.SharedAbove, n, of, 100*most)
}

// FastText is a bystander percentile in ms, marked as a lower bound when
// the bystander saturated.
func FastText(r findings.LoadRow, v findings.Figure) string {
	s := fmt.Sprintf("%.1f ms", v.Median()/1e3)
	if r.Fast.Saturated {
		s = "at least " + s + " (saturated)"
	}
	return s
}
