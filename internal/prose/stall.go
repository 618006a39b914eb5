package prose

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/findings"
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
