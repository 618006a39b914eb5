package loopwatch

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// run looks at the loops every quarter of the threshold (at least every
// 250 us) until Stop.
func (w *Watcher) run() {
	defer close(w.done)
	every := max(w.o.Threshold/4, 250*time.Microsecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.Look(time.Now()) // not the tick's time: the watcher may run late
		}
	}
}

// Look looks at every loop at now: it reports the loops held past the
// threshold, and the episodes that ended.
//
// Advanced: a watcher made with NewDriven needs it called at least every
// quarter of the threshold; New's own goroutine calls it otherwise.
//
// A look counts every loop's episode first, then takes one stack (every
// goroutine's, the world stopped) for all the loops whose episodes want
// one, then reports: a stack's pause, long in a process of many
// goroutines, loses no episode of a loop released meanwhile. A loop that
// was held across the last stack and is held still by the same callback
// has its episode's stack from it, without another.
func (w *Watcher) Look(now time.Time) {
	w.looking.Lock()
	defer w.looking.Unlock()
	if w.stopped {
		return
	}
	w.reports, w.now = w.reports[:0], now
	kept := false
	for _, l := range w.list() {
		w.lookAt(l, now)
		kept = kept || l.dumpSeq != 0
	}
	if !kept {
		w.lastDump = nil // no loop is held by the callback it was in then
	}
	w.stacks()
	for i := range w.reports {
		r := &w.reports[i]
		if !r.recheckP && !r.early {
			w.report(r.l, r.ep)
		}
		*r = pendingReport{} // nothing kept past the look
	}
}

// pendingReport is an episode a look reports once its stack is taken.
type pendingReport struct {
	l  *Loop
	ep Episode
	// stack: a stack is wanted for l's ongoing episode, whose callback was
	// seq (still under way when the look counted it); last: the last dump
	// has it (the callback was under way across it).
	stack, last bool
	seq         uint64
	// recheckP: the stack is to say whether the episode's goroutine, found
	// waiting for a P a threshold ago, is in its own code: found there at
	// two stacks a threshold apart, and waiting at none between, its
	// callback held the loop after all (reported then, not otherwise).
	recheckP bool
	// early: the stack only, taken a look before the episode is decided.
	early bool
}

// stacks takes one stack of every goroutine for the reports that want one
// and gives each its holding goroutine's state and frames, if its loop
// is still held by the same callback (or ExitAt says it ended after the
// stack was taken: a slow stack, a short hold). It notes the loops that
// were held by one callback across it.
func (w *Watcher) stacks() {
	want := false
	for i := range w.reports {
		r := &w.reports[i]
		if r.last {
			w.give(r, w.lastDump)
		}
		want = want || r.stack
	}
	if !want {
		return
	}
	dump := w.dump()
	taken := time.Now().UnixNano()
	w.lastDump = dump
	for _, l := range w.list() {
		l.dumpSeq = 0
		if seq := l.lookSeq; seq != 0 && l.in.Load() && l.seq.Load() == seq {
			l.dumpSeq = seq
		}
	}
	for i := range w.reports {
		r := &w.reports[i]
		l := r.l
		if r.stack && l.seq.Load() == r.seq && (l.in.Load() || l.end.Load() >= taken) {
			w.give(r, dump)
		}
	}
}

// give gives r's episode its goroutine's state and frames in dump, and
// its cause if the stack finds it waiting for a Go P after a system call,
// or back in its own code after such a wait; the ongoing episode keeps
// them for its end.
func (w *Watcher) give(r *pendingReport, dump []byte) {
	l := r.l
	state, frames, waitP, inRuntime := parse(dump, l.gid.Load())
	if state == "" {
		return
	}
	ongoing := l.ep != nil && l.seen == r.seq
	if r.early {
		if ongoing {
			l.ep.State, l.ep.Frames, l.earlyWait, l.earlyRuntime = state, frames, waitP, inRuntime
		}
		return
	}
	switch {
	case waitP && r.recheckP: // waiting still, or again
		if ongoing {
			l.waitSeen, l.ownSeen = w.now, time.Time{}
		}
		return
	case waitP:
		l.before = r.ep.Cause
		w.move(l, r.ep.Cause, WaitingForP)
		r.ep.Cause, frames = WaitingForP, nil // the call it is back from is not blamed
		if ongoing {
			l.waitSeen, l.ownSeen = w.now, time.Time{}
		}
	case r.recheckP && l.ownSeen.IsZero():
		// In its own code: if it is still there a threshold on, its
		// callback held the loop after the wait.
		if ongoing {
			l.waitSeen, l.ownSeen = w.now, w.now
		}
		return
	case r.recheckP:
		to := l.before
		if to == Unknown && l.parked && ownWait(state, inRuntime) {
			to = Blocked
		}
		w.move(l, WaitingForP, to)
		r.ep.Cause, r.recheckP = to, false // reported: held by its callback after all
		if l.logged {
			l.lastLog = time.Time{} // its waiting line is not the last word
		}
	case r.ep.Cause == Unknown && l.parked && ownWait(state, inRuntime):
		w.move(l, Unknown, Blocked) // its parked thread's goroutine waited in a call of its own
		r.ep.Cause = Blocked
	}
	r.ep.State, r.ep.Frames = state, frames
	if ongoing {
		l.ep.Cause, l.ep.State, l.ep.Frames = r.ep.Cause, state, frames
	}
}

