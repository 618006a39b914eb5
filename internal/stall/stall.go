// Package stall is the one rule that says which connections of a stall
// measurement stalled, and whether the machine left enough to tell: the
// per-connection prober's human line, internal/findings (the tables and the
// report) and the stage all call it, on what the prober recorded.
//
// The rule judges what the server made each connection wait, from the
// server's own timestamps (send to X-Handler-Start, plus how late the
// continuation ran after its delay), not the wait from each probe's due
// time: a probe the prober sent late, or an answer it read late, is the
// client's or the machine's doing, not the server's. Measured on a 2-core
// machine beside 0 to 24 noisy neighbours (processes that run 2 ms and sleep
// 0.5 ms), both engines, blocks of 40 and 100 ms, 360 measurements
// (docs/measurements.md): a connection on a loop held by the blockers waited
// at least the block less the /async delay at the median (35.2 ms of 40,
// 95.2 of 100), one on a free loop at most 6.1 ms (0.9 ms with up to 4
// neighbours); its send lateness meanwhile reached 126 ms. So a connection
// stalled at half the block or more, is free under a quarter of it, and
// between the two it cannot be told: the measurement is then "machine too
// busy to judge", with the figure that decided it, never a count.
package stall

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/words"
)

// Conn is one connection as the rule sees it.
type Conn struct {
	ID, Loop      int
	Due, Answered int64
	// Wait is the median of what the server made the connection's
	// answered probes wait (results.ConnStat.ServerWait); FromServer is
	// false for a v2 result, whose Wait is its median from the send less
	// the delay.
	Wait       time.Duration
	FromServer bool
	// SendLate is the median of how late its probes were sent.
	SendLate time.Duration
}

// From reads the connections of a per-connection prober's result.
func From(pc *results.PerConn) []Conn {
	var out []Conn
	for _, c := range pc.Conns {
		k := Conn{ID: c.Conn, Loop: c.Loop, Due: c.Due, Answered: c.Samples, SendLate: us(c.SendLate.P50Us)}
		if c.ServerWait.Count > 0 {
			k.Wait, k.FromServer = us(c.ServerWait.P50Us), true
		} else if c.FromSend.Count > 0 {
			k.Wait = max(0, us(c.FromSend.P50Us)-time.Duration(pc.DelayNs))
		}
		out = append(out, k)
	}
	return out
}

func us(v float64) time.Duration { return time.Duration(v * 1e3) }

// Machine is what the machine did meanwhile, when it was read (findings
// has it from /proc; the prober does not): said beside a verdict it could
// not give.
type Machine struct {
	Known bool
	// Late: not known because the measurement's tools started their clocks
	// late (the machine did not run them in time), so /proc was not read
	// over its window.
	Late bool
	// Busy is the share of the machine's cores busy; Others the share used
	// by processes other than the kit's; ServerRunq how many of the
	// server's threads waited for a CPU, on average.
	Busy, Others, ServerRunq float64
	// WakeWait is how long a wake-up of the server's threads waited for a
	// CPU on average (their run-queue time over their run-queue waits,
	// schedstat); LoopWakeWait the same for each loop's own thread, where
	// the server runs its loops on threads named for them. 0: not read.
	WakeWait     time.Duration
	LoopWakeWait map[int]time.Duration
}

// Starved is how many times a wake-up's average wait for a CPU the
// server may make a connection wait from starvation alone, no call holding
// it. Measured on this kind of machine (docs/measurements.md, "Verdicts on
// a starved machine"): the median waits of connections on free loops, and
// on the pool, were up to 20 times their threads' average wake-up wait
// beside 8 to 24 noisy neighbours (a wait for a CPU at each wake-up, and the
// probes that queue behind each other meanwhile).
const Starved = 20

// wakeWait is what a connection on loop's thread waited for a CPU at each
// wake-up: its loop's thread's, else the server's.
func (m Machine) wakeWait(loop int) (time.Duration, string) {
	if w, ok := m.LoopWakeWait[loop]; ok && loop >= 0 {
		return w, fmt.Sprintf("loop %d's thread", loop)
	}
	return m.WakeWait, "the server's threads"
}

func (m Machine) String() string {
	if !m.Known {
		return ""
	}
	s := fmt.Sprintf("meanwhile the machine was %.0f%% busy (%.0f%% by other processes) and %.1f of the server's threads waited for a CPU on average",
		100*m.Busy, 100*m.Others, m.ServerRunq)
	if m.WakeWait > 0 {
		s += fmt.Sprintf(", %s at each wake-up", words.Round(m.WakeWait))
	}
	return s
}

// Verdict is the rule's answer for one measurement.
type Verdict struct {
	Stalled []bool // by connection, in the order given
	Count   int
	// Judged is false when the machine left too little to tell stalled
	// from not; Why then says so with the figure that decided it.
	Judged bool
	Why    string
	// Above: a connection waiting this long or longer stalled; Below: one
	// waiting less is free; between, it cannot be told.
	Above, Below time.Duration
	// FromData: no block was known, so the verdict comes from how the
	// waits separate (JudgeFromData); Said is its line, "" when not judged.
	FromData bool
	Said     string
}

