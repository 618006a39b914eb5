// Package loopwatch tells you when a callback holds an event loop, and
// where: the loop, how long, and the stack of the goroutine holding it,
// taken while it still holds it, with what that goroutine was doing (in a
// system call, sleeping, waiting on a channel or a lock, running).
//
// A 5 ms blocking call on an event loop caps that loop at 200 requests a
// second and makes every connection on it wait, whatever it asked for.
// Go's event-loop libraries run your callbacks on a few loop goroutines
// and have no detector of their own; this is one, for production (a log
// line, and a callback, per episode) and for tests (loopwatchtest fails a
// test whose loops were held: BlockHound's idea for Go's event loops).
//
//	go get github.com/bystander-kit/bystander/loopwatch               # the standard library alone, Go 1.21 on
//	go get github.com/bystander-kit/bystander/loopwatch/loopwatchgnet # a gnet v2 server, watched in one line
//	go get github.com/bystander-kit/bystander/loopwatch/loopwatchnbio # an nbio engine, watched
//	go get github.com/bystander-kit/bystander/loopwatch/loopwatchprom # its counts for Prometheus
//
// # Quick start
//
// One Watcher; one Loop per event loop, made before the loops run (or
// under a lock: a loop goroutine that makes its own writes a shared map);
// Enter and Exit around each callback, on the loop's goroutine. The
// package's Example is the whole of it, runnable. An episode (a callback
// that held its loop past Options.Threshold, 10 ms by default) is logged
// with log/slog while the loop is still held, with where:
//
//	WARN loopwatch: loop held loop=loop-1 held=12ms cause=unknown state=syscall at="example.com/app/db.(*Pool).Query (/src/app/db/pool.go:88)"
//
// and handed to Options.OnEpisode: once while the loop is held, with the
// stack, and once when it ends, with how long it was held in all. Lines
// are at most one a loop per StackEvery (1 s); the ones left out are
// counted in the next. Loop.Counts and Watcher.Stats count every episode.
//
// # What it costs
//
// Measured on a 2-core virtual machine (go test -bench . in this
// module; docs/measurements.md in the kit has the runs):
//   - Enter and Exit: 25 ns a callback, no allocation, no clock read.
//   - The watcher's goroutine looks at every loop each quarter of the
//     threshold (at least every 250 us): 0.3 us a look at 8 loops, and
//     its wake-ups: 3-4 % of a core at a 1 or 10 ms threshold, 0.5 % at
//     100 ms (on a busy machine; idle loops).
//   - A stack, for an episode: Go reads another goroutine's stack only by
//     stopping the world and printing every goroutine's (runtime.Stack),
//     so the pause grows with the goroutines, about 3 us each: 0.1 ms
//     beside 10 goroutines, 2 ms beside 1,000, 28 ms beside 10,000, 90 ms
//     beside 50,000 (several times that on a busy machine; Stats says what
//     yours cost), its text about 150 bytes an idle goroutine. A loop's
//     episode gets a stack unless its last one is less than StackEvery old
//     (1 s by default), so loops held again and again cost one pause a
//     second at most; one stack a look serves every loop held then (and a
//     loop held across it by the same callback, later).
//   - LockThread: three /proc reads of the loop's thread (a few us) at
//     each look while a callback lasts past one look.
//
// # Causes
//
// A loop that did not get a CPU is not a blocking call: on a busy machine
// a loop's thread can wait for a CPU in the middle of a quick callback.
// Where a loop runs alone on a locked OS thread (Loop.LockThread),
// loopwatch reads the thread's own scheduler counts (its CPU clock, its
// state, Linux's schedstat) over the hold: an episode that would not have
// passed the threshold without the time its thread waited for a CPU is
// Starved, no frame blamed, counted apart; if the callback's own time
// passes the threshold later, it is Blocked after all and reported again.
// Elsewhere a hold is Unknown: loopwatch cannot tell.
//
// A thread off a CPU by its own doing was in a system call, or parked by
// Go: Go parks a locked thread (in a futex wait) whenever its goroutine
// does not run, whether that goroutine waits on a channel, a lock, a
// timer or the network (the callback's wait) or for a P, or inside the
// runtime (not the callback's). A hold whose thread the watcher found in
// a system call of its own (its /proc syscall file), or that ran on a CPU
// past the threshold or for half the time it could run, is Blocked, stack
// or not. One whose thread was
// parked all along is Blocked only if a stack taken while it holds finds
// its goroutine waiting in a call of its own; otherwise (no stack:
// StackEvery, or let go before one was taken; "runnable": woken or
// preempted, and waiting for a P; waiting inside the runtime itself, such
// as an allocation waiting for a collection to start) it is Unknown:
// loopwatch cannot judge, and does not blame the frame. Unknown episodes
// are counted (Loop.Counts), never dropped. So a loop held again and
// again by a wait of Go's (time.Sleep, a database call over the network)
// has one episode a StackEvery Blocked, the one with a stack, and the
// rest Unknown: to have every one judged, lower StackEvery (a stack
// each, at its cost).
//
// A loop whose goroutine waits for a Go P is not a blocking call either.
// A goroutine back from a system call (a write, a read that did not
// wait) finds no P free when every P runs other goroutines, and waits,
// its loop held, until the scheduler takes one from them (it preempts a
// goroutine after about 10 ms). The stack shows such a goroutine
// "runnable" where it entered its call, as during the call: an episode
// whose stack finds it so is WaitingForP, the call not blamed, counted
// apart. A goroutine ready to run in its own code (preempted, or woken
// from a wait) is not this: Blocked if its thread ran (or it is on no
// locked thread: Unknown), Unknown if its thread was parked. It is told
// from the stack alone: an episode without one (StackEvery) keeps the
// cause its thread gave, and a system call that held the loop past the threshold
// and returned just before the stack is counted WaitingForP too (the
// stack shows the goroutine when it is taken, not when its call
// returned). An episode still held a threshold after its goroutine was
// found waiting gets another stack each threshold; found in its own code
// by two of them a threshold apart, waiting at none between, it is its
// callback's after all, counted so and reported again.
//
// # Limits
//
//   - It watches what you mark: a callback not inside Enter and Exit, or
//     run on another goroutine (a pool's, a timer's), is not watched.
//   - A Loop belongs to one goroutine, the loop's own, learned by its
//     first Enter: gnet, nbio and evio run a loop on one goroutine for the
//     server's life.
//   - It samples: a hold is seen at most a quarter of the threshold late,
//     a look lasts as long as its stack (a callback that begins and ends
//     within one pause is not seen), and a stack is taken after the
//     episode is counted: a loop let go meanwhile has its episode without
//     one.
//   - The watcher is Go code and needs a P to look. A callback that runs
//     Go code holds its P, and when such callbacks hold every P the
//     watcher waits until the scheduler preempts one (about 10 ms): a
//     CPU-bound hold shorter than that can go unseen on a machine whose Ps
//     are all busy. A loop blocked in a system call, a sleep or a wait
//     gives its P up.
//   - Telling a starved thread apart needs Linux and a locked thread;
//     judging a hold whose thread Go parked needs a stack too.
//
// # Libraries
//
// gnet v2 and evio run each event loop on one goroutine, and your
// connection callbacks on it (gnet's OnTick runs on a goroutine of its
// own); nbio runs its pollers' callbacks (OnData, OnRead) on each poller's
// goroutine and accepts on a listener goroutine. loopwatchgnet and
// loopwatchnbio watch them for you (a Loop an event loop, or a poller and
// a listener, each callback on the Loop of the loop that runs it); by
// hand, as with evio: a Loop each, made up front, and the Loop of the loop
// that runs the callback.
// netpoll is not one of these: it hands each connection's input to a
// goroutine of a pool (gopool), so its handlers run on many goroutines,
// none of them a loop's, and a handler that blocks ties up a worker, not
// a loop: loopwatch's Loop does not fit it.
//
// # Advanced
//
// A server that has a clock of its own and reads the time at each
// callback anyway (the kit's loop server: a heartbeat thread sleeping in
// the kernel, and its own per-request figures) can drive the watcher
// itself and save the watcher a guess: NewDriven and Watcher.Look, and
// Loop.EnterAt and Loop.ExitAt with the times it read. Nothing else needs
// them.
package loopwatch