// move counts one of l's episodes under cause to instead of from.
func (w *Watcher) move(l *Loop, from, to Cause) {
	l.count(from).Add(-1)
	l.count(to).Add(1)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stats.count(from, -1)
	w.stats.count(to, 1)
}

// count adds d to s's count of episodes of cause c, if it keeps one.
func (s *Stats) count(c Cause, d int64) {
	switch c {
	case Starved:
		s.Starved += d
	case WaitingForP:
		s.WaitingForP += d
	}
}

// count is l's count of episodes of cause c.
func (l *Loop) count(c Cause) *atomic.Int64 {
	switch c {
	case Blocked:
		return &l.blocked
	case Starved:
		return &l.starved
	case WaitingForP:
		return &l.waitP
	}
	return &l.unknown
}

// lookAt moves one loop's episode on at now.
func (w *Watcher) lookAt(l *Loop, now time.Time) {
	// in before seq: Enter counts a callback before it marks it under way,
	// so the seq read after an in that is true is that callback's or a
	// later one's, never the one before (whose start would be taken for
	// this one's).
	in := l.in.Load()
	seq := l.seq.Load()
	l.lookSeq = 0
	if in {
		l.lookSeq = seq
	}
	if l.dumpSeq != 0 && (!in || seq != l.dumpSeq) {
		l.dumpSeq = 0 // the last dump is not this callback's
	}
	if l.pending && (seq != l.seen || !in) {
		w.decide(l, now) // it ended before its thread's counts were read again
	}
	if l.ep != nil && (!in || seq != l.seen) {
		w.ended(l, now)
	}
	if !in {
		return
	}
	if seq != l.cur { // a callback not seen before: timed from now, or from EnterAt's time
		l.cur, l.since = seq, now
		if at := l.at.Load(); at > 0 && l.seq.Load() == seq && at < now.UnixNano() {
			l.since = time.Unix(0, at)
		}
	} else if l.baseSeq != seq {
		// Seen twice: it is no quick callback. Its thread's counts from
		// here tell, at the threshold, whether it ran, waited or blocked.
		l.track(seq, now)
	} else if l.ep == nil || l.pending || l.ep.Cause == Starved {
		l.step(now)
	}
	if l.pending && seq == l.seen {
		w.decide(l, now)
		return
	}
	if l.ep != nil && l.ep.Cause == Starved && seq == l.seen {
		w.recheck(l, now)
		return
	}
	if l.ep != nil && l.ep.Cause == WaitingForP && seq == l.seen {
		if now.Sub(l.waitSeen) >= w.o.Threshold { // still held a threshold on: waiting still?
			w.reports = append(w.reports, pendingReport{l: l, ep: *l.ep, seq: seq, stack: true, recheckP: true})
		}
		return
	}
	if seq == l.seen || now.Sub(l.since) < w.o.Threshold {
		return
	}
	l.seen = seq
	ep := Episode{Loop: l.name, Start: l.since, Held: now.Sub(l.since)}
	l.ep, l.earlyWait, l.earlyRuntime = &ep, false, false
	l.starvedState, l.starvedFrames = "", nil
	if l.tid.Load() != 0 && !l.schedErr {
		if l.baseSeq != seq { // first seen past the threshold: the watcher was late
			l.track(seq, now)
		}
		if l.baseAt.Equal(now) && !l.schedErr {
			// Counts read just now say nothing yet: they are read again,
			// and the episode decided, at the next look. Its stack is
			// taken now, while it holds the loop (this watcher was late:
			// the loop may be let go before the next look).
			l.pending = true
			w.stackFor(l, now, true)
			return
		}
	}
	w.decide(l, now)
}

