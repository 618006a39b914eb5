// Package lag measures an event loop's lateness from inside the server, the
// way Node.js's monitorEventLoopDelay does, but per loop and attributed: a
// heartbeat is handed to every loop each interval, its lag is when it ran
// less when it was handed over; and it counts the blocks loopwatch finds (a
// request that held its loop past the threshold: the loop, the route, how
// long, and where), on the monitor's own clock.
//
// A loop's heartbeat is a task the server's engine runs on that loop (the
// engine decides how: a task queued on the loop, a wake of a connection the
// server keeps there). One beat per loop is outstanding at a time: a loop
// blocked for 5 ms at a 1 ms interval has one beat 5 ms late, and the four
// beats it could not take are recorded as HdrHistogram's coordinated-omission
// correction records them (4, 3, 2 and 1 ms late), so the histogram says
// what a beat due every interval would have seen.
//
// A loop on a locked thread (Loop.Locked) that is asleep in its epoll wait,
// between requests, when its beat is due is not woken for it: nothing of
// the loop's stands before the beat, which is recorded as run at once
// (lag 0). Waking idle loops for nothing else cost more than the servers'
// own work while a prober probed them; the thread's wake-up latency is the
// machine's, and a client's times show it.
package lag

import (
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bystander-kit/bystander/internal/hist"
	"github.com/bystander-kit/bystander/loopwatch"
)

// StackEvery is the least time between two stacks of one loop (and two
// of its log lines) unless Options.StackEvery says.
const StackEvery = time.Second

// A loop that has served no request for IdleAfter gets a beat every
// IdleEvery (or every interval, if longer) instead of every interval:
// waking an idle loop thread every millisecond cost a fifth of a core on
// a 2-core machine for nothing to see, and its lag is still sampled.
// The first request puts it back on the interval at the next tick.
const (
	IdleAfter = time.Second
	IdleEvery = 100 * time.Millisecond // unless Options.IdleEvery says
)

// Outside names a block whose request is not known (the loop had left it
// by the time the block was seen).
const Outside = "outside a request"

// Options configure a Monitor.
type Options struct {
	// Interval is how often each loop gets a heartbeat; 0: none.
	Interval time.Duration
	// Warn is how long a request may hold its loop before that is a block
	// (loopwatch's threshold); 0: no detector.
	Warn time.Duration
	// StackEvery is the least time between two stacks of one loop's
	// blocks, and between two of its log lines (StackEvery when 0).
	StackEvery time.Duration
	// Log gets loopwatch's Warn lines (log/slog text): a loop held, and
	// where, at most one a loop per StackEvery.
	Log io.Writer
	// Name is the log lines' "server" ("loopserver").
	Name string
	// Repeat hands a beat still waiting at its loop's next turn over
	// again (same due time): for an engine that can lose the wake.
	Repeat bool
	// IdleEvery is how often a resting loop gets a beat (IdleEvery when 0).
	IdleEvery time.Duration
}

// Monitor hands out the heartbeats and runs the detector.
type Monitor struct {
	opts     Options
	loops    func() []*Loop
	poke     func(l *Loop, again bool) bool
	repeated atomic.Int64

	turn    int // ticks so far (Run's goroutine only)
	dozing  atomic.Bool
	nudgeMu sync.Mutex
	nudgeFD atomic.Int64 // the eventfd that wakes Run, plus one; 0: none
	mu      sync.Mutex
	detect  *hist.H // how long after a block began the detector saw it
	// watch is the detector: loopwatch, driven by Step on this clock.
	watch *loopwatch.Watcher
	now   int64 // the Step under way's time, for the episode handler
}

