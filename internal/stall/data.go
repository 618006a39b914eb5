package stall

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/words"
)

// Without the block. A user probing their own server does not know the
// block of a call hidden in its code (the reason they probe), so without
// one the verdict comes from the waits themselves: a blocking call holds
// every connection of its loop for about as long as it runs, while a
// connection on a free loop waits what the machine's noise makes it wait,
// which is alike for every free connection of one measurement (each
// figure is the median of hundreds of probes). Measured on this kind of
// machine (docs/measurements.md, "The prober without --block"), gnet, 4
// loops, 12 connections, k = 0, 1, 2, 4 loops held by 5 ms and 100 ms
// calls, beside 0, 4 and 8 noisy neighbours of two kinds: the free
// connections' medians lay within a factor of 1.35 of each other (0.28 to
// 2.27 ms), the held loops' 2.85x and more above the free ones' greatest
// (a 5 ms call beside 8 Python neighbours: 4.53 ms against 1.59 ms; quiet,
// 5.78 ms against 0.36 ms). Every count given was exact; the one held
// loop that lay under Apart went uncounted ("do not separate").
const (
	// Apart is how far apart two groups of waits must lie to be told
	// apart: the least wait of the upper group at least Apart times the
	// greatest of the lower: over twice the widest spread of free
	// connections measured, so that noise is never counted as a stall.
	Apart = 3.0
	// Floor is the least wait that can be a stall: under it, the
	// server's own timestamps cannot tell a call from the machine's noise.
	Floor = time.Millisecond
)

// RuleFromData is the rule without a block, in words.
var RuleFromData = "no block given: connections stalled when their waits at the median (the server's own time) lay apart from all the others', " +
	fmt.Sprint(Apart) + "x or more above the greatest of them and at least 1ms; waits that lie together, or in more than two groups, are not judged"

// judgeFromData splits the connections' waits where they lie apart: the
// connections above the one split stalled, and what held them held them
// at least that long at a time; no split and every wait under the floor,
// none stalled; otherwise no count.
func judgeFromData(conns []Conn, m Machine) Verdict { return judgeSplit(conns, m, Floor) }

// judgeSplit is judgeFromData with floor as the least wait that can be a
// stall.
func judgeSplit(conns []Conn, m Machine, floor time.Duration) Verdict {
	v := Verdict{FromData: true, Stalled: make([]bool, len(conns))}
	if len(conns) == 0 {
		v.Why = "no connections to judge"
		return v
	}
	wait := func(c Conn) time.Duration {
		if c.Answered == 0 {
			return math.MaxInt64 // answered none: held past the window
		}
		return c.Wait
	}
	order := make([]int, len(conns))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(min(1, max(-1, wait(conns[a])-wait(conns[b])))) })
	lo, hi := wait(conns[order[0]]), wait(conns[order[len(order)-1]])
	var splits []int // indexes into order where the upper group starts
	for j := 1; j < len(order); j++ {
		below, above := wait(conns[order[j-1]]), wait(conns[order[j]])
		if above >= floor && float64(above) >= Apart*float64(max(below, time.Microsecond)) {
			splits = append(splits, j)
		}
	}
	span := fmt.Sprintf("from %s to %s at the median", words.Round(lo), waitText(hi))
	switch {
	case len(splits) == 0 && hi < floor:
		v.Judged = true
		v.Said = fmt.Sprintf("none stalled: every connection waited under %s (%s; a call shorter than that is not told apart)", words.Round(floor), span)
		return v
	case len(splits) == 0:
		v.Why = fmt.Sprintf("the waits do not separate (%s): no count; give --block to judge them against the call", span)
	case len(splits) > 1:
		v.Why = fmt.Sprintf("the waits fall in more than two groups (%s): no count; give --block to judge them against the call", span)
	}
	if v.Why != "" {
		if s := m.String(); s != "" {
			v.Why += "; " + s
		}
		return v
	}
	j := splits[0]
	for _, i := range order[:j] {
		if c := conns[i]; Few(c) {
			v.Why = fmt.Sprintf("connection %d answered %d of its %d due probes: its waits are not its window's (%s): no count", c.ID, c.Answered, c.Due, span)
			return v
		}
	}
	below, above := wait(conns[order[j-1]]), wait(conns[order[j]])
	v.Above, v.Below = above, below
	for _, i := range order[j:] {
		v.Stalled[i] = true
		v.Count++
	}
	if split := splitLoops(conns, v.Stalled); split != "" {
		v.Stalled, v.Count = make([]bool, len(conns)), 0
		v.Why = fmt.Sprintf("the connections of %s disagree, though they wait on one thread: no count", split)
		return v
	}
	v.Judged = true
	v.Said = fmt.Sprintf("%s waited %s or more at the median, %.0fx the others' %s at most: what held them (one call, or several back to back) held them that long at a time",
		heldText(conns, v.Stalled), waitText(above), float64(above)/float64(max(below, time.Microsecond)), words.Round(below))
	if above == math.MaxInt64 {
		v.Said = fmt.Sprintf("%s answered nothing in the window, the others waited %s at most: held by a call longer than the window", heldText(conns, v.Stalled), words.Round(below))
	}
	return v
}

// heldText names the stalled connections by loop where they say their
// loop ("the connections of loop 2", "... of loops 0 and 1"), else one by
// one.
func heldText(conns []Conn, stalled []bool) string {
	var loops, ids []int
	byLoop := true
	for i, c := range conns {
		if !stalled[i] {
			continue
		}
		ids = append(ids, c.ID)
		if c.Loop < 0 {
			byLoop = false
		} else if !slices.Contains(loops, c.Loop) {
			loops = append(loops, c.Loop)
		}
	}
	slices.Sort(loops)
	if byLoop && len(loops) == 1 {
		return fmt.Sprintf("the connections of loop %d", loops[0])
	}
	if byLoop {
		return "the connections of loops " + and(loops)
	}
	if len(ids) == 1 {
		return fmt.Sprintf("connection %d", ids[0])
	}
	return "connections " + and(ids)
}

func and(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

func waitText(d time.Duration) string {
	if d == math.MaxInt64 {
		return "no answer"
	}
	return words.Round(d).String()
}