import (
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Watcher. The zero value watches for 10 ms holds.
type Options struct {
	// Threshold is how long a callback may hold its loop before that is an
	// episode (default 10 ms; 1 ms works).
	Threshold time.Duration
	// StackEvery is the least time between two stacks of one loop, and
	// between two of its log lines (default 1 s; a negative value takes no
	// stack, and logs a line a second at most).
	StackEvery time.Duration
	// OnEpisode, when set, is called for each episode, from the goroutine
	// that looks (the watcher's own, or Look's caller): while its loop is
	// still held, and when it ends (Ended).
	OnEpisode func(Episode)
	// Logger gets a Warn line for an episode while it holds its loop and an
	// Info line when it ends, at most one episode's lines per StackEvery a
	// loop (default slog.Default(); a handler that discards logs nothing).
	Logger *slog.Logger
}

// Cause is why a loop was held past the threshold.
type Cause int

const (
	// Unknown: loopwatch cannot judge. The loop is not on a locked
	// thread of its own (Loop.LockThread), or the watcher could not read
	// its thread's counts: it cannot tell a blocking call from a thread
	// that waited for a CPU. Or Go parked its thread all along and no
	// stack taken while it held found its goroutine waiting in a call of
	// its own: a wait of its own, or for a P, or inside the runtime. Its
	// frames, if a stack was taken, say where it stood, not who held it.
	Unknown Cause = iota
	// Blocked: the callback held the loop, in a call that blocks or runs
	// long, while its thread could have run: its thread was found in a
	// system call of its own or running, or its stack in a wait of its
	// own.
	Blocked
	// Starved: without the time the loop's thread waited for a CPU (in
	// the kernel's run queue), the callback would not have held the loop
	// past the threshold: the machine, not the callback. The frame it
	// stood on is not blamed. (A goroutine that waits for a Go P parks its
	// locked thread, which the kernel counts as the thread's own doing:
	// see WaitingForP.)
	Starved
	// WaitingForP: the stack found the loop's goroutine back from a system
	// call and waiting for a Go P to run on (all of them busy): the
	// scheduler held the loop, not the call, whose frame is not blamed. A
	// goroutine ready to run in its own code (preempted, or woken from a
	// wait) is not this: Blocked, or Unknown.
	WaitingForP
)

func (c Cause) String() string {
	switch c {
	case Blocked:
		return "blocked"
	case Starved:
		return "starved"
	case WaitingForP:
		return "waiting_for_p"
	}
	return "unknown"
}

// Episode is one callback that held its loop past the threshold.
type Episode struct {
	Loop string // the loop's name
	// Start is when the callback began: when the watcher first saw it (at
	// most a quarter of the threshold late), or the time EnterAt gave.
	Start time.Time
	// Held is how long the loop was held: so far while it is held, in all
	// once Ended.
	Held  time.Duration
	Ended bool
	// Cause says whether the callback held the loop, or its thread did not
	// get a CPU; decided while the loop is held, kept when it ends.
	Cause Cause
	// Thread is what the kernel counted of the loop's thread over the part
	// of the hold the watcher watched; zero unless the loop is on a locked
	// thread (Loop.LockThread).
	Thread ThreadTimes
	// State is what the holding goroutine was doing when its stack was
	// taken, as the runtime says it: "syscall", "sleep", "chan receive",
	// "select", "sync.Mutex.Lock", "runnable" or "running" (on a CPU), ...;
	// empty when no stack was taken.
	State string
	// Frames is that goroutine's stack: the culprit first (the innermost
	// frame outside Go's standard library and runtime: your code, or a
	// library's), then its callers, then the standard library's and the
	// runtime's frames it called last; nil when no stack was taken (and for
	// a Starved or WaitingForP episode). An Unknown episode's frames say
	// where its goroutine stood, not that they held the loop.
	Frames []Frame
}

// ThreadTimes are a loop thread's scheduler counts over Watched: how long
// it ran on a CPU, and how long it was ready to run and waited for one.
// The rest it was off a CPU by its own doing: sleeping, in a system call,
// or parked by Go while its goroutine waited.
type ThreadTimes struct {
	Watched, Ran, Waited time.Duration
}

// Own is how much of a hold of held was the callback's own doing, at the
// share of Watched its thread did not spend waiting for a CPU: what the
// hold would have been had it never waited.
func (t ThreadTimes) Own(held time.Duration) time.Duration {
	if t.Watched <= 0 {
		return held
	}
	share := 1 - min(max(float64(t.Waited)/float64(t.Watched), 0), 1)
	return time.Duration(share * float64(held))
}

// Culprit is the first frame: the innermost call outside the standard
// library (the zero Frame without a stack).
func (e Episode) Culprit() Frame {
	if len(e.Frames) == 0 {
		return Frame{}
	}
	return e.Frames[0]
}

// Frame is one call on a stack.
type Frame struct {
	Function string // package-qualified: "main.(*server).handle"
	File     string
	Line     int
}

func (f Frame) String() string {
	if f.Function == "" {
		return ""
	}
	return f.Function + " (" + f.File + ":" + strconv.Itoa(f.Line) + ")"
}

// Stats are what a Watcher saw, and what its stacks cost.
type Stats struct {
	Episodes int64 // every episode, whatever its cause, stack or not
	Starved  int64 // of which the loop's thread did not get a CPU
	// WaitingForP: of which the loop's goroutine was back from a system
	// call and waiting for a Go P.
	WaitingForP int64
	Stacks      int64 // stacks taken (one serves every loop held at that look)
	// StackPause is the longest and the total time spent taking stacks:
	// the world is stopped for part of it.
	StackPauseMax, StackPauseTotal time.Duration
}

// Counts are one loop's episodes by cause, and how long the episodes that
// ended held it, in all.
type Counts struct {
	Blocked, Starved, WaitingForP, Unknown int64
	Held                                   time.Duration
}

// Watcher watches the loops made by its Loop method.
type Watcher struct {
	o     Options
	log   *slog.Logger
	mu    sync.Mutex              // guards stats, and the making of loops
	loops atomic.Pointer[[]*Loop] // copied on each new loop: a look reads it without a lock or a copy
	stats Stats
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	// looking serialises Look with Stop.
	looking sync.Mutex
	stopped bool
	// The looking goroutine's own: the last dump's bytes a goroutine; the
	// last dump, while a loop is held by the callback it was in then;
	// and the look's reports, held until its stack is taken.
	dumpPer  int
	lastDump []byte
	reports  []pendingReport
	now      time.Time // the look's
}

// New starts a watcher, and the goroutine that looks at its loops every
// quarter of the threshold (at least every 250 us); Stop ends it.
func New(o Options) *Watcher {
	w := newWatcher(o)
	go w.run()
	return w
}

// NewDriven is New for a server that has a clock of its own: it starts no
// goroutine, and the caller calls Look at least every quarter of the
// threshold, from one goroutine.
//
// Advanced: the kit's loop server drives its watcher from a thread that
// sleeps in the kernel between ticks (its heartbeat's), whose ticks are
// not late when every Go P is taken, as a Go timer's can be. New is what
// a server without such a clock wants.
func NewDriven(o Options) *Watcher {
	w := newWatcher(o)
	close(w.done)
	return w
}

func newWatcher(o Options) *Watcher {
	if o.Threshold <= 0 {
		o.Threshold = 10 * time.Millisecond
	}
	if o.StackEvery == 0 {
		o.StackEvery = time.Second
	}
	w := &Watcher{o: o, log: o.Logger, stop: make(chan struct{}), done: make(chan struct{})}
	if w.log == nil {
		w.log = slog.Default()
	}
	return w
}

// Stop ends the watcher; a loop held then is reported no more.
func (w *Watcher) Stop() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
	w.looking.Lock()
	defer w.looking.Unlock()
	if w.stopped {
		return
	}
	w.stopped = true
	for _, l := range w.list() {
		l.files.Swap(nil).close()
	}
}

