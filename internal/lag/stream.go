package lag

import (
	"slices"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
)

// Event is one line of the live stream (GET /lag on a server's admin
// address): every loop's lag and blocked time over the window that ended
// at TimeNs. It is also what the experiment keeps of each measured window.
type Event struct {
	TimeNs     int64       `json:"t_unix_ns"`
	WindowNs   int64       `json:"window_ns"`
	IntervalNs int64       `json:"interval_ns"`
	WarnNs     int64       `json:"block_warn_ns"`
	Loops      []LoopEvent `json:"loops"`
}

// LoopEvent is one loop in an Event. Lag figures are over the beats that
// ran in the window and the one still waiting, so a loop held through the
// whole window shows its lag growing, not nothing.
type LoopEvent struct {
	Loop         int     `json:"loop"`
	Beats        int     `json:"beats"`
	LagP50Ns     int64   `json:"lag_p50_ns"`
	LagMaxNs     int64   `json:"lag_max_ns"`
	BlockedNs    int64   `json:"blocked_ns"`
	BlockedShare float64 `json:"blocked_share"`
	BlockedNow   bool    `json:"blocked_now"`
	Route        string  `json:"route,omitempty"` // the ongoing block's
	// Counts since the server started: a reader diffs two events to count
	// the blocks between them.
	Blocks        int64            `json:"blocks_total"`
	BlocksByRoute map[string]int64 `json:"blocks_by_route"`
	Starved       int64            `json:"starved_total"`
	WaitingForP   int64            `json:"waiting_for_p_total"`
	Unknown       int64            `json:"unknown_total"`    // holds the detector could not judge: not blocks
	UnknownNs     int64            `json:"unknown_ns_total"` // how long the ones that ended held the loop
	// Culprit is the loop's last block with a stack, in the first event
	// after it was found and again when it ended (not in every event: a
	// reader keeps the last it saw; its start says whether it is in the
	// reader's window).
	Culprit *culprit.Record `json:"culprit,omitempty"`
}

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
		le.UnknownNs = l.unknownNs.Load()
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
