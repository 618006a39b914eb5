package prose

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/words"
)

// The words of reading a run: the bystander's saturation and window,
// said from the figures findings' load.go keeps.

// saturatedText is how a saturated bystander is reported in words.
const saturatedText = "the bystander's queue grows without bound: its latency is set by the run's length"

// Saturated says why the bystander saturated, with the rates ("" when it
// did not).
func Saturated(b findings.Bystander) string {
	if !b.Saturated {
		return ""
	}
	return fmt.Sprintf("%s (%.1f answers per second against %.1f probes due, in %d of %d repetitions)",
		saturatedText, b.AnswersPerS.Median(), b.DuePerS.Median(), b.SaturatedReps, len(b.Due))
}

// Censored says what the censored probes mean, or "" with none.
func Censored(b findings.Bystander) string {
	if !slices.ContainsFunc(b.Censored, func(n float64) bool { return n > 0 }) {
		return ""
	}
	return fmt.Sprintf("%.0f of %.0f due probes were unanswered when the window ended and count at their wait so far: the percentiles from due are lower bounds",
		b.Censored.Median(), b.Due.Median())
}

// Misaligned says that the bystander's window did not begin with the
// load's, or "" when it did.
func Misaligned(b findings.Bystander) string {
	if b.Misaligned == 0 {
		return ""
	}
	return fmt.Sprintf("the bystander's window began %s from the load's (one of them started late): its figures cover a slightly different stretch", b.Misaligned.Round(time.Millisecond))
}

// Unread says which file of a measurement was not read, and why.
func Unread(u findings.Unread) string {
	return fmt.Sprintf("%s (rep %d): %s: its %s %q was not read: %s", u.ID, u.Repeat, findings.NotRead, u.Field, u.File, u.Why)
}

// NotMeasured lists every measurement that left no figures, with why:
// those not read first, then those that did not succeed, in the run's
// order (nil: none).
func NotMeasured(f *findings.Findings) []string {
	var out []string
	for _, u := range f.Unread {
		out = append(out, Unread(u))
	}
	for _, m := range f.Run.Measurements {
		if m.Status != "ok" {
			out = append(out, fmt.Sprintf("%s (rep %d): %s: %s", m.ID, m.Repeat, m.Status, m.Reason))
		}
	}
	return out
}

// Noticed lists what the orchestrator noticed about each measurement (a
// tool that started late, /proc not read), with its id (nil: nothing).
func Noticed(f *findings.Findings) []string {
	var out []string
	for _, m := range f.Run.Measurements {
		for _, n := range m.Notes {
			out = append(out, fmt.Sprintf("%s (rep %d): %s", m.ID, m.Repeat, n))
		}
	}
	return out
}

// Missed says why a repetition left no figures: its status with the first
// line of its reason ("failed: the server died ..."), or the file not read.
func Missed(m findings.Miss) string {
	if u := m.Unread; u != nil {
		return fmt.Sprintf("%s: its %s %q: %s", findings.NotRead, u.Field, u.File, u.Why)
	}
	return m.M.Outcome()
}

// GroupWhy says why a step's first repetition that left no figures left
// none ("" when none says).
func GroupWhy(g *findings.Group) string {
	if g == nil || g.Miss == nil {
		return ""
	}
	return Missed(*g.Miss)
}

// Short is the table cell for a group that left no result ("failed (see
// below)"); NotMeasured says why in full.
func Short(g *findings.Group) string {
	status, _, _ := strings.Cut(GroupWhy(g), ":")
	if status == "" {
		status = "no result"
	}
	return status + " (see below)"
}

// PhaseStatus says how far a phase got: "5 of 6 measurements; the others
// below", or "not run".
func PhaseStatus(ps findings.PhaseStatus) string {
	switch {
	case ps.N == 0:
		return "not run"
	case ps.OK == ps.N:
		return fmt.Sprintf("%d of %d measurements", ps.OK, ps.N)
	}
	return fmt.Sprintf("%d of %d measurements; the others below", ps.OK, ps.N)
}

// PhaseProblems says, of each measurement of a phase that left no
// figures, its id and why.
func PhaseProblems(ps findings.PhaseStatus) []string {
	var out []string
	for _, m := range ps.Misses {
		out = append(out, m.M.ID+": "+Missed(m))
	}
	return out
}

// SkippedPhases says which phases of skips skipped servers, and why: one
// clause for the phases that skipped only servers measured as they are
// (each needs the protocol; where says where each reason is listed), one
// for each other server a phase skipped, with its reason.
func SkippedPhases(skips []findings.PhaseSkips, where string) []string {
	var asIs, planned, asIsServers, clauses []string
	for _, ps := range skips {
		switch {
		case len(ps.Skipped) > 0 && !slices.ContainsFunc(ps.Skipped, func(s findings.Skipped) bool { return !s.AsIs }):
			// A phase that planned nothing for them (the cliff: no
			// declared pool) has no reason listed where the others' are.
			if slices.ContainsFunc(ps.Skipped, func(s findings.Skipped) bool { return s.Why != "" }) {
				asIs = append(asIs, ps.Phase)
			} else {
				planned = append(planned, ps.Phase)
			}
			for _, s := range ps.Skipped {
				if !slices.Contains(asIsServers, s.Server) {
					asIsServers = append(asIsServers, s.Server)
				}
			}
		case len(ps.Skipped) > 0:
			for _, s := range ps.Skipped {
				clauses = append(clauses, fmt.Sprintf("the %s phase skipped %s: %s", ps.Phase, s.Server, s.Why))
			}
		}
	}
	var said []string
	them := "measured as it is"
	if len(asIsServers) > 1 {
		them = "each measured as it is"
	}
	if len(asIs) > 0 {
		verb, needs := "skips", "it needs"
		if len(asIs) > 1 {
			verb, needs = "skip", "each needs"
		}
		said = append(said, fmt.Sprintf("%s %s %s, %s: %s the protocol (%s)", PhasesText(asIs), verb, words.And(asIsServers), them, needs, where))
	}
	if len(planned) > 0 {
		why := ", for the same reason"
		if len(asIs) == 0 {
			why = ", " + them + ": it needs the protocol"
		}
		said = append(said, fmt.Sprintf("%s planned no measurement of %s%s", PhasesText(planned), words.And(asIsServers), why))
	}
	return append(said, clauses...)
}

// PhasesText is "the stall phase", or "the stall, offload and trace phases".
func PhasesText(phases []string) string {
	if len(phases) == 1 {
		return "the " + phases[0] + " phase"
	}
	return "the " + words.And(phases) + " phases"
}
