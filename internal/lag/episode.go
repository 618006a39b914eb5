package lag

import (
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/loopwatch"
)

// The detector's reports counted on their loop: a block, or a hold
// counted apart (starved, waiting for a P, not judged).

// episode is loopwatch's report of one of m's loops held past Warn, on
// Run's goroutine (inside Look). A block begins when a hold is reported
// neither starved, nor waiting for a P, nor, on a loop on a locked thread,
// unknown (not judged: its thread Go parked, and no stack said for what);
// such a hold is counted apart, and becomes a block if loopwatch finds it
// its callback's after all. A block ends with its episode. On a loop not
// on a locked thread every hold is unknown (loopwatch cannot tell a
// starved thread there): each is a block, as the detector always counted
// them there.
func (m *Monitor) episode(e loopwatch.Episode) {
	var l *Loop
	for _, x := range m.loops() {
		if x.watch != nil && x.watch.Name() == e.Loop {
			l = x
		}
	}
	if l == nil {
		return
	}
	start := e.Start.UnixNano()
	ongoing := l.blockAt.Load() == start
	switch {
	case e.Ended && ongoing:
		l.blockedNs.Add(int64(e.Held))
		l.blockAt.Store(0)
		if c := l.culprit.Load(); c != nil && c.StartNs == start {
			r := *c
			r.HeldNs, r.Ended = int64(e.Held), true
			l.culprit.Store(&r)
		}
	case e.Ended:
		if l.apart == &l.unknown && l.apartAt == start {
			l.unknownNs.Add(int64(e.Held)) // held, not judged: shown apart, never left out
		}
	case e.Cause == loopwatch.Starved || e.Cause == loopwatch.WaitingForP || e.Cause == loopwatch.Unknown && l.locked.Load():
		l.unapart(start)
		l.apartAt, l.apart = start, &l.unknown
		switch e.Cause {
		case loopwatch.Starved:
			l.apart = &l.starved
		case loopwatch.WaitingForP:
			l.apart = &l.waitP
		default:
			l.apartRt = max(l.route.Load(), 0)
			l.unknownByRoute[l.apartRt].Add(1)
		}
		l.apart.Add(1)
	case !ongoing:
		// The request that held it, or (if it ended while its stack was
		// taken and another began) the next: a request's route stays
		// until the next request's.
		route := l.route.Load()
		l.unapart(start) // reported apart first: a block after all
		l.blockRt.Store(route)
		l.blockAt.Store(start)
		l.blocks.Add(1)
		l.byRoute[max(route, 0)].Add(1)
		m.mu.Lock()
		m.detect.Record(time.Duration(m.now - start))
		m.mu.Unlock()
		if len(e.Frames) > 0 {
			r := culprit.FromEpisode(l.Index, routeName(route), e)
			l.culprit.Store(&r)
		}
	}
}

// unapart takes back the count apart of the hold that began at start, if
// it was counted so.
func (l *Loop) unapart(start int64) {
	if l.apart != nil && l.apartAt == start {
		if l.apart == &l.unknown {
			l.unknownByRoute[l.apartRt].Add(-1)
		}
		l.apart.Add(-1)
		l.apart = nil
	}
}
