package lag

import (
	"os"
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

// A loop's side of the monitor: what it is inside, its heartbeat's
// lag, and what the detector found on it.

// ringSize is how many recent beats each loop keeps for the stream: two
// seconds at the default 1 ms interval.
const ringSize = 2048

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
