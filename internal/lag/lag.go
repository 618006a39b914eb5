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
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/hist"
	"github.com/bystander-kit/bystander/internal/protocol"
	"github.com/bystander-kit/bystander/loopwatch"
	"golang.org/x/sys/unix"
)

// ringSize is how many recent beats each loop keeps for the stream: two
// seconds at the default 1 ms interval.
const ringSize = 2048

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

type sample struct{ at, lag int64 }

// Loop is one event loop's monitor. Enter, Leave and Beat are called on the
// loop; everything else from other goroutines.
type Loop struct {
	Index int

	// The request the loop is inside: whether it rests, and a block's route.
	entered atomic.Int64 // unix ns; 0: between requests
	route   atomic.Int32
	left    atomic.Int64 // unix ns the last request ended

	// The heartbeat.
	due    atomic.Int64 // unix ns the outstanding beat was handed over; 0: none
	handed int64        // unix ns the last beat was handed over (the monitor's goroutine only)
	// sys is the loop thread's /proc syscall file (Locked): it says
	// whether the thread sleeps in its epoll wait (parked). nil: not known.
	sys  atomic.Pointer[os.File]
	mu   sync.Mutex // guards h, ring, n
	h    *hist.H
	ring [ringSize]sample
	n    uint64

	mon atomic.Pointer[Monitor] // set by the monitor, for Enter's nudge

	// watch is the loop under loopwatch (nil: no detector); what it found
	// is written by the monitor's episode handler alone.
	watch     *loopwatch.Loop
	blockAt   atomic.Int64 // unix ns the ongoing block began; 0: none
	blockRt   atomic.Int32 // its route, -1: outside a request
	blocks    atomic.Int64
	blockedNs atomic.Int64 // blocks that ended
	byRoute   [len(routeKeys)]atomic.Int64
	// unknownByRoute counts the unknown holds by the route they began in:
	// a loop held in /slow and not judged was still held there.
	unknownByRoute [len(routeKeys)]atomic.Int64
	starved        atomic.Int64                   // holds that were its thread waiting for a CPU: not blocks
	waitP          atomic.Int64                   // holds that were its goroutine waiting for a Go P after a system call: not blocks
	unknown        atomic.Int64                   // holds loopwatch could not judge on a locked loop (see loopwatch.Unknown): not blocks
	unknownNs      atomic.Int64                   // how long the unknown holds that ended held it, in all
	locked         atomic.Bool                    // the loop runs alone on a locked thread, which loopwatch reads
	culprit        atomic.Pointer[culprit.Record] // the last block with a stack
	// apartAt is the start of the last hold counted apart (starved,
	// waiting for a P, or not judged: apart), which a later report of it
	// may move.
	apartAt int64
	apart   *atomic.Int64
	// apartRt is the route the last unknown hold counted apart began in.
	apartRt int32
}

// routeKeys are the routes blocks are counted by: each protocol route, and
// outside any request (index 0, where protocol.Unknown would be: a request
// to an unknown path answers 404 at once and never blocks).
var routeKeys = [...]string{Outside, "/fast", "/slow", "/async", "/offload"}

func routeName(r int32) string {
	if r <= 0 || int(r) >= len(routeKeys) {
		return Outside
	}
	return routeKeys[r]
}

// NewLoop returns the monitor of loop index, without a detector (a
// Monitor's NewLoop gives one).
func NewLoop(index int) *Loop {
	l := &Loop{Index: index, h: hist.New()}
	l.blockRt.Store(-1)
	return l
}

// NewLoop returns the monitor of loop index, its requests watched by m's
// detector when it has one.
func (m *Monitor) NewLoop(index int) *Loop {
	l := NewLoop(index)
	if m.watch != nil {
		l.watch = m.watch.Loop(strconv.Itoa(index))
	}
	return l
}

// Locked says, from the loop's goroutine, that the loop runs alone on the
// calling (locked) thread: the detector can then tell a blocking call from
// a thread that did not get a CPU.
//
// It also opens the thread's /proc syscall file (held until the monitor
// stops), which tells a loop parked in its epoll wait: a beat due then is
// recorded as run at once, without waking the loop (see Monitor.Step).
func (l *Loop) Locked() {
	if l.watch != nil {
		l.watch.LockThread()
		l.locked.Store(true)
	}
	f, err := os.Open("/proc/self/task/" + strconv.Itoa(unix.Gettid()) + "/syscall")
	if err != nil {
		f = nil
	}
	if old := l.sys.Swap(f); old != nil {
		old.Close()
	}
}

// parked says whether the loop is between requests and its thread sleeps
// in an epoll wait (the system call it is in, from /proc; "running" while
// it runs or has been woken): a task handed to it now would run as soon
// as its thread woke, behind nothing of the loop's. A read costs about
// 4 us; waking the loop for a beat cost about 57 (docs/measurements.md).
func (l *Loop) parked() bool {
	f := l.sys.Load()
	if f == nil || l.entered.Load() != 0 {
		return false
	}
	var buf [24]byte
	n, _ := f.ReadAt(buf[:], 0) // "281 0x9 0x7f... ..." or "running"
	nr := 0
	for _, c := range buf[:n] {
		if c < '0' || c > '9' {
			if c != ' ' {
				return false
			}
			break
		}
		nr = nr*10 + int(c-'0')
	}
	return n > 0 && (nr == unix.SYS_EPOLL_PWAIT || nr == unix.SYS_EPOLL_PWAIT2 || nr == sysEpollWait) && l.entered.Load() == 0
}

