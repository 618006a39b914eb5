package stall

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/words"
)

// A server measured as it is (run.sh --load: its own requests, no
// protocol) sends no timestamps of its own, so its connections' waits are
// the client's: from each probe's send to its answer (ConnStat.FromSend,
// Conn.FromServer false), the prober's lateness in sending left out. What
// a blocking call does to them is what it does to the server's own: a
// connection served by a thread the call holds waits what is left of the
// call, about half of it at the median when the call runs back to back,
// more when callers queue; a connection on a free thread waits what the
// machine's noise makes it wait. Its rule is the rule from the data
// (judgeFromData: waits 3x or more apart) with two things a server
// measured as it is gives beside its waits:
//
//   - the call's own time (the load's median at 1 caller): a wait under a
//     third of it is no stall, whatever the ratios (ClientFloor), so that
//     a machine's noise is not counted beside a slow call (a connection
//     the call holds waits what is left of it at least, and on the example
//     services waited about the whole call or more at the median: 5.9 ms
//     beside a 6.0 ms call on Netty, 9.5 ms beside 6.7 ms on Node);
//   - the same connections' wait unloaded (the placing requests' median,
//     before any load): when every connection waited alike, they stalled
//     together if they lie 3x or more above it (every thread held), and
//     none did if they lie with it. An unloaded wait above the loaded ones
//     (a service's first requests, cold) is left out.
//
// Measured on the example services (docs/measurements.md, "A service as it
// is"): see there for the factor and the floor on client-side waits.

// ClientFloor is the least wait that can be a stall of a server measured
// as it is whose call takes call: Floor, or a third of the call.
func ClientFloor(call time.Duration) time.Duration { return max(Floor, call/3) }

// RuleClient is JudgeClient's rule in words.
var RuleClient = fmt.Sprintf("a server measured as it is sends no timestamps: a connection stalled when its waits at the median (the client's, from each probe's send) "+
	"lay apart from the others', %gx or more above the greatest of them and at least a third of the call's own time (and %s); "+
	"when every connection waited alike, against their wait unloaded, before the load, by the same factor; "+
	"waits that lie together, or in more than two groups, are not judged, and neither is a server that waited so long for a CPU at each wake-up that starvation alone could make the stalled wait, "+
	"nor every connection alike when the measurement's tools started late and the machine's use was not read, "+
	"nor a connection that did not stall whose probes left a third of the call or more after their due times at the median (the queue behind a slow answer, which a wait from the send leaves out)", Apart, Floor)

// JudgeClient decides which connections of a server measured as it is
// stalled, from client-side waits: unloaded is their median wait before
// the load (0: not known), call the load's own time (its median at 1
// caller; 0: not known, Floor alone then).
func JudgeClient(conns []Conn, unloaded, call time.Duration, m Machine) Verdict {
	return behind(judgeClient(conns, unloaded, call, m), conns, m, ClientFloor(call))
}

func judgeClient(conns []Conn, unloaded, call time.Duration, m Machine) Verdict {
	floor := ClientFloor(call)
	own := judgeSplit(conns, m, floor)
	if own.Judged && own.Count > 0 && own.Count < len(conns) {
		// The connections split among themselves: the clearest case.
		return starved(own, conns, m)
	}
	// Against their wait unloaded, when it is one: a wait unloaded as long
	// as a stall (a cold service's first requests) is no reference.
	if unloaded > 0 && unloaded < floor && len(conns) > 0 {
		hi, answered := time.Duration(0), true
		for _, c := range conns {
			hi = max(hi, c.Wait)
			answered = answered && c.Answered > 0 && !Few(c)
		}
		if answered && float64(hi) < Apart*float64(unloaded) {
			v := Verdict{Judged: true, FromData: true, Stalled: make([]bool, len(conns))}
			v.Said = fmt.Sprintf("none stalled: the connections waited alike (%s), within %gx of their %s unloaded", span(conns), Apart, words.Round(unloaded))
			return v
		}
		ref := Conn{ID: -1, Loop: -1, Due: 1, Answered: 1, Wait: unloaded}
		v := judgeSplit(append(slices.Clone(conns), ref), m, floor)
		if last := len(conns); v.Judged && !v.Stalled[last] && v.Count == len(conns) && m.Late {
			// Every thread held, or a machine that ran nothing in time:
			// the machine's figures would tell, and were not read.
			return Verdict{Stalled: make([]bool, len(conns)), Why: fmt.Sprintf("%s: every connection waited alike (%s), above their %s unloaded, "+
				"but the measurement's tools started late, so the machine's use was not read: a server starved of a CPU is not told from its threads all held",
				TooBusy, span(conns), words.Round(unloaded))}
		}
		if last := len(conns); v.Judged && !v.Stalled[last] && v.Count == len(conns) {
			v.Stalled = v.Stalled[:last]
			v.Said = fmt.Sprintf("every connection waited %s or more at the median (from the send), %.0fx their %s unloaded: the threads that serve them were all held",
				words.Round(v.Above), float64(v.Above)/float64(max(unloaded, time.Microsecond)), words.Round(unloaded))
			return starved(v, conns, m)
		}
	}
	if !own.Judged {
		if why := starvedAll(conns, m); why != "" {
			own.Why = why
			return own
		}
		own.Why += fmt.Sprintf("; unloaded %s", waitOrNone(unloaded))
		if unloaded >= floor {
			own.Why += fmt.Sprintf(", as long as a stall (%s or more): no reference", words.Round(floor))
		}
	}
	return own
}