// New returns a monitor of the loops loops() lists; poke hands a beat to a
// loop (again: the last one is still waiting) and says whether it could (a
// loop without a heart cannot take one). Its loops come from its NewLoop.
func New(o Options, loops func() []*Loop, poke func(l *Loop, again bool) bool) *Monitor {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.IdleEvery <= 0 {
		o.IdleEvery = IdleEvery
	}
	if o.StackEvery <= 0 {
		o.StackEvery = StackEvery
	}
	m := &Monitor{opts: o, loops: loops, poke: poke, detect: hist.New()}
	if o.Warn > 0 {
		// Its Warn lines only: a held loop, where, at most one a second a
		// loop (the releases are on /stats and the stream).
		log := slog.New(slog.NewTextHandler(o.Log, &slog.HandlerOptions{Level: slog.LevelWarn})).With("server", o.Name)
		m.watch = loopwatch.NewDriven(loopwatch.Options{Threshold: o.Warn, StackEvery: o.StackEvery, Logger: log, OnEpisode: m.episode})
	}
	return m
}

// Watcher is the detector (nil without one), for its Prometheus counts.
func (m *Monitor) Watcher() *loopwatch.Watcher { return m.watch }

// minTick is the shortest tick: beats to many loops share ticks.
const minTick = 100 * time.Microsecond

// phases is how many ticks one interval spans: each loop gets its beat on
// its own tick of the interval (loop i on ticks i mod phases), so the
// loops are not all woken at the same instant. Handing all four loops their
// beats at once cost about 1.6 times the CPU of staggering them (idle,
// gnet, 2 cores): woken together, four loop threads fight over two cores.
func (m *Monitor) phases() int {
	n := max(len(m.loops()), 1)
	if m.opts.Interval <= 0 {
		return 1
	}
	return max(min(n, int(m.opts.Interval/minTick)), 1)
}

// lookEvery is how often the detector must look: a quarter of Warn, at
// least every 250 us (loopwatch's rule); 0 without a detector.
func (m *Monitor) lookEvery() time.Duration {
	if m.opts.Warn <= 0 {
		return 0
	}
	return max(m.opts.Warn/4, 250*time.Microsecond)
}

// Tick is how often Run wakes, and the detector looks: the heartbeat
// interval over the phases (250 us for 4 loops at 1 ms), or without a
// heartbeat every quarter of Warn; 0 when there is nothing to do.
func (m *Monitor) Tick() time.Duration {
	if m.opts.Interval > 0 {
		return m.opts.Interval / time.Duration(m.phases())
	}
	return m.lookEvery()
}

// Step is one tick at now: a beat to every loop whose turn it is and whose
// last beat ran, then the detector's look over every loop.
func (m *Monitor) Step(now int64) {
	defer m.look(now)
	phases := m.phases()
	m.turn++
	for i, l := range m.loops() {
		m.adopt(l)
		if m.opts.Interval > 0 && i%phases == m.turn%phases {
			switch due := l.due.Load(); {
			case due == 0 && !m.resting(l, now):
				l.handed = now
				if l.parked() {
					l.ranFree(now)
					break
				}
				l.due.Store(now) // before it can run
				if !m.poke(l, false) {
					l.due.Store(0)
				}
			case due != 0 && m.opts.Repeat && now-due >= int64(m.opts.Interval):
				m.repeated.Add(1)
				m.poke(l, true)
			}
		}
	}
}

// look runs the detector at now.
func (m *Monitor) look(now int64) {
	if m.watch != nil {
		m.now = now
		m.watch.Look(time.Unix(0, now))
	}
}

// Stop stops the detector and closes the loops' /proc files.
func (m *Monitor) Stop() {
	if m.watch != nil {
		m.watch.Stop()
	}
	for _, l := range m.loops() {
		if f := l.sys.Swap(nil); f != nil {
			f.Close()
		}
	}
}

// resting says whether l is idle and had a beat less than IdleEvery ago.
func (m *Monitor) resting(l *Loop, now int64) bool {
	if l.entered.Load() != 0 || now-l.left.Load() < int64(IdleAfter) {
		return false
	}
	return now-l.handed < int64(max(m.opts.IdleEvery, m.opts.Interval))
}
