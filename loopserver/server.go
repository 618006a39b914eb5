package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bystander-kit/bystander/internal/block"
	"github.com/bystander-kit/bystander/internal/h1"
	"github.com/bystander-kit/bystander/internal/lag"
	"github.com/bystander-kit/bystander/internal/offload"
	"github.com/bystander-kit/bystander/internal/pace"
	"github.com/bystander-kit/bystander/internal/proc"
	"github.com/bystander-kit/bystander/internal/protocol"
)

// maxPendingInput bounds what a client may pipeline behind a request whose
// answer is still outstanding, or while it is not reading its answers;
// past it the connection is closed.
const maxPendingInput = 1 << 20

// maxPendingOutput bounds the answers a connection may have waiting to be
// sent: past it the server answers nothing more on that connection until
// the client has read some (gnet would otherwise buffer every answer to a
// client that pipelines and never reads).
const maxPendingOutput = 256 << 10

// loop is one event loop: its label, the OS thread it is locked to, and what
// it did. Counters are atomics because the admin listener and the lag
// monitor read them from other goroutines.
type loop struct {
	index int
	gid   uint64 // the goroutine that runs the loop

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
	mu    sync.Mutex
	lock  bool
	loops atomic.Pointer[[]*loop]
	lags  atomic.Pointer[[]*lag.Loop]
}

