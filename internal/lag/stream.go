package lag

import (
	"slices"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/results"
)

// Event is one line of the live stream (GET /lag on a server's admin
// address); its wire type is the run files' (results.LagEvent), which keep
// what the experiment read of it.
type Event = results.LagEvent

// LoopEvent is one loop in an Event.
type LoopEvent = results.LagLoopEvent

// Cursor is one reader's place in the stream.
type Cursor struct {
	at      int64
	read    map[int]uint64          // per loop: beats read
	blocked map[int]int64           // per loop: blocked time up to at
	culprit map[int]*culprit.Record // per loop: the record last sent
}

// NewCursor starts a reader at now: its first event covers from now.
func (m *Monitor) NewCursor(now int64) *Cursor {
	c := &Cursor{at: now, read: map[int]uint64{}, blocked: map[int]int64{}, culprit: map[int]*culprit.Record{}}
	for _, l := range m.loops() {
		l.mu.Lock()
		c.read[l.Index] = l.n
		l.mu.Unlock()
		c.blocked[l.Index] = l.blockedUntil(now)
	}
	return c
}

// Next is the event from the cursor's place to now, and moves it there.
func (m *Monitor) Next(c *Cursor, now int64) Event {
	window := max(now-c.at, 1)
	ev := Event{TimeNs: now, WindowNs: window, IntervalNs: int64(m.opts.Interval), WarnNs: int64(m.opts.Warn), Loops: []LoopEvent{}}
	for _, l := range m.loops() {
		var lags []int64
		l.mu.Lock()
		from := c.read[l.Index]
		if l.n-from > ringSize {
			from = l.n - ringSize
		}
		for i := from; i < l.n; i++ {
			lags = append(lags, l.ring[i%ringSize].lag)
		}
		c.read[l.Index] = l.n
		l.mu.Unlock()
		le := LoopEvent{Loop: l.Index, Beats: len(lags)}
		if d := l.due.Load(); d != 0 && now > d {
			lags = append(lags, now-d) // the beat still waiting, late by this much so far
		}
		if len(lags) > 0 {
			slices.Sort(lags)
			le.LagP50Ns, le.LagMaxNs = lags[(len(lags)-1)/2], lags[len(lags)-1]
		}
		b := l.blockedUntil(now)
		le.BlockedNs = min(max(b-c.blocked[l.Index], 0), window)
		c.blocked[l.Index] = b
		le.BlockedShare = float64(le.BlockedNs) / float64(window)
		le.Blocks, le.BlocksByRoute, le.Starved, le.WaitingForP, le.Unknown = l.blocks.Load(), l.blocksByRoute(), l.starved.Load(), l.waitP.Load(), l.unknown.Load()
		le.UnknownNs, le.UnknownByRoute = l.unknownNs.Load(), l.unknownsByRoute()
		if r := l.culprit.Load(); r != c.culprit[l.Index] { // a record is replaced, never changed: new or ended
			le.Culprit, c.culprit[l.Index] = r, r
		}
		if l.blockAt.Load() != 0 {
			le.BlockedNow, le.Route = true, routeName(l.blockRt.Load())
		}
		ev.Loops = append(ev.Loops, le)
	}
	c.at = now
	return ev
}

// MinEvery is the shortest window the stream gives: one event per loop per
// 100 ms at most.
const MinEvery = 100 * time.Millisecond
