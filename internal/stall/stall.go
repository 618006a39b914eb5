// Package stall is the one rule that says which connections of a stall
// measurement stalled, and whether the machine left enough to tell: the
// per-connection prober's human line, internal/findings (the tables and the
// report) and the stage all call it, on what the prober recorded.
package stall

import (
	"fmt"
	"time"

	"github.com/bystander-kit/bystander/internal/results"
)

// Conn is one connection as the rule sees it.
type Conn struct {
	ID, Loop      int
	Due, Answered int64
	// Wait is the median of what the server made the connection's
	// answered probes wait (see results.ConnStat.ServerWait); FromServer is
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

// Verdict is the rule's answer for one measurement.
type Verdict struct {
	Stalled []bool // by connection, in the order given
	Count   int
	// Judged is false when the machine left too little to tell stalled
	// from not; Why then says so with the figure that decided it.
	Judged bool
	Why    string
	// Threshold is the wait above which a connection stalled.
	Threshold time.Duration
}

// Rule is the rule in words.
const Rule = "a connection stalled when the server made its probes wait (from its own timestamps: send to handler, plus the continuation's lateness) half the blocking call or more at the median, or answered none"

// Judge decides which connections stalled while loops were held by calls
// of block (the blockers' measured block, else the asked one).
func Judge(conns []Conn, block time.Duration) Verdict {
	v := Verdict{Judged: true, Threshold: block / 2}
	for _, c := range conns {
		s := c.Answered == 0 || c.Wait >= v.Threshold
		v.Stalled = append(v.Stalled, s)
		if s {
			v.Count++
		}
	}
	return v
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