// track starts reading l's thread's counts for callback seq at now.
func (l *Loop) track(seq uint64, now time.Time) {
	if l.tid.Load() == 0 || l.schedErr {
		return
	}
	s, ok := l.sample()
	if !ok {
		l.schedErr = true
		return
	}
	l.base, l.prev, l.baseAt, l.prevAt, l.baseSeq, l.waitedSeen = s, s, now, now, seq, 0
	l.called, l.parked = s.inCall, false
}

// step reads l's thread again: the time since the last read that it was
// off a CPU counts as waiting for one if it is runnable now. The kernel's
// own count of that wait (schedstat) comes only once the thread runs
// again; this one sees a thread that is waiting still.
func (l *Loop) step(now time.Time) {
	if l.tid.Load() == 0 || l.schedErr || l.baseSeq != l.seq.Load() || !now.After(l.prevAt) {
		return
	}
	s, ok := l.sample()
	if !ok {
		l.schedErr = true
		return
	}
	if off := now.Sub(l.prevAt) - (s.ran - l.prev.ran); s.runnable && off > 0 {
		l.waitedSeen += off
	}
	l.prev, l.prevAt = s, now
	l.called = l.called || s.inCall
}

// classify sets ep's thread counts and cause from l's thread's counts
// since base: Starved when, without the time its thread waited for a CPU,
// the callback would not have held the loop past the threshold (the
// thread's share of its own over the watched part, applied to the whole
// hold: the part before the watch began is not read).
func (w *Watcher) classify(l *Loop, ep *Episode, now time.Time) {
	if l.tid.Load() == 0 || l.schedErr || l.baseSeq != l.seen {
		return
	}
	l.step(now)
	if l.schedErr || !l.prevAt.After(l.baseAt) {
		return
	}
	ep.Thread = ThreadTimes{Watched: l.prevAt.Sub(l.baseAt), Ran: l.prev.ran - l.base.ran,
		Waited: max(l.waitedSeen, l.prev.delay-l.base.delay)}
	ep.Held = now.Sub(ep.Start)
	ep.Cause = Blocked
	if ep.Thread.Own(ep.Held) < w.o.Threshold {
		ep.Cause = Starved
		return
	}
	// Off a CPU by its own doing, but found in no system call of its own,
	// and on a CPU less than the threshold and less than half the time it
	// could have been: Go parked its thread. Its goroutine waited on a
	// channel, a lock, a timer or the network (the callback's), or for a
	// P, or inside the runtime (not the callback's): only a stack taken
	// while it holds tells which.
	l.parked = !l.called && ep.Thread.Ran < w.o.Threshold && 2*ep.Thread.Ran < ep.Thread.Watched-ep.Thread.Waited
	if l.parked && !ownWait(ep.State, l.earlyRuntime) {
		ep.Cause = Unknown
	}
}

// ownWait says whether a stack that found a goroutine in state (inRuntime:
// waiting inside Go's runtime itself) found it waiting in a call of its
// own: not runnable (woken or preempted, and waiting for a P), not in the
// runtime's own wait, and a stack at all.
func ownWait(state string, inRuntime bool) bool {
	return state != "" && state != "runnable" && !inRuntime
}

// decide finds the ongoing episode's cause, counts it, and has the look
// report it, with a stack unless it is starved or one was taken lately.
func (w *Watcher) decide(l *Loop, now time.Time) {
	l.pending = false
	ep := l.ep
	w.classify(l, ep, now)
	if ep.Cause != Starved && l.earlyWait { // the look before found it waiting for a P
		l.before, ep.Cause, ep.Frames = ep.Cause, WaitingForP, nil
		l.waitSeen, l.ownSeen = now, time.Time{}
	}
	l.count(ep.Cause).Add(1)
	w.mu.Lock()
	w.stats.Episodes++
	w.stats.count(ep.Cause, 1)
	w.mu.Unlock()
	w.later(l, now)
}

// recheck looks again at a starved episode still holding its loop: once
// the callback's own time passes the threshold it is Blocked after all,
// counted so and reported again.
func (w *Watcher) recheck(l *Loop, now time.Time) {
	ep := l.ep
	w.classify(l, ep, now)
	if ep.Cause != Blocked {
		ep.Cause = Starved
		return
	}
	w.move(l, Starved, Blocked)
	if l.logged {
		l.lastLog = time.Time{} // its starved line is not the last word
	}
	if ep.State == "" && l.starvedState != "" {
		// Its stack, taken while it held, before it was found starved: the
		// one StackEvery allowed it.
		ep.State, ep.Frames = l.starvedState, l.starvedFrames
	}
	w.later(l, now)
}

