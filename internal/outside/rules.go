package outside

import (
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
)

// The rules Decide judges a thread by, each named: a thread the looks
// found is held unless one of notHeld clears it.

// candidate is one thread the looks found while the blockers held.
type candidate struct {
	tid          int
	th           Thread
	places       []place // where it was at each look
	times, runNs []int64 // when each look was, and the CPU it had had by then
	before       []place // where it was at the looks before the blockers came
	busy         int     // the looks that found it busy
	at           place   // the first most frequent busy place, a CPU only if no call
	vm           bool    // a dump lists it without a Java frame: one of the JVM's own
}

// notHeld are the rules that clear a thread, by name. Each is asked of
// every thread; none clears a held one.
var notHeld = []struct {
	name   string
	clears func(c *candidate) bool
}{
	{"looked at fewer than twice", func(c *candidate) bool { return len(c.places) < 2 }},
	// A blocked loop is found now and then on a CPU between two calls, or
	// waiting for one the looks took: busy at 2 in 3 looks is enough.
	{"busy at fewer than 2 in 3 looks", func(c *candidate) bool { return float64(c.busy) < heldShare*float64(len(c.places)) }},
	{"there before the blockers came", func(c *candidate) bool {
		return len(c.before) > 0 && float64(c.count(func(p place) bool { return p == c.at })) > (1-heldShare)*float64(len(c.before))
	}},
	// A futex is also where a thread rests once its work is done (a JIT
	// compiler thread that was compiling): only a thread that had been
	// waiting for work in its event wait is judged held by one.
	{"a futex, not after waiting for work", func(c *candidate) bool {
		return c.at.ambiguous() && (len(c.before) == 0 || float64(c.count(func(p place) bool { return p.kind == "idle" })) < heldShare*float64(len(c.before)))
	}},
	{"one of the JVM's own threads (a compiler, a collector)", func(c *candidate) bool { return c.vm }},
}

// clearedBy is the name of the first rule that clears c, or "": held.
func clearedBy(c *candidate) string {
	for _, r := range notHeld {
		if r.clears(c) {
			return r.name
		}
	}
	return ""
}

// count is how many of c's looks before the blockers came match.
func (c *candidate) count(match func(place) bool) int {
	n := 0
	for _, p := range c.before {
		if match(p) {
			n++
		}
	}
	return n
}

// candidates are the threads the looks found while the blockers held, in
// the order first seen, each with where it was.
func candidates(t *Trace, d dumps) []*candidate {
	during := map[int]*candidate{}
	var out []*candidate
	for _, l := range t.During {
		for _, th := range l.Threads {
			c := during[th.TID]
			if c == nil {
				c = &candidate{tid: th.TID, th: th, vm: vmThread(d.dumps, th.TID)}
				during[th.TID] = c
				out = append(out, c)
			}
			c.places = append(c.places, placeOf(th))
			c.times = append(c.times, l.TimeNs)
			c.runNs = append(c.runNs, th.RunNs)
		}
	}
	for _, l := range t.Before {
		for _, th := range l.Threads {
			if c := during[th.TID]; c != nil {
				c.before = append(c.before, placeOf(th))
			}
		}
	}
	for _, c := range out {
		count := map[place]int{}
		for _, p := range c.places {
			if p.busy() {
				c.busy++
				count[p]++
			}
		}
		n := 0
		for _, p := range c.places { // the first most frequent call, a CPU only if no call
			if p.busy() && (count[p] > n && (p.kind != "cpu" || n == 0) || n > 0 && c.at.kind == "cpu" && p.kind != "cpu") {
				c.at, n = p, count[p]
			}
		}
	}
	return out
}

