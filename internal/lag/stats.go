package lag

import (
	"sync/atomic"

	"github.com/bystander-kit/bystander/internal/culprit"
)

// What the monitor says of the loops, for /stats and /metrics: each
// loop's lag and blocks, and how late the detector saw them.

// Stats is one loop's lag and blocks since the server started.
type Stats struct {
	LagBeats      int64            `json:"lag_beats"`
	LagP50Ns      int64            `json:"lag_p50_ns"`
	LagP99Ns      int64            `json:"lag_p99_ns"`
	LagMaxNs      int64            `json:"lag_max_ns"`
	Blocks        int64            `json:"blocks"`
	BlockedNs     int64            `json:"blocked_ns"`
	BlockedNow    bool             `json:"blocked_now"`
	BlocksByRoute map[string]int64 `json:"blocks_by_route"`
	// Starved counts the holds past the threshold that were the loop's
	// thread waiting for a CPU: not blocks.
	Starved int64 `json:"starved"`
	// WaitingForP counts the holds past the threshold that were the
	// loop's goroutine, back from a system call, waiting for a Go P: not
	// blocks.
	WaitingForP int64 `json:"waiting_for_p"`
	// Unknown counts the holds past the threshold the detector could not
	// judge on a loop on a locked thread (loopwatch.Unknown: its thread Go
	// parked, and no stack found its goroutine in a wait of its own): not
	// blocks, and not left out. (Not on a locked thread, every hold is
	// unknown and counted a block.)
	Unknown int64 `json:"unknown"`
	// UnknownNs is how long those holds held the loop, in all (the ones
	// that ended).
	UnknownNs int64 `json:"unknown_ns"`
	// UnknownByRoute counts them by the route they began in.
	UnknownByRoute map[string]int64 `json:"unknown_by_route,omitempty"`
	// Culprit is the last block that had its stack taken: where it held.
	Culprit *culprit.Record `json:"culprit,omitempty"`
}

// Stats returns l's figures at now: the lag histogram (recorded beats, with
// the ones a late beat hid), and the blocks, the ongoing one included.
func (l *Loop) Stats(now int64) Stats {
	l.mu.Lock()
	s := l.h.Summary()
	l.mu.Unlock()
	us := func(v float64) int64 { return int64(v * 1e3) }
	return Stats{
		LagBeats: s.Count, LagP50Ns: us(s.P50Us), LagP99Ns: us(s.P99Us), LagMaxNs: us(s.MaxUs),
		Blocks: l.blocks.Load(), BlockedNs: l.blockedUntil(now), BlockedNow: l.blockAt.Load() != 0,
		BlocksByRoute: l.blocksByRoute(), Starved: l.starved.Load(), WaitingForP: l.waitP.Load(), Unknown: l.unknown.Load(), UnknownNs: l.unknownNs.Load(), UnknownByRoute: l.unknownsByRoute(), Culprit: l.culprit.Load(),
	}
}

// blocksByRoute counts l's blocks by the route they began in.
func (l *Loop) blocksByRoute() map[string]int64 { return counted(&l.byRoute) }

// unknownsByRoute counts l's unknown holds by the route they began in.
func (l *Loop) unknownsByRoute() map[string]int64 { return counted(&l.unknownByRoute) }

// counted is the routes of c with a count, by name.
func counted(c *[len(routeKeys)]atomic.Int64) map[string]int64 {
	m := map[string]int64{}
	for i := range c {
		if n := c[i].Load(); n > 0 {
			m[routeKeys[i]] = n
		}
	}
	return m
}

// blockedUntil is the time l spent blocked up to now, the ongoing block's
// part included.
func (l *Loop) blockedUntil(now int64) int64 {
	b := l.blockedNs.Load()
	if s := l.blockAt.Load(); s != 0 && now > s {
		b += now - s
	}
	return b
}

// Detection is how long after their start the detector saw blocks.
type Detection struct {
	Count int64 `json:"count"`
	P50Ns int64 `json:"p50_ns"`
	P99Ns int64 `json:"p99_ns"`
	MaxNs int64 `json:"max_ns"`
}

// Detection summarises how late the detector saw each block.
func (m *Monitor) Detection() Detection {
	m.mu.Lock()
	s := m.detect.Summary()
	m.mu.Unlock()
	return Detection{Count: s.Count, P50Ns: int64(s.P50Us * 1e3), P99Ns: int64(s.P99Us * 1e3), MaxNs: int64(s.MaxUs * 1e3)}
}

// Repeated counts the beats handed over again (Options.Repeat).
func (m *Monitor) Repeated() int64 { return m.repeated.Load() }

// Options returns what the monitor was made with.
func (m *Monitor) Options() Options { return m.opts }
