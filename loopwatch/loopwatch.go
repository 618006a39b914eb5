// Package loopwatch tells you when a callback holds an event loop, and
// where: the loop, how long, and the stack of the goroutine holding it,
// taken while it still holds it, with what that goroutine was doing (in a
// system call, sleeping, waiting on a channel or a lock, running).
//
// A 5 ms blocking call on an event loop caps that loop at 200 requests a
// second and makes every connection on it wait, whatever it asked for. Go's
// event-loop libraries (gnet, nbio, evio, netpoll) run your callbacks on a
// few loop goroutines and have no detector of their own; this is one, for
// production (a callback and a log line per episode) and for tests
// (loopwatchtest fails a test whose loops were held: BlockHound's idea for
// Go's event loops).
//
// In the first five minutes, with gnet: make one Watcher, one Loop per
// event loop, and mark each callback.
//
//	w := loopwatch.New(loopwatch.Options{Threshold: 5 * time.Millisecond})
//	defer w.Stop()
//	loops := map[gnet.EventLoop]*loopwatch.Loop{} // one per loop, made in OnBoot or on first sight
//	...
//	func (s *server) OnTraffic(c gnet.Conn) gnet.Action {
//		l := s.loopOf(c) // the *loopwatch.Loop of c.EventLoop()
//		l.Enter()
//		defer l.Exit()
//		... // your handler
//	}
//
// Each episode is logged (log/slog, Warn) and handed to Options.OnEpisode:
// once while the loop is still held, with the stack, and once when it ends,
// with how long it was held in all.
//
// The rule for stacks: Go reads another goroutine's stack only by stopping
// the world (runtime.Stack of all goroutines), which pauses every goroutine
// for a moment (Stats says how long). Every episode is counted and
// reported; a stack is taken for an episode unless the same loop's last
// stack was taken less than Options.StackEvery ago (1 s by default), so a
// loop held again and again costs one pause a second at most, per loop.
// The watcher looks at every loop each quarter of the threshold (at least
// every 250 us), on a goroutine of its own.
//
// A Loop belongs to one goroutine, the loop's own: gnet, nbio and evio each
// run a loop on one goroutine for the server's life. Its first Enter learns
// which; after that Enter makes two atomic writes and Exit one, and neither
// reads the clock (BenchmarkEnterExit measures them): the watcher times a
// callback from when it first sees it, at most a quarter of the threshold
// after it began, or from the time EnterAt is given.
package loopwatch

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Watcher. The zero value watches for 10 ms holds.
type Options struct {
	// Threshold is how long a callback may hold its loop before that is an
	// episode (default 10 ms; 1 ms works).
	Threshold time.Duration
	// StackEvery is the least time between two stacks of one loop
	// (default 1 s; a negative value takes none).
	StackEvery time.Duration
	// OnEpisode, when set, is called from the watcher's goroutine for each
	// episode: while its loop is still held, and when it ends (Ended).
	OnEpisode func(Episode)
	// Logger gets a Warn line per episode while it holds its loop, and an
	// Info line when it ends (default slog.Default(); use a discarding
	// handler to log nothing).
	Logger *slog.Logger
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
	// State is what the holding goroutine was doing when its stack was
	// taken, as the runtime says it: "syscall", "sleep", "chan receive",
	// "select", "sync.Mutex.Lock", "runnable" or "running" (on a CPU), ...;
	// empty when no stack was taken.
	State string
	// Frames is that goroutine's stack: the culprit first (the innermost
	// frame outside Go's standard library and runtime: your code, or a
	// library's), then its callers, then the standard library's and the
	// runtime's frames it called last; nil when no stack was taken.
	Frames []Frame
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
	Episodes int64 // every episode, stack or not
	Stacks   int64 // stacks taken
	// StackPause is the longest and the total time spent taking stacks:
	// the world is stopped for part of it.
	StackPauseMax, StackPauseTotal time.Duration
}

// Watcher watches the loops made by its Loop method.
type Watcher struct {
	o     Options
	log   *slog.Logger
	mu    sync.Mutex // guards loops, stats
	loops []*Loop
	stats Stats
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	// dumpSize is the last dump's size (the watcher's goroutine only).
	dumpSize int
}

// New starts a watcher; Stop ends it.
func New(o Options) *Watcher {
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
	go w.run()
	return w
}

// Stop ends the watcher; a loop held then is reported no more.
func (w *Watcher) Stop() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
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
	seq  atomic.Uint64 // callbacks begun
	in   atomic.Bool   // a callback is under way
	at   atomic.Int64  // unix ns EnterAt gave for it; 0: not given

	episodes atomic.Int64 // episodes begun
	heldNs   atomic.Int64 // how long the episodes that ended held the loop, in all

	// The watcher's own, on its goroutine.
	cur       uint64    // the callback it is timing
	since     time.Time // when it began, as far as the watcher knows
	seen      uint64    // the callback already reported
	ep        *Episode
	lastStack time.Time
}

// Loop returns a new Loop named name, watched from now on.
func (w *Watcher) Loop(name string) *Loop {
	l := &Loop{name: name}
	w.mu.Lock()
	w.loops = append(w.loops, l)
	w.mu.Unlock()
	return l
}

// Enter marks, on the loop's goroutine, that a callback begins.
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
func (l *Loop) EnterAt(unixNano int64) {
	if l.gid.Load() == 0 {
		l.gid.Store(goid())
	}
	l.at.Store(unixNano)
	l.seq.Add(1)
	l.in.Store(true)
}

// Exit marks that the callback ended.
func (l *Loop) Exit() { l.in.Store(false) }

// Name is the loop's name.
func (l *Loop) Name() string { return l.name }