// later has the look report l's ongoing episode as it is now, after the
// look's stack if it wants one: unless it is starved, or l's last stack is
// less than StackEvery old, or its callback has ended already.
func (w *Watcher) later(l *Loop, now time.Time) {
	ep := l.ep
	if ep.Cause == Starved {
		if ep.State != "" { // the stack taken before it was decided: kept for a block after all
			l.starvedState, l.starvedFrames = ep.State, ep.Frames
		}
		ep.State, ep.Frames = "", nil
	}
	if ep.Cause == Starved || ep.State != "" { // no stack, or taken at the look before
		w.reports = append(w.reports, pendingReport{l: l, ep: *ep, seq: l.seen})
		return
	}
	w.stackFor(l, now, false)
}

// stackFor has the look report l's ongoing episode after its stack, if it
// may have one: l's last stack at least StackEvery old, its callback
// still under way. early: the stack only (the episode is decided, and
// reported, at the next look).
func (w *Watcher) stackFor(l *Loop, now time.Time, early bool) {
	r := pendingReport{l: l, ep: *l.ep, seq: l.seen, early: early}
	if w.o.StackEvery >= 0 && now.Sub(l.lastStack) >= w.o.StackEvery && l.gid.Load() != 0 &&
		l.seq.Load() == l.seen && l.in.Load() {
		l.lastStack = now
		if l.dumpSeq == l.seen && w.lastDump != nil {
			r.last = true // held across the last dump: its stack is there
		} else {
			r.stack = true
		}
	}
	if !early || r.stack || r.last {
		w.reports = append(w.reports, r)
	}
}

// ended reports l's episode, which ended at most a look ago (at the time
// ExitAt gave, if it did).
func (w *Watcher) ended(l *Loop, now time.Time) {
	ep := *l.ep
	end := now.UnixNano()
	if e := l.end.Load(); e > ep.Start.UnixNano() && e < end {
		end = e // ExitAt's time: this callback's, or a later one's
	}
	if a := l.at.Load(); l.seq.Load() != l.seen && a > ep.Start.UnixNano() && a < end {
		end = a // it ended before the next began (at EnterAt's time)
	}
	ep.Ended, ep.Held = true, time.Unix(0, end).Sub(ep.Start)
	l.ep = nil
	l.heldNs.Add(int64(ep.Held))
	w.reports = append(w.reports, pendingReport{l: l, ep: ep})
}

func (w *Watcher) report(l *Loop, ep Episode) {
	if w.o.OnEpisode != nil {
		w.o.OnEpisode(ep)
	}
	w.logLine(l, ep)
}

// logLine logs ep, unless the loop had a line less than StackEvery (or a
// second) ago: those are counted, and the next line says how many.
func (w *Watcher) logLine(l *Loop, ep Episode) {
	if ep.Ended {
		if l.logged {
			l.logged = false
			w.log.LogAttrs(context.Background(), slog.LevelInfo, "loopwatch: loop released",
				slog.String("loop", ep.Loop), slog.Duration("held", ep.Held), slog.String("cause", ep.Cause.String()))
		}
		return
	}
	every := w.o.StackEvery
	if every < 0 {
		every = time.Second
	}
	if !l.lastLog.IsZero() && ep.Start.Sub(l.lastLog) < every {
		l.unlogged++
		return
	}
	l.lastLog, l.logged = ep.Start, true
	level, msg := slog.LevelWarn, "loopwatch: loop held"
	attrs := []slog.Attr{slog.String("loop", ep.Loop), slog.Duration("held", ep.Held), slog.String("cause", ep.Cause.String())}
	switch ep.Cause {
	case Starved:
		level, msg = slog.LevelInfo, "loopwatch: loop held: its thread did not get a CPU"
		attrs = append(attrs, slog.Duration("waited", ep.Thread.Waited), slog.Duration("watched", ep.Thread.Watched))
	case WaitingForP:
		level, msg = slog.LevelInfo, "loopwatch: loop held: its goroutine, back from a system call, waited for a Go P"
	}
	if c := ep.Culprit(); c.Function != "" {
		attrs = append(attrs, slog.String("state", ep.State), slog.String("at", c.String()))
	}
	if l.unlogged > 0 {
		attrs = append(attrs, slog.Int("unlogged_before", l.unlogged))
		l.unlogged = 0
	}
	w.log.LogAttrs(context.Background(), level, msg, attrs...)
}