// behind takes back a verdict that called free a connection whose probes
// left floor or more after their due times at the median: a connection
// sends its next probe once the last is answered, so its waits from the
// send leave out the queue behind a slow answer (Tomcat at 200 callers on
// a starved machine: 1.0 to 1.6 ms from the send, 250 to 410 ms behind
// its schedule, a quarter of its probes never answered). Who made the
// queue, the server or a prober that got no CPU, the client's figures do
// not tell; "too busy to judge" where the server's threads waited so long
// for a CPU at each wake-up that starvation alone reaches floor, or where
// the measurement's tools started late (the machine ran nothing in time).
func behind(v Verdict, conns []Conn, m Machine, floor time.Duration) Verdict {
	if !v.Judged {
		return v
	}
	late := make([]bool, len(conns))
	var lo, hi time.Duration
	n, starvedToo := 0, false
	for i, c := range conns {
		if v.Stalled[i] || c.SendLate < floor {
			continue
		}
		if n == 0 || c.SendLate < lo {
			lo = c.SendLate
		}
		hi = max(hi, c.SendLate)
		late[i] = true
		n++
		if w, _ := m.wakeWait(c.Loop); w > 0 && Starved*w >= floor {
			starvedToo = true
		}
	}
	if n == 0 {
		return v
	}
	who := "every connection"
	if n < len(conns) {
		who = heldText(conns, late)
	}
	why := fmt.Sprintf("the probes of %s left %s to %s after their due times at the median, behind their schedule (a connection sends its next probe once the last is answered): "+
		"their waits from the send leave that queue out, so none of them can be said free", who, words.Round(lo), words.Round(hi))
	switch {
	case m.Late:
		why = TooBusy + ": " + why + "; the measurement's tools started late, so the machine's use was not read"
	case starvedToo:
		why = TooBusy + ": " + why
	}
	if s := m.String(); s != "" {
		why += "; " + s
	}
	return Verdict{Stalled: make([]bool, len(conns)), FromData: v.FromData, Why: why}
}

// starvedAll says, for waits that could not be told apart, that a starved
// server could have made every one of them (Starved times its wake-up
// wait reaches the longest): "" when it could not.
func starvedAll(conns []Conn, m Machine) string {
	var hi time.Duration
	for _, c := range conns {
		hi = max(hi, c.Wait)
	}
	var why []string
	for _, c := range conns {
		if w, whose := m.wakeWait(c.Loop); w > 0 && hi > 0 && Starved*w >= hi {
			why = append(why, fmt.Sprintf("%s waited %s", whose, words.Round(w)))
		}
	}
	if len(why) == 0 {
		return ""
	}
	slices.Sort(why)
	why = slices.Compact(why)
	s := fmt.Sprintf("%s: the server did not get a CPU: %s for one at each wake-up on average, and starvation alone makes a connection wait up to %dx that, as long as every wait measured (%s)",
		TooBusy, strings.Join(why, ", "), Starved, span(conns))
	if ms := m.String(); ms != "" {
		s += "; " + ms
	}
	return s
}

// starved takes back a count a starved server could have made: a stalled
// connection's thread (its loop's, else the server's) waited so long for a
// CPU at each wake-up that Starved times that reaches the least stalled
// wait.
func starved(v Verdict, conns []Conn, m Machine) Verdict {
	var why []string
	for i, c := range conns {
		if !v.Stalled[i] {
			continue
		}
		if w, whose := m.wakeWait(c.Loop); w > 0 && Starved*w >= v.Above {
			why = append(why, fmt.Sprintf("%s waited %s", whose, words.Round(w)))
		}
	}
	if len(why) == 0 {
		return v
	}
	slices.Sort(why)
	why = slices.Compact(why)
	v.Judged, v.Count, v.Stalled, v.Said = false, 0, make([]bool, len(conns)), ""
	v.Why = fmt.Sprintf("%s: the server did not get a CPU: %s for one at each wake-up on average, and starvation alone makes a connection wait up to %dx that, as long as the %s the stalled connections waited",
		TooBusy, strings.Join(why, ", "), Starved, words.Round(v.Above))
	if s := m.String(); s != "" {
		v.Why += "; " + s
	}
	return v
}

// span is the connections' waits from least to most, in words.
func span(conns []Conn) string {
	if len(conns) == 0 {
		return "no connections"
	}
	lo, hi := conns[0].Wait, conns[0].Wait
	for _, c := range conns {
		lo, hi = min(lo, c.Wait), max(hi, c.Wait)
	}
	return fmt.Sprintf("from %s to %s at the median", words.Round(lo), words.Round(hi))
}

func waitOrNone(d time.Duration) string {
	if d <= 0 {
		return "not measured"
	}
	return words.Round(d).String()
}
