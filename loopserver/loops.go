package main

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/bystander-kit/bystander/internal/lag"
	"github.com/bystander-kit/bystander/internal/protocol"
)

// The event loops: which loop is which, and each loop's own accounting.

// loop is one event loop: its label, the OS thread it is locked to, and what
// it did. Counters are atomics because the admin listener and the lag
// monitor read them from other goroutines.
type loop struct {
	index int
	gid   atomic.Uint64 // the goroutine that runs the loop (0: not seen yet, nbio)

	connsOpen  atomic.Int64
	connsTotal atomic.Int64
	requests   atomic.Int64
	busyNs     atomic.Int64
	longestNs  atomic.Int64

	// lag is the loop's own lag and blocks (heartbeat and detector).
	lag *lag.Loop
	// heart is the connection the server keeps on this loop to hand it
	// heartbeats; nil without one.
	heart atomic.Pointer[conn]

	// scratch is the loop's output buffer: used only on the loop itself.
	scratch []byte
}

func (l *loop) enter(r protocol.Route, now int64) { l.lag.Enter(r, now) }

func (l *loop) leave(start int64) {
	end := time.Now().UnixNano()
	l.lag.Leave(end)
	d := end - start
	l.busyNs.Add(d)
	for {
		old := l.longestNs.Load()
		if d <= old || l.longestNs.CompareAndSwap(old, d) {
			return
		}
	}
}

// loopSet labels loops in order of first sight by the goroutine that runs
// each. Neither engine exposes a loop index, but each runs a loop on one
// goroutine for the server's life, its callbacks and the closures it is
// handed included: the goroutine therefore names the loop, also inside a
// continuation, which is how the tests prove a continuation ran on the
// owning loop. With lock, each loop goroutine is also locked to its own OS
// thread (the Netty shape: a loop is a thread).
type loopSet struct {
	mu     sync.Mutex
	lock   bool
	newLag func(index int) *lag.Loop // the lag monitor's, its requests watched by the detector
	loops  atomic.Pointer[[]*loop]
	lags   atomic.Pointer[[]*lag.Loop]
}

func newLoopSet(lock bool) *loopSet {
	ls := &loopSet{lock: lock, newLag: lag.NewLoop}
	ls.loops.Store(&[]*loop{})
	ls.lags.Store(&[]*lag.Loop{})
	return ls
}

// lookup returns the loop the calling goroutine runs, or nil. It costs about
// a microsecond (the goroutine id comes from runtime.Stack): it runs when a
// connection opens and when a continuation runs, not for every request.
func (ls *loopSet) lookup() *loop {
	id := goid()
	for _, l := range *ls.loops.Load() {
		if l.gid.Load() == id {
			return l
		}
	}
	return nil
}

// register returns the loop the calling goroutine runs, labelling it on
// first sight. It must be called from a loop goroutine.
func (ls *loopSet) register() *loop {
	if l := ls.lookup(); l != nil {
		return l
	}
	if ls.lock {
		runtime.LockOSThread()
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	old := *ls.loops.Load()
	l := ls.add(len(old))
	l.gid.Store(goid())
	if ls.lock {
		nameThread(l.index)
		l.lag.Locked()
	}
	return l
}

// nameThread names the calling thread for loop index ("loop-2", its comm
// in /proc), which it runs alone (locked to it): what the kernel counts of
// the thread, its run-queue waits above all, is then known as the loop's.
func nameThread(index int) {
	b := []byte(fmt.Sprintf("loop-%d\x00", index))
	_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&b[0])), 0, 0, 0)
}

// add appends loop index (the next) under ls.mu.
func (ls *loopSet) add(index int) *loop {
	old := *ls.loops.Load()
	l := &loop{index: index, scratch: make([]byte, 0, 4096), lag: ls.newLag(index)}
	next := append(append(make([]*loop, 0, len(old)+1), old...), l)
	lags := make([]*lag.Loop, len(next))
	for i, n := range next {
		lags[i] = n.lag
	}
	ls.lags.Store(&lags)
	ls.loops.Store(&next)
	return l
}

// at returns loop index, making loops up to it: for an engine that knows
// which loop a connection is dealt to before that loop runs (nbio deals a
// connection to poller fd % pollers from the accepting goroutine). The
// loop learns its goroutine when it first runs (bind).
func (ls *loopSet) at(index int) *loop {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for len(*ls.loops.Load()) <= index {
		ls.add(len(*ls.loops.Load()))
	}
	return (*ls.loops.Load())[index]
}

// bind says, from l's own goroutine, that it runs l (the engine locks
// that goroutine to its thread itself: nbio's LockPoller).
func (ls *loopSet) bind(l *loop) {
	if l.gid.Load() == 0 {
		l.gid.Store(goid())
		if ls.lock {
			nameThread(l.index)
			l.lag.Locked()
		}
	}
}

// lagLoops lists every loop's lag monitor, for lag.Monitor.
func (ls *loopSet) lagLoops() []*lag.Loop { return *ls.lags.Load() }

// goid is the calling goroutine's id, from the first line of its stack:
// "goroutine 123 [running]:".
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	var id uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

func (ls *loopSet) all() []*loop { return *ls.loops.Load() }