// Stats is what the watcher saw so far.
func (w *Watcher) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// Loop is one event loop. Enter and Exit are called on the loop's own
// goroutine; the watcher reads the rest.
type Loop struct {
	name string
	gid  atomic.Uint64 // the loop's goroutine, learned by the first Enter
	tid  atomic.Int64  // its locked thread (LockThread); 0: none said
	seq  atomic.Uint64 // callbacks begun
	in   atomic.Bool   // a callback is under way
	at   atomic.Int64  // unix ns EnterAt gave for it; 0: not given
	end  atomic.Int64  // unix ns ExitAt gave for it; 0: not given

	blocked, starved, waitP, unknown atomic.Int64 // episodes begun, by cause
	heldNs                           atomic.Int64 // how long the episodes that ended held the loop, in all

	// The looking goroutine's own.
	cur       uint64    // the callback it is timing
	since     time.Time // when it began, as far as the watcher knows
	seen      uint64    // the callback already reported
	ep        *Episode
	lastStack time.Time
	lastLog   time.Time
	unlogged  int  // episodes not logged since the last line
	logged    bool // the ongoing episode had its line
	// The loop thread's counts, while a callback is watched that lasted
	// past one look: from base (read in callback baseSeq) to prev, and
	// the off-CPU time of the looks that found the thread runnable.
	files          atomic.Pointer[threadFiles] // opened by LockThread
	schedErr       bool                        // the thread could not be read: Unknown
	base, prev     threadSample
	baseAt, prevAt time.Time
	baseSeq        uint64
	waitedSeen     time.Duration
	// called: a read since base found the thread in a system call of its
	// own; parked: the ongoing episode's thread neither ran for most of
	// the watched part nor was found in such a call (Go parked it): only
	// its stack can say whether its goroutine waited on its own or not.
	called, parked bool
	pending        bool // an episode waits one look for its thread's counts
	// lookSeq is the callback the look found under way (0: none);
	// dumpSeq the one under way across the last dump (0: none, or over).
	lookSeq, dumpSeq uint64
	// waitSeen is when a stack last found the ongoing episode's goroutine
	// waiting for a P (WaitingForP), or looked again; ownSeen when one
	// first found it in its own code since (zero: none); before is its
	// cause until the wait was seen.
	waitSeen, ownSeen time.Time
	before            Cause
	earlyWait         bool // the stack taken before the episode was decided found it waiting
	earlyRuntime      bool // ... or waiting inside Go's runtime itself
	// starvedState and starvedFrames are that stack's, put aside while the
	// episode is starved (which names no frame).
	starvedState  string
	starvedFrames []Frame
}