// record is c held, named name: from its first busy look to its last; a
// thread on a CPU that ran less than half that time waited for one
// (starved); the first dump that has it in a call names the call.
func (c *candidate) record(name string, d dumps) culprit.Record {
	first, last := -1, 0
	for i, p := range c.places {
		if p.busy() {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	span := c.times[last] - c.times[first]
	r := culprit.Record{Loop: -1, Thread: name, StartNs: c.times[first], HeldNs: span, Cause: culprit.Blocked,
		State: c.at.words(), Looks: len(c.places), Found: c.busy}
	if c.at.kind == "cpu" { // on a CPU, or ready for one, at every busy look
		if ran := c.runNs[last] - c.runNs[first]; span > 0 && float64(ran) < 0.5*float64(span) {
			r.Cause, r.State = culprit.Starved, "ready to run"
		}
	}
	for _, jts := range d.dumps {
		if jt, ok := jts[c.tid]; ok && len(jt.Own()) > 0 && (inCall(jt) || c.at.kind == "cpu" && jt.State == "RUNNABLE") {
			r.State, r.Frames = jt.Call(), jt.Own()
			break
		}
	}
	return r
}

// dumps are the JVM's stacks taken while the blockers held, in order: the
// first alone says which threads were in a call at one moment (later ones
// only put a stack to a thread the looks found held).
type dumps struct {
	dumps   []map[int]JThread
	firstAt int64          // when the first usable dump began
	names   map[int]string // tid -> whole name
}

// readDumps parses the trace's usable dumps and notes in v what they cost
// and why one was not used.
func readDumps(t *Trace, v *Verdict) dumps {
	d := dumps{names: map[int]string{}}
	var took, paused time.Duration
	pauses := 0
	for _, j := range t.JVM {
		switch {
		case j.Err != "":
			v.Notes = append(v.Notes, j.Err)
			continue
		case t.BlockersEndNs > 0 && j.EndNs > t.BlockersEndNs:
			v.Notes = append(v.Notes, "jcmd Thread.print answered after the blockers had stopped: its stacks say nothing of them and are not used")
			continue
		}
		jts := map[int]JThread{}
		for _, jt := range Parse(j.Dump) {
			if jt.TID > 0 {
				jts[jt.TID] = jt
				d.names[jt.TID] = jt.Name
			}
		}
		if len(d.dumps) == 0 {
			d.firstAt = j.StartNs
		}
		d.dumps = append(d.dumps, jts)
		took = max(took, time.Duration(j.EndNs-j.StartNs))
		if j.PauseKnown {
			paused, pauses = max(paused, time.Duration(j.PauseNs)), pauses+1
		}
	}
	v.Dumps, v.DumpMax, v.PauseMax, v.PauseKnown = len(d.dumps), took, paused, len(d.dumps) > 0 && pauses == len(d.dumps)
	return d
}

// name is th's whole name from the dumps, or its comm (the main thread
// said so).
func (d dumps) name(t *Trace, th Thread) string {
	if n, ok := d.names[th.TID]; ok {
		return n
	}
	if th.TID == t.PID {
		return th.Comm + " (main thread)"
	}
	return th.Comm
}

// before is the stacks taken before the blockers came, by thread, or nil
// (noted in v when there are dumps to compare with them).
func (d dumps) before(t *Trace, v *Verdict) map[int]JThread {
	if b := t.BeforeJVM; b != nil && b.Err == "" && b.Dump != "" {
		was := map[int]JThread{}
		for _, jt := range Parse(b.Dump) {
			was[jt.TID] = jt
		}
		return was
	}
	if len(d.dumps) > 0 {
		v.Notes = append(v.Notes, "no Java stacks from before the blockers came: only the threads the looks found held are named")
	}
	return nil
}

// heldInFirst are the threads the first dump found in a call with the
// application's frames, not held already, that were not in that call
// before the blockers came (was: nil without stacks from before: none).
func (d dumps) heldInFirst(was map[int]JThread, held map[int]culprit.Record) map[int]culprit.Record {
	out := map[int]culprit.Record{}
	if len(d.dumps) == 0 || was == nil {
		return out
	}
	for tid, jt := range d.dumps[0] {
		if _, ok := held[tid]; ok || !inCall(jt) || len(jt.Own()) == 0 {
			continue
		}
		if b, ok := was[tid]; ok && inCall(b) && len(b.Own()) > 0 && b.Own()[0] == jt.Own()[0] {
			continue // in the same call before they came: not theirs
		}
		out[tid] = culprit.Record{Loop: -1, Thread: jt.Name, StartNs: d.firstAt, Cause: culprit.Blocked, State: jt.Call(), Frames: jt.Own()}.Clean()
	}
	return out
}