// Enter records, on the loop, that it began serving route at now (unix ns).
func (l *Loop) Enter(r protocol.Route, now int64) {
	l.route.Store(int32(r))
	l.entered.Store(now)
	if l.watch != nil {
		l.watch.EnterAt(now)
	}
	if m := l.mon.Load(); m != nil && m.dozing.Load() {
		m.nudge()
	}
}

// Leave records, on the loop, that the request ended at now.
func (l *Loop) Leave(now int64) {
	if l.watch != nil {
		l.watch.ExitAt(now)
	}
	l.entered.Store(0)
	l.left.Store(now)
}

// Due is when the outstanding beat was handed over (unix ns), 0 when none
// is outstanding.
func (l *Loop) Due() int64 { return l.due.Load() }

// Beat is the heartbeat running on the loop at now (unix ns).
func (l *Loop) Beat(now int64, interval time.Duration) {
	due := l.due.Load()
	if due == 0 {
		return
	}
	d := max(now-due, 0)
	l.mu.Lock()
	l.h.RecordCorrected(time.Duration(d), interval)
	l.ring[l.n%ringSize] = sample{at: now, lag: d}
	l.n++
	l.mu.Unlock()
	l.due.Store(0)
}

// ranFree records a beat that the loop would have run at once: at now it
// was parked in its wait, no request in hand.
func (l *Loop) ranFree(now int64) {
	l.mu.Lock()
	l.h.Record(0)
	l.ring[l.n%ringSize] = sample{at: now}
	l.n++
	l.mu.Unlock()
}

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

// Run hands out heartbeats and detects blocks every Tick until stop closes.
//
// The ticks come from a thread of its own sleeping in the kernel (ppoll to
// a deadline), not from a Go timer: a Go timer lives on a P, and a loop
// held in a blocking syscall (a JDBC read; the kit's syscall block mode)
// can keep that P until the runtime takes it back, milliseconds later, so
// the ticks, and with them the beats and the detection of that very block,
// came late (a 5 ms block showed as a lag of 1 to 5 ms). While every loop
// rests (no request for IdleAfter) and none is held, the thread sleeps
// until the next resting beat is due; a loop entering a request wakes it.
func (m *Monitor) Run(stop <-chan struct{}) {
	if m.Tick() == 0 {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		m.runTicker(stop)
		return
	}
	m.nudgeFD.Store(int64(efd) + 1)
	defer func() {
		m.nudgeMu.Lock() // no nudge is writing to efd now
		m.nudgeFD.Store(0)
		unix.Close(efd)
		m.nudgeMu.Unlock()
	}()
	stopped := make(chan struct{})
	defer close(stopped)
	go func() { // a stop wakes it from however long a sleep
		select {
		case <-stop:
			m.poke8()
		case <-stopped:
		}
	}()
	// The schedule runs on the monotonic clock: a step of the wall clock
	// must not make it sleep an hour or spin.
	base := time.Now()
	mono := func() int64 { return int64(time.Since(base)) }
	next := mono()
	var buf [8]byte
	for {
		select {
		case <-stop:
			return
		default:
		}
		tick := int64(m.Tick())
		next += tick
		now := mono()
		if now-next > tick {
			next = now // fell behind: no burst of catch-up ticks
		}
		wait := next - now
		// dozing is set before the loops are looked at, and Enter sets
		// entered before it looks at dozing: either this sees the request
		// or the request's Enter sees the doze and nudges.
		m.dozing.Store(true)
		if m.allResting(time.Now().UnixNano()) {
			wait = max(wait, int64(m.opts.IdleEvery)/int64(max(m.phases(), 1)))
		} else {
			m.dozing.Store(false)
		}
		if wait > 0 {
			ts := unix.NsecToTimespec(wait)
			fds := []unix.PollFd{{Fd: int32(efd), Events: unix.POLLIN}}
			if n, _ := unix.Ppoll(fds, &ts, nil); n > 0 {
				_, _ = unix.Read(efd, buf[:])
				next = mono() // nudged: tick now, and on from here
			}
		}
		m.dozing.Store(false)
		m.Step(time.Now().UnixNano())
	}
}

// runTicker is Run on a Go ticker, where no eventfd can be had.
func (m *Monitor) runTicker(stop <-chan struct{}) {
	tick := m.Tick()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			m.Step(time.Now().UnixNano())
			if d := m.Tick(); d != tick {
				tick = d
				t.Reset(tick)
			}
		}
	}
}

// allResting says whether no loop served a request for IdleAfter and none
// is held: then nothing is due before the next resting beat.
func (m *Monitor) allResting(now int64) bool {
	if m.opts.Interval <= 0 {
		return false
	}
	for _, l := range m.loops() {
		m.adopt(l)
		if l.entered.Load() != 0 || now-l.left.Load() < int64(IdleAfter) || l.blockAt.Load() != 0 || l.due.Load() != 0 {
			return false
		}
	}
	return true
}

// adopt makes l nudge m when it enters a request.
func (m *Monitor) adopt(l *Loop) {
	if l.mon.Load() == nil {
		l.mon.Store(m)
	}
}

// nudge wakes a dozing monitor: a loop entered a request.
func (m *Monitor) nudge() {
	if m.dozing.CompareAndSwap(true, false) {
		m.poke8()
	}
}

// poke8 wakes Run's sleep through its eventfd, if it still has one.
func (m *Monitor) poke8() {
	m.nudgeMu.Lock()
	defer m.nudgeMu.Unlock()
	if fd := m.nudgeFD.Load(); fd > 0 {
		one := [8]byte{1}
		_, _ = unix.Write(int(fd-1), one[:])
	}
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