// Loop returns a new Loop named name, watched from now on.
func (w *Watcher) Loop(name string) *Loop {
	l := &Loop{name: name}
	w.mu.Lock()
	next := append(append([]*Loop(nil), w.list()...), l)
	w.loops.Store(&next)
	w.mu.Unlock()
	return l
}

// Enter marks, on the loop's goroutine, that a callback begins. It makes
// three atomic writes and reads no clock: the watcher times the callback
// from when it first sees it, at most a quarter of the threshold late.
func (l *Loop) Enter() {
	if l.gid.Load() == 0 {
		l.gid.Store(goid())
	}
	l.at.Store(0)
	l.seq.Add(1)
	l.in.Store(true)
}

// EnterAt is Enter for a caller that has read the clock already: the
// callback began at unixNano, and its episode is timed from then.
//
// Advanced: for a server that reads the time at each callback anyway (the
// kit's loop server does, for its own figures); Enter costs less than a
// clock read.
func (l *Loop) EnterAt(unixNano int64) {
	if l.gid.Load() == 0 {
		l.gid.Store(goid())
	}
	l.at.Store(unixNano)
	l.seq.Add(1)
	l.in.Store(true)
}

// Exit marks, on the loop's goroutine, that the callback ended: one atomic
// write.
func (l *Loop) Exit() { l.in.Store(false) } // an ExitAt time of an earlier callback is before this one's start: ignored