// Episodes is how many episodes the loop had, and how long those that
// ended held it in all.
func (l *Loop) Episodes() (n int64, held time.Duration) {
	return l.episodes.Load(), time.Duration(l.heldNs.Load())
}

// Loops lists the watched loops, in the order they were made.
func (w *Watcher) Loops() []*Loop {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*Loop(nil), w.loops...)
}

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
			w.look(time.Now()) // not the tick's time: the watcher may run late
		}
	}
}

// look reports the loops held past the threshold, and the episodes that
// ended.
func (w *Watcher) look(now time.Time) {
	w.mu.Lock()
	loops := w.loops
	w.mu.Unlock()
	for _, l := range loops {
		seq, in := l.seq.Load(), l.in.Load()
		if l.ep != nil && (!in || seq != l.seen) {
			ep := *l.ep // it ended (at most a look ago)
			ep.Ended, ep.Held = true, now.Sub(ep.Start)
			l.ep = nil
			l.heldNs.Add(int64(ep.Held))
			w.report(ep)
		}
		if !in {
			continue
		}
		if seq != l.cur { // a callback not seen before: timed from now, or from EnterAt's time
			l.cur, l.since = seq, now
			if at := l.at.Load(); at > 0 && l.seq.Load() == seq && at < now.UnixNano() {
				l.since = time.Unix(0, at)
			}
		}
		if seq == l.seen || now.Sub(l.since) < w.o.Threshold {
			continue
		}
		l.seen = seq
		ep := Episode{Loop: l.name, Start: l.since, Held: now.Sub(l.since)}
		w.mu.Lock()
		w.stats.Episodes++
		w.mu.Unlock()
		l.episodes.Add(1)
		if w.o.StackEvery >= 0 && now.Sub(l.lastStack) >= w.o.StackEvery && l.gid.Load() != 0 {
			ep.State, ep.Frames = w.stackOf(l.gid.Load())
			l.lastStack = now
		}
		// The stack says where it is held only if it still is.
		if l.seq.Load() != seq || !l.in.Load() {
			ep.State, ep.Frames = "", nil
		}
		l.ep = &ep
		w.report(ep)
	}
}

func (w *Watcher) report(ep Episode) {
	if w.o.OnEpisode != nil {
		w.o.OnEpisode(ep)
	}
	level, msg := slog.LevelWarn, "loopwatch: loop held"
	if ep.Ended {
		level, msg = slog.LevelInfo, "loopwatch: loop released"
	}
	attrs := []slog.Attr{slog.String("loop", ep.Loop), slog.Duration("held", ep.Held)}
	if c := ep.Culprit(); c.Function != "" {
		attrs = append(attrs, slog.String("state", ep.State), slog.String("at", c.String()))
	}
	w.log.LogAttrs(context.Background(), level, msg, attrs...)
}

// stackOf takes every goroutine's stack (the world stops meanwhile) and
// returns goroutine id's state and frames.
func (w *Watcher) stackOf(id uint64) (string, []Frame) {
	// Every goroutine's stack is printed while the world is stopped: one
	// dump, in a buffer sized from the last one and the goroutines now, so
	// that it is rarely taken twice.
	t0 := time.Now()
	buf := make([]byte, max(w.dumpSize*5/4, runtime.NumGoroutine()*2048, 64<<10))
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= 256<<20 {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	pause := time.Since(t0)
	w.dumpSize = len(buf)
	w.mu.Lock()
	w.stats.Stacks++
	w.stats.StackPauseTotal += pause
	w.stats.StackPauseMax = max(w.stats.StackPauseMax, pause)
	w.mu.Unlock()
	return parse(buf, id)
}

// parse finds goroutine id in a runtime.Stack dump: its state and its
// frames, the culprit first.
func parse(dump []byte, id uint64) (string, []Frame) {
	head := []byte("goroutine " + strconv.FormatUint(id, 10) + " [")
	for _, g := range bytes.Split(dump, []byte("\n\n")) {
		if !bytes.HasPrefix(g, head) {
			continue
		}
		lines := strings.Split(string(g), "\n")
		state := strings.TrimSuffix(strings.TrimPrefix(lines[0], string(head)), "]:")
		if i := strings.Index(state, ","); i >= 0 { // "chan receive, 2 minutes"
			state = state[:i]
		}
		var frames []Frame
		for i := 1; i+1 < len(lines); i += 2 {
			fn := lines[i]
			if strings.HasPrefix(fn, "created by ") {
				break
			}
			if j := strings.LastIndex(fn, "("); j > 0 {
				fn = fn[:j]
			}
			loc := strings.TrimSpace(lines[i+1])
			if j := strings.LastIndex(loc, " +0x"); j > 0 {
				loc = loc[:j]
			}
			f := Frame{Function: fn, File: loc}
			if j := strings.LastIndex(loc, ":"); j > 0 {
				f.File = loc[:j]
				f.Line, _ = strconv.Atoi(loc[j+1:])
			}
			frames = append(frames, f)
		}
		return state, culpritFirst(frames)
	}
	return "", nil
}

// culpritFirst reorders frames (innermost first) so that the innermost
// frame outside the standard library comes first, then its callers, then
// the standard library's frames it called.
func culpritFirst(frames []Frame) []Frame {
	for i, f := range frames {
		if !standard(f.Function) {
			return append(append([]Frame{}, frames[i:]...), frames[:i]...)
		}
	}
	return frames
}

// standard says whether fn is of Go's standard library or runtime: its
// package path has no dot in its first element, and is not main.
func standard(fn string) bool {
	first, _, _ := strings.Cut(fn, "/")
	if !strings.Contains(fn, "/") {
		first, _, _ = strings.Cut(fn, ".")
	}
	return first != "main" && !strings.Contains(first, ".")
}

// goid is the calling goroutine's id, from its stack's first line.
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