// Few says a connection answered under half of its due probes: the waits
// of those it answered are then no sample of its window (a loop held most
// of the time answers the few probes that came while it was free), and
// only a wait that says stalled can be taken from them.
func Few(c Conn) bool { return c.Due > 0 && 2*c.Answered < c.Due }

// Rule is the rule in words.
const Rule = "a connection stalled when the server made its probes wait half the blocking call or more at the median " +
	"(from the server's own timestamps: from the send to the handler, plus the continuation's lateness), or answered none; " +
	"under a quarter of the call it did not; between the two, when the connections of one loop disagree, " +
	"when a connection answered under half its due probes and the few it answered did not wait half the call, " +
	"or when the server waited so long for a CPU at each wake-up (its loop's thread, else its threads) that starvation alone could make a wait of half the call, " +
	"the machine was too busy to judge"

// TooBusy starts the words of a measurement the rule could not judge.
const TooBusy = "machine too busy to judge"

// Busy says the rule did not judge because the machine was too busy (its
// Why starts with TooBusy), not for another reason.
func (v Verdict) Busy() bool { return !v.Judged && strings.HasPrefix(v.Why, TooBusy) }

// Judge decides which connections stalled while loops were held by calls
// of block (the blockers' measured block, else the asked one).
func Judge(conns []Conn, block time.Duration, m Machine) Verdict {
	if block <= 0 {
		return judgeFromData(conns, m)
	}
	v := Verdict{Judged: true, Above: block / 2, Below: block / 4}
	var unclear []string
	for _, c := range conns {
		s := c.Answered == 0 || c.Wait >= v.Above
		v.Stalled = append(v.Stalled, s)
		if s {
			v.Count++
		}
		switch {
		case c.Answered > 0 && c.Wait >= v.Below && c.Wait < v.Above:
			unclear = append(unclear, fmt.Sprintf("connection %d (loop %d) waited %s", c.ID, c.Loop, words.Round(c.Wait)))
		case !s && Few(c):
			// Its median is of the few probes that were answered, not of
			// the window: the others were still waiting when it ended.
			unclear = append(unclear, fmt.Sprintf("connection %d (loop %d) waited %s over the %d of its %d due probes answered", c.ID, c.Loop, words.Round(c.Wait), c.Answered, c.Due))
		}
	}
	// A machine that starves the server makes free connections wait as
	// long as held ones: a wait that starvation alone could make as long as
	// the stall threshold is not a stall anyone can see.
	var starved []string
	for _, c := range conns {
		w, whose := m.wakeWait(c.Loop)
		if w > 0 && Starved*w >= v.Above {
			starved = append(starved, fmt.Sprintf("%s waited %s", whose, words.Round(w)))
		}
	}
	if len(starved) > 0 {
		slices.Sort(starved)
		starved = slices.Compact(starved)
		v.Judged = false
		v.Why = fmt.Sprintf("%s: the server did not get a CPU: %s for one at each wake-up on average, and starvation alone makes a connection wait up to %dx that, as long as the %s from which one stalled (half the %s block)",
			TooBusy, strings.Join(starved, ", "), Starved, words.Round(v.Above), words.Round(block))
	} else if len(unclear) > 0 {
		v.Judged = false
		v.Why = fmt.Sprintf("%s: %s at the median, between the %s under which a connection is free and the %s from which it stalled (a quarter and half of the %s block)",
			TooBusy, strings.Join(unclear, ", "), words.Round(v.Below), words.Round(v.Above), words.Round(block))
	} else if split := splitLoops(conns, v.Stalled); split != "" {
		// Stalls come in whole loops: the connections of one loop wait
		// on the same thread.
		v.Judged = false
		v.Why = fmt.Sprintf("%s: the connections of %s disagree, though they wait on one thread", TooBusy, split)
	}
	if !v.Judged {
		if s := m.String(); s != "" {
			v.Why += "; " + s
		}
	}
	return v
}

// splitLoops names the loops whose connections were not all judged alike
// ("" when none); connections without a loop (-1) are independent.
func splitLoops(conns []Conn, stalled []bool) string {
	seen := map[int]bool{}
	split := map[int]bool{}
	for i, c := range conns {
		if c.Loop < 0 {
			continue
		}
		if first, ok := seen[c.Loop]; ok && first != stalled[i] {
			split[c.Loop] = true
		} else if !ok {
			seen[c.Loop] = stalled[i]
		}
	}
	var loops []int
	for l := range split {
		loops = append(loops, l)
	}
	if len(loops) == 0 {
		return ""
	}
	slices.Sort(loops)
	var parts []string
	for _, l := range loops {
		var waits []string
		for _, c := range conns {
			if c.Loop == l {
				waits = append(waits, words.Round(c.Wait).String())
			}
		}
		parts = append(parts, fmt.Sprintf("loop %d (waits %s)", l, strings.Join(waits, ", ")))
	}
	return strings.Join(parts, " and ")
}

// BaselineText names the placing requests' median for what it is:
// measured while placing, under whatever load the server had; far above
// the quickest placing request, it was measured under load.
func BaselineText(baseline, quickest time.Duration) string {
	s := fmt.Sprintf("baseline %s (median of the placing requests)", baseline.Round(time.Microsecond))
	if baseline > time.Millisecond && baseline > 10*quickest {
		s += fmt.Sprintf(", measured under load: the quickest placing request took %s", quickest.Round(time.Microsecond))
	}
	return s
}