// ExitAt is Exit for a caller that has read the clock: the callback ended
// at unixNano, and an episode's Held ends then (with Exit, at the look
// that sees it ended).
//
// Advanced: see EnterAt.
func (l *Loop) ExitAt(unixNano int64) {
	l.end.Store(unixNano)
	l.in.Store(false)
}

// LockThread, called from the loop's own goroutine, locks that goroutine
// to its OS thread for the rest of its life (runtime.LockOSThread: a loop
// locked already, as gnet's WithLockOSThread and nbio's LockPoller do,
// stays as it is) and has the watcher read that thread's scheduler counts
// while a callback runs long. loopwatch can then tell a blocking call from
// a thread that did not get a CPU (Starved). It opens two of the thread's
// /proc files, held until the watcher stops; outside Linux it locks, and
// the causes stay Unknown. A loop on a thread of its own costs the Go
// scheduler a hand-off each time the loop wakes (the thread must be woken
// for it): call it where the loop's thread is locked anyway, or where
// telling a starved loop apart is worth that.
func (l *Loop) LockThread() {
	runtime.LockOSThread()
	if l.gid.Load() == 0 {
		l.gid.Store(goid())
	}
	tid := gettid()
	l.files.Swap(openThread(tid)).close()
	l.tid.Store(int64(tid))
}

// Name is the loop's name.
func (l *Loop) Name() string { return l.name }

// Counts are the loop's episodes so far, by cause.
func (l *Loop) Counts() Counts {
	return Counts{Blocked: l.blocked.Load(), Starved: l.starved.Load(), WaitingForP: l.waitP.Load(),
		Unknown: l.unknown.Load(), Held: time.Duration(l.heldNs.Load())}
}

// Loops lists the watched loops, in the order they were made.
func (w *Watcher) Loops() []*Loop { return append([]*Loop(nil), w.list()...) }

// list is the loops as they are now; never written to.
func (w *Watcher) list() []*Loop {
	if p := w.loops.Load(); p != nil {
		return *p
	}
	return nil
}
