package prose

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/stall"
	"github.com/bystander-kit/bystander/internal/words"
)

// The words of the stall phase's rows: their columns and who held the
// loops, said from the figures findings' stall.go computes.

// StallMatch is the "exactly those" column: yes, NO (the rows below say
// why), or "-" for a row not judged.
func StallMatch(r findings.StallRow) string {
	switch {
	case r.Judged == 0:
		return "-"
	case r.Match:
		return "yes"
	}
	return "NO"
}

// StallMachine is the machine column: how busy it was, and by whom.
func StallMachine(r findings.StallRow) string {
	if !r.MachineBusy.OK() {
		return "not read"
	}
	s := fmt.Sprintf("%.0f%% busy", 100*r.MachineBusy.Median())
	if r.Shared() {
		s += fmt.Sprintf(", shared: %.0f%% others", 100*r.MachineOthers.Median())
	}
	return s
}

// StallCulprit says where the detector saw the blocked loops held, one
// place a clause: "in syscall at block.nanosleep (block/block.go:82):
// loops 0, 2"; empty when it took no stack.
func StallCulprit(r findings.StallRow) string {
	text := Culprits(r.Culprits)
	var unnamed []int
	for _, l := range r.NotJudged {
		if !slices.ContainsFunc(r.Culprits, func(c culprit.Record) bool { return c.Loop == l }) {
			unnamed = append(unnamed, l)
		}
	}
	if len(unnamed) == 0 {
		return text
	}
	word := "loop "
	if len(unnamed) > 1 {
		word = "loops "
	}
	held := "in /slow, not judged (its thread parked by Go, no stack taken while it held): " + word + words.Ints(unnamed, ", ")
	if text == "" {
		return held
	}
	return text + "; " + held
}

// Culprits groups records by where they held: "in syscall at
// block.nanosleep (block/block.go:82): loops 0, 2".
func Culprits(rs []culprit.Record) string {
	who := make([]string, len(rs))
	for i, r := range rs {
		who[i] = strconv.Itoa(r.Loop)
		if r.Loop < 0 {
			who[i] = r.Thread
		}
	}
	var parts []string
	for _, p := range culprit.Places(rs, who) {
		word := "loop "
		if len(p.Who) > 1 {
			word = "loops "
		}
		if rs[0].Loop < 0 {
			word = strings.Replace(word, "loop", "thread", 1)
		}
		parts = append(parts, p.Where+": "+word+strings.Join(p.Who, ", "))
	}
	return strings.Join(parts, "; ")
}

// StallUnjudged says why the rule could not judge a repetition, naming
// it where the row has more than one: "repetition 2: machine too busy to
// judge: ...".
func StallUnjudged(u findings.StallUnjudged) string {
	if u.Repeat == 0 {
		return u.Why
	}
	return fmt.Sprintf("repetition %d: %s", u.Repeat, u.Why)
}

// StallMismatch says where a judged repetition's stalled connections
// were not exactly those on the blockers' loops: "connection 0 (loop 0)
// stalled, though no blocker was on its loop: the server made it wait
// 150ms".
func StallMismatch(m findings.StallMismatch) string {
	if m.NotKnown {
		return "the blockers left no result, so which loops they held is not known"
	}
	how := "stalled, though no blocker was on its loop"
	if !m.Stalled {
		how = "did not stall, though its loop was blocked"
	}
	return fmt.Sprintf("connection %d (loop %d) %s: the server made it wait %s", m.Conn, m.Loop, how, words.Round(m.Wait))
}

// StallStalled is the stalled column: "3 of 12", or the words of a row the
// rule could not judge, with how many repetitions it did judge.
func StallStalled(r findings.StallRow) string {
	switch {
	case !r.Stalled.OK() && len(r.Unjudged) > 0:
		return stall.TooBusy
	case !r.Stalled.OK():
		return ""
	}
	return stalledOf(r.Stalled, r.Conns, r.Judged, len(r.Unjudged))
}

// stalledOf is a judged stalled column: "3 of 12", with how many
// repetitions were judged when some were not.
func stalledOf(stalled, of findings.Figure, judged, unjudged int) string {
	s := num(stalled, "%.0f") + fmt.Sprintf(" of %.0f", of.Median())
	if unjudged > 0 {
		s += fmt.Sprintf(" (%d of %d repetitions judged)", judged, judged+unjudged)
	}
	return s
}

// StallDetector is the detector's column: the loops it saw blocked in
// /slow and whether they were the blockers' loops, or why there is none
// (and, for a server seen from outside, how many threads the kit found
// held).
func StallDetector(r findings.StallRow) string {
	if r.DetectorReps == 0 {
		if r.Seen != nil { // no detector of its own: the kit looked from outside
			n := len(r.Seen.Held)
			return fmt.Sprintf("none; from outside: %d thread%s held (below)", n, map[bool]string{true: "", false: "s"}[n == 1])
		}
		if r.Step.Server.Kind == "loop" {
			return "not streamed"
		}
		return "no loops"
	}
	loops := "none"
	if len(r.DetectorLoops) > 0 {
		loops = words.Ints(r.DetectorLoops, ",")
	}
	if r.DetectorMatch && len(r.DetectorLoops) == 0 {
		return "none (none blocked)"
	}
	if r.DetectorMatch {
		return loops + " (the blockers' loops)"
	}
	return loops + " (NOT the blockers' loops)"
}