func newLoopSet(lock bool) *loopSet {
	ls := &loopSet{lock: lock}
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
		if l.gid == id {
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
	l := &loop{index: len(old), gid: goid(), scratch: make([]byte, 0, 4096), lag: lag.NewLoop(len(old))}
	next := append(append(make([]*loop, 0, len(old)+1), old...), l)
	lags := make([]*lag.Loop, len(next))
	for i, n := range next {
		lags[i] = n.lag
	}
	ls.lags.Store(&lags)
	ls.loops.Store(&next)
	return l
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

// conn is one client connection's state. All fields but ready and blockedNs
// are touched only on the owning loop.
type conn struct {
	loop    *loop
	handle  any // the engine's connection
	closed  bool
	pending bool // a continuation is outstanding: later requests wait buffered
	retry   bool // gnet: a later look at the buffered requests is armed
	heart   bool // the server's own connection carrying its loop's heartbeat
	buf     []byte

	// The outstanding request, for its continuation.
	route        protocol.Route
	handlerStart int64
	keepAlive    bool
	minor        int
	head         bool
	ready        atomic.Bool  // the continuation may run (evio)
	blockedNs    atomic.Int64 // measured by the offload worker

	// What the timeout sweeper reads from its own goroutine.
	lastActive   atomic.Int64 // unix ns of the last bytes read or answer written
	partialSince atomic.Int64 // unix ns the incomplete request buffered now began; 0: none
	headerDone   atomic.Bool  // that request's line and headers are all in
	owed         atomic.Bool  // an answer is under way: no timeout applies
	expired      atomic.Bool  // the sweeper asked the loop to close it

	// A connection the engine closed while it was owed an answer (the
	// client half-closed: HTTP/1.1 lets it wait for the answer) keeps the
	// socket through a duplicate descriptor until the answer is written:
	// dupFD while pending (evio, whose close comes before its callback),
	// orphan (descriptor + 1) once the engine has let go.
	dupFD  int
	orphan atomic.Int64
}

// setPending marks whether a continuation is outstanding.
func (c *conn) setPending(p bool) {
	c.pending = p
	c.owed.Store(p)
}

// note records, on the loop, that c was active now and what is left
// buffered after its whole requests: an incomplete request times out
// from its first byte.
func (c *conn) note(rest []byte) {
	now := time.Now().UnixNano()
	c.lastActive.Store(now)
	if len(rest) == 0 {
		c.partialSince.Store(0)
		return
	}
	if c.partialSince.Load() == 0 {
		c.partialSince.Store(now)
	}
	c.headerDone.Store(bytes.Contains(rest, []byte("\r\n\r\n")) || bytes.Contains(rest, []byte("\n\n")))
}

// resumer gets back onto the loop that owns c, each engine its own way:
// resume runs the continuation of c's outstanding request there, expire
// closes c there.
type resumer interface {
	resume(c *conn)
	expire(c *conn)
	// beat runs the heartbeat of heart's loop on that loop; again: the
	// beat is still waiting from an earlier call.
	beat(heart *conn, again bool)
}

// server is what both engines share: routing, the endpoints, the counters.
type server struct {
	opts    options
	loops   *loopSet
	pool    *offload.Pool
	eng     resumer
	mon     *lag.Monitor
	started time.Time
	log     io.Writer

	// The connection cap: below the descriptor limit, so that an accept
	// never fails for want of one (gnet stops its whole engine when it
	// does, evio its loop).
	maxConns, nofile int64
	open, refused    atomic.Int64
	lastRefusalLog   atomic.Int64 // unix ns

	hearts   hearts
	stopping atomic.Bool
	wakeMu   sync.RWMutex // wakes hold it shared; stop holds it to set stopping

	conns                    sync.Map     // *conn -> struct{}: every open connection, for the sweeper
	idleTO, headerTO, bodyTO atomic.Int64 // connections closed by each timeout
}

func newServer(o options) *server {
	s := &server{
		opts:    o,
		loops:   newLoopSet(o.lockThreads),
		pool:    offload.New(o.OffloadWorkers, o.OffloadQueue),
		started: time.Now(),
		log:     o.log,
	}
	s.nofile, s.maxConns = connCap()
	s.maxConns = max(s.maxConns-int64(2*o.loops), 1) // the hearts' two ends
	s.hearts.ports = map[int]chan *loop{}
	s.mon = lag.New(lag.Options{Interval: o.lagInterval, Warn: o.blockWarn, Log: o.log, Name: "loopserver", Repeat: o.engine == "evio"},
		s.loops.lagLoops, s.poke)
	return s
}

// connCap is the most client connections the server holds: the
// descriptor limit (Go raises the soft limit to the hard one at start)
// less a reserve for the listeners, the pollers, the admin listener and
// its connections, and the logs.
func connCap() (nofile, maxConns int64) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 || rl.Cur > 1<<40 {
		return 0, 1 << 40
	}
	nofile = int64(rl.Cur)
	return nofile, max(nofile-max(64, nofile/10), 1)
}

// opened registers a new connection on the calling loop, or returns nil
// when the server holds as many as its cap: the engine then closes it at
// once, and the refusals are logged once a second.
func (s *server) opened(remote net.Addr, handle any) *conn {
	if c := s.openedHeart(remote, handle); c != nil {
		return c
	}
	if s.open.Add(1) > s.maxConns {
		s.open.Add(-1)
		s.refuse()
		return nil
	}
	l := s.loops.register()
	l.connsOpen.Add(1)
	l.connsTotal.Add(1)
	c := &conn{loop: l, handle: handle}
	c.lastActive.Store(time.Now().UnixNano())
	s.conns.Store(c, struct{}{})
	return c
}

// awake runs wake, a wake of an engine's loop, unless the server is
// stopping: a stopped engine has closed its pollers' descriptors, and a
// wake (evio's writes 8 bytes to its eventfd) would write into whatever
// opened next under the same number, another connection's socket say.
func (s *server) awake(wake func()) {
	s.wakeMu.RLock()
	defer s.wakeMu.RUnlock()
	if !s.stopping.Load() {
		wake()
	}
}

// stop marks the server stopping; once it returns no wake is under way
// and none will start. It comes before the engine is told to stop.
func (s *server) stop() {
	s.wakeMu.Lock()
	s.stopping.Store(true)
	s.wakeMu.Unlock()
}

// refuse counts a connection turned away at the cap, and says so once a
// second.
func (s *server) refuse() {
	n := s.refused.Add(1)
	now := time.Now().UnixNano()
	if last := s.lastRefusalLog.Load(); now-last > int64(time.Second) && s.lastRefusalLog.CompareAndSwap(last, now) {
		fmt.Fprintf(s.log, "loopserver: %d connections open, the cap under the descriptor limit of %d: closing new ones at once (%d so far)\n",
			s.maxConns, s.nofile, n)
	}
}

// closedConn marks c closed so a late continuation writes nothing.
func (s *server) closedConn(c *conn) {
	if c == nil || c.closed {
		return
	}
	if c.heart {
		s.closedHeart(c)
		return
	}
	c.closed = true
	c.loop.connsOpen.Add(-1)
	s.open.Add(-1)
	s.conns.Delete(c)
}

// sweep closes, every tick, the connections past a timeout: idle between
// requests, a request's line and headers, or its promised body. A
// connection owed an answer is left alone. It runs until stop closes.
func (s *server) sweep(stop <-chan struct{}) {
	o := s.opts
	var shortest time.Duration
	for _, d := range []time.Duration{o.IdleTimeout, o.HeaderTimeout, o.BodyTimeout} {
		if d > 0 && (shortest == 0 || d < shortest) {
			shortest = d
		}
	}
	if shortest == 0 {
		return
	}
	pace.Every(stop, min(max(shortest/4, 10*time.Millisecond), time.Second), func(now time.Time) { s.expireAt(now.UnixNano()) })
}

// expireAt asks the loops to close the connections past a timeout at now.
func (s *server) expireAt(now int64) {
	o := s.opts
	past := func(d time.Duration, since int64) bool { return d > 0 && now-since > int64(d) }
	s.conns.Range(func(k, _ any) bool {
		c := k.(*conn)
		if c.owed.Load() || c.expired.Load() {
			return true
		}
		var count *atomic.Int64
		if since := c.partialSince.Load(); since != 0 {
			if c.headerDone.Load() && past(o.BodyTimeout, since) {
				count = &s.bodyTO
			} else if !c.headerDone.Load() && past(o.HeaderTimeout, since) {
				count = &s.headerTO
			}
		} else if past(o.IdleTimeout, c.lastActive.Load()) {
			count = &s.idleTO
		}
		if count != nil {
			count.Add(1)
			c.expired.Store(true)
			s.eng.expire(c)
		}
		return true
	})
}

// drain answers the whole requests at the head of in, in order, appending
// the answers to out. It stops at an incomplete request, at a request whose
// answer is deferred to a continuation, at one after which the connection
// must close, or once out holds maxOut bytes. It returns the bytes consumed.
func (s *server) drain(c *conn, in, out []byte, maxOut int) (n int, _ []byte, closeNow bool) {
	var req h1.Request
	for !c.pending && n < len(in) && len(out) < maxOut {
		used, err := h1.Parse(in[n:], &req)
		if err == h1.ErrIncomplete {
			break
		}
		if err != nil {
			return len(in), h1.AppendError(out, err.(*h1.Error)), true
		}
		n += used
		out, closeNow = s.handle(c, &req, out)
		if closeNow {
			return n, out, true
		}
	}
	return n, out, false
}

// handle answers one request, or defers it to a continuation.
func (s *server) handle(c *conn, req *h1.Request, out []byte) ([]byte, bool) {
	start := time.Now().UnixNano()
	route := protocol.RouteOf(req.Path)
	l := c.loop
	l.requests.Add(1)
	l.enter(route, start)
	defer l.leave(start)

	switch {
	case !req.IsGet() && !req.IsHead():
		return s.reply(out, c, req, 405, protocol.ReasonMethod, start), !req.KeepAlive
	case route == protocol.Unknown:
		return s.reply(out, c, req, 404, protocol.ReasonNotFound, start), !req.KeepAlive
	}
	p, err := protocol.ParseQuery(req.Query, s.opts.MaxBlock)
	if err != nil {
		return s.reply(out, c, req, 400, err.Error()+"\n", start), !req.KeepAlive
	}
	switch route {
	case protocol.Fast:
		return s.reply(out, c, req, 200, protocol.BodyFast, start), !req.KeepAlive
	case protocol.Slow:
		d := s.opts.Block
		if p.HasBlock {
			d = p.Block
		}
		blocked := block.For(s.opts.BlockMode, d)
		out = h1.AppendStatusLine(out, 200)
		out = s.timing(out, c, start)
		out = h1.AppendHeaderInt(out, protocol.HeaderBlockedNs, int64(blocked))
		return h1.AppendBody(out, protocol.BodySlow, req, req.KeepAlive), !req.KeepAlive
	}

	// /async and /offload answer later, from a continuation on this loop.
	c.setPending(true)
	c.ready.Store(false)
	c.blockedNs.Store(0)
	c.route, c.handlerStart = route, start
	c.keepAlive, c.minor, c.head = req.KeepAlive, req.Minor, req.IsHead()
	if route == protocol.Async {
		d := s.opts.Delay
		if p.HasDelay {
			d = p.Delay
		}
		time.AfterFunc(d, func() { s.eng.resume(c) })
		return out, false
	}
	d := s.opts.Block
	if p.HasBlock {
		d = p.Block
	}
	mode := s.opts.BlockMode
	if err := s.pool.Submit(func() {
		c.blockedNs.Store(int64(block.For(mode, d)))
		s.eng.resume(c)
	}); err != nil {
		c.setPending(false)
		return s.reply(out, c, req, 503, protocol.ReasonQueueFull, start), !req.KeepAlive
	}
	return out, false
}

// orphaned hands the duplicate descriptor fd of a connection the engine
// has closed while an answer was owed to whoever writes that answer: the
// continuation if it has not run yet, or the caller now if it is due.
func (s *server) orphaned(c *conn, fd int) {
	c.orphan.Store(int64(fd) + 1)
	if c.ready.Load() {
		s.answerOrphan(c)
	}
}

// answerOrphan writes the owed answer of a closed connection to its
// duplicate descriptor, if nobody has, and lets the socket go. It runs
// where the continuation does, or on the loop that closed the connection.
func (s *server) answerOrphan(c *conn) bool {
	fd := int(c.orphan.Swap(0)) - 1
	if fd < 0 {
		return false
	}
	defer syscall.Close(fd)
	c.keepAlive = false
	out, _ := s.finish(c, nil)
	deadline := time.Now().Add(time.Second)
	for len(out) > 0 && time.Now().Before(deadline) {
		n, err := syscall.Write(fd, out)
		if err == syscall.EAGAIN || err == syscall.EINTR {
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil || n <= 0 {
			break
		}
		out = out[n:]
	}
	return true
}

// finish writes the answer of c's outstanding request. It runs on the loop
// that took the continuation, and says which loop that was.
func (s *server) finish(c *conn, out []byte) ([]byte, bool) {
	now := time.Now().UnixNano()
	ran := -1
	if l := s.loops.lookup(); l != nil {
		ran = l.index
	}
	c.setPending(false)
	c.lastActive.Store(now)
	req := h1.Request{Minor: c.minor}
	if c.head {
		req.Method = []byte("HEAD")
	}
	out = h1.AppendStatusLine(out, 200)
	out = s.timing(out, c, c.handlerStart)
	out = h1.AppendHeaderInt(out, protocol.HeaderContinuationStart, now)
	out = h1.AppendHeaderInt(out, protocol.HeaderContinuationLoop, int64(ran))
	if c.route == protocol.Offload {
		out = h1.AppendHeaderInt(out, protocol.HeaderBlockedNs, c.blockedNs.Load())
	}
	return h1.AppendBody(out, c.route.Body(), &req, c.keepAlive), !c.keepAlive
}

func (s *server) timing(out []byte, c *conn, start int64) []byte {
	out = h1.AppendHeaderInt(out, protocol.HeaderLoop, int64(c.loop.index))
	return h1.AppendHeaderInt(out, protocol.HeaderHandlerStart, start)
}

func (s *server) reply(out []byte, c *conn, req *h1.Request, status int, body string, start int64) []byte {
	out = h1.AppendStatusLine(out, status)
	out = s.timing(out, c, start)
	return h1.AppendBody(out, body, req, req.KeepAlive)
}

// Stats is the admin /stats document of a loop server.
type Stats struct {
	Server         string        `json:"server"`
	Engine         string        `json:"engine"`
	LoopsWanted    int           `json:"loops_configured"`
	BlockNs        int64         `json:"block_ns"`
	BlockMode      string        `json:"block_mode"`
	BlockWarnNs    int64         `json:"block_warn_ns"`
	LagIntervalNs  int64         `json:"lag_interval_ns"`
	Detection      lag.Detection `json:"block_detection"`
	OffloadWorkers int           `json:"offload_workers"`
	OffloadQueued  int           `json:"offload_queued"`
	MaxConns       int64         `json:"max_connections"`
	Refused        int64         `json:"connections_refused"`
	// BeatsRepeated counts heartbeat wakes repeated because the beat was
	// still waiting at its loop's next turn (evio, which loses wakes).
	BeatsRepeated int64       `json:"beats_repeated"`
	TimedOut      TimedOut    `json:"timed_out"`
	UptimeNs      int64       `json:"uptime_ns"`
	Process       proc.Usage  `json:"process"`
	Loops         []LoopStats `json:"loops"`
}

// TimedOut counts the connections closed by each timeout.
type TimedOut struct {
	Idle   int64 `json:"idle"`
	Header int64 `json:"header"`
	Body   int64 `json:"body"`
}

// LoopStats is one loop's line in Stats.
type LoopStats struct {
	Loop             int   `json:"loop"`
	ConnectionsOpen  int64 `json:"connections_open"`
	ConnectionsTotal int64 `json:"connections_total"`
	Requests         int64 `json:"requests"`
	BusyNs           int64 `json:"busy_ns"`
	LongestBlockNs   int64 `json:"longest_block_ns"`
	// The loop's own lag (heartbeat) and the blocks the detector saw.
	lag.Stats
}

func (s *server) stats() Stats {
	now := time.Now().UnixNano()
	st := Stats{
		Server:         "loopserver",
		Engine:         s.opts.engine,
		LoopsWanted:    s.opts.loops,
		BlockNs:        int64(s.opts.Block),
		BlockMode:      s.opts.BlockMode.String(),
		BlockWarnNs:    int64(s.opts.blockWarn),
		LagIntervalNs:  int64(s.opts.lagInterval),
		Detection:      s.mon.Detection(),
		OffloadWorkers: s.pool.Workers(),
		OffloadQueued:  s.pool.Queued(),
		MaxConns:       s.maxConns,
		Refused:        s.refused.Load(),
		BeatsRepeated:  s.mon.Repeated(),
		TimedOut:       TimedOut{Idle: s.idleTO.Load(), Header: s.headerTO.Load(), Body: s.bodyTO.Load()},
		UptimeNs:       int64(time.Since(s.started)),
		Process:        proc.Self(),
		Loops:          []LoopStats{},
	}
	for _, l := range s.loops.all() {
		st.Loops = append(st.Loops, LoopStats{
			Loop:             l.index,
			ConnectionsOpen:  l.connsOpen.Load(),
			ConnectionsTotal: l.connsTotal.Load(),
			Requests:         l.requests.Load(),
			BusyNs:           l.busyNs.Load(),
			LongestBlockNs:   l.longestNs.Load(),
			Stats:            l.lag.Stats(now),
		})
	}
	return st
}
