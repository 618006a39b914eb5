package main

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"sync"
	"syscall"
	"time"

	"github.com/lesismal/nbio"
	"github.com/lesismal/nbio/logging"
)

// nbioEngine serves on lesismal/nbio in its event-loop mode: its pollers
// read and call OnData on their own goroutines (AsyncReadInPoller off, the
// default), so a handler runs on the loop, as gnet's and evio's do.
//
// nbio deals a connection to poller fd % pollers (v1.6.8 engine.go
// AddConn, and its acceptor, poller_epoll.go acceptorLoop), from the
// goroutine that accepts it: OnOpen runs there, not on the loop, so the
// kit labels each loop by its poller's index. nbio offers no way to run a
// function on a given poller (Conn.Execute runs on a goroutine pool), so
// the continuations ride on each loop's heart: a job is queued in the
// loop's mailbox and a byte written to the heart's other end wakes the
// poller, which runs the queue in OnData. OnClose is called from a timer
// goroutine after the descriptor is closed (engine.go OnClose: g.Async),
// so a close is handed to the loop the same way.
//
// As with gnet, the kit accepts the connections itself and hands them to
// nbio (Engine.AddConn): nbio's acceptor logs "Accept failed ... exit" on
// "too many open files" and stops accepting for good. It deals them
// round-robin, as gnet does, by holding the lowest free descriptors until
// the one nbio's duplicate will take is the next loop's: nbio's own
// dealing by descriptor number is round-robin only while no descriptor is
// opened or closed between two accepts.
type nbioEngine struct {
	s     *server
	g     *nbio.Engine
	ln    net.Listener
	boxes []mailbox
	next  int // the loop after the last client dealt
	// dealt counts the clients each loop was dealt (accept's goroutine only).
	dealt []int64
}

// mailbox is one loop's queue of jobs to run on it.
type mailbox struct {
	mu    sync.Mutex
	jobs  []func()
	woken bool // a wake is on its way: the loop will run the queue
}

func (e *nbioEngine) serve(ctx context.Context, s *server, addr string, ready func(net.Addr)) error {
	e.s = s
	s.hearts.always = true // the hearts carry the continuations
	e.boxes = make([]mailbox, s.opts.loops)
	e.dealt = make([]int64, s.opts.loops)
	for i := range s.opts.loops {
		s.loops.at(i)
	}
	lc := net.ListenConfig{KeepAlive: -1}
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	e.ln = ln
	defer ln.Close()
	logging.SetLevel(logging.LevelNone)
	g := nbio.NewEngine(nbio.Config{
		Name:    "loopserver",
		NPoller: s.opts.loops,
		// Its poller goroutines locked to their threads, as Netty runs a
		// loop per thread (--lock-threads).
		LockPoller: s.opts.lockThreads,
		// No bound of nbio's on waiting output (past it nbio closes the
		// connection): the engine stops answering past maxPendingOutput
		// until the client reads, as it does on gnet.
	})
	e.g = g
	g.OnOpen(e.open)
	g.OnData(e.data)
	g.OnClose(func(nc *nbio.Conn, _ error) {
		c, _ := nc.Session().(*conn)
		if c == nil {
			return
		}
		e.onLoop(c, func() { e.closed(c) })
	})
	if err := g.Start(); err != nil {
		return err
	}
	acceptErr := make(chan error, 1)
	go func() { acceptErr <- e.accept() }()
	ready(ln.Addr())
	select {
	case <-ctx.Done():
	case err = <-acceptErr:
	}
	s.stop()
	ln.Close()
	stopped := make(chan struct{})
	go func() { g.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(500 * time.Millisecond): // a poller held by a long block
	}
	return err
}

// accept takes the connections and hands them to nbio until the listener
// closes (acceptLoop); a heart is dealt to the first loop that has none.
func (e *nbioEngine) accept() error {
	full := func() bool { return e.s.open.Load() >= e.s.maxConns }
	return e.s.acceptLoop(e.ln, full, func(c net.Conn) {
		// Dealt round-robin, as gnet deals them (and nbio itself, by
		// descriptor number, when nothing else opens or closes one in
		// between); a heart to the first loop that has none.
		heart := e.s.isHeart(c.RemoteAddr())
		want := e.nextLoop()
		if heart {
			want = e.heartless()
		}
		pads := e.padFor(c, want)
		nc, err := e.g.AddConn(c) // closes c, keeping a duplicate of its descriptor
		for _, fd := range pads {
			syscall.Close(fd)
		}
		if err != nil && !e.s.stopping.Load() {
			fmt.Fprintf(e.s.log, "loopserver: nbio could not take a connection: %v\n", err)
		}
		if err == nil && !heart {
			// Where it landed, which is want unless another descriptor
			// of the process was opened or closed between the padding
			// and nbio's duplicate: the next deals make up for it.
			got := nc.Hash() % e.s.opts.loops
			e.dealt[got]++
			e.next = (got + 1) % e.s.opts.loops
		}
	})
}

// nextLoop is the loop the next client is dealt to: round-robin from the
// last one dealt, skipping to the loop dealt the fewest, so that a
// connection that landed elsewhere than it was dealt (see accept) is made
// up for by the next ones, and any 4n connections after it still land
// evenly once it is.
func (e *nbioEngine) nextLoop() int {
	best := e.next
	for i := range e.s.opts.loops {
		l := (e.next + i) % e.s.opts.loops
		if e.dealt[l] < e.dealt[best] {
			best = l
		}
	}
	return best
}

// heartless is the first loop without a heart.
func (e *nbioEngine) heartless() int {
	for i := range e.s.opts.loops {
		if e.s.loops.at(i).heart.Load() == nil {
			return i
		}
	}
	return 0
}

// padFor holds the lowest free descriptors until the lowest free one is
// dealt to loop want (nbio duplicates c's descriptor to the lowest free
// one and deals it to poller fd % pollers); the caller closes them once
// nbio has taken c.
func (e *nbioEngine) padFor(c net.Conn, want int) []int {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	var pads []int
	_ = rc.Control(func(fd uintptr) {
		for range e.s.opts.loops {
			next, err := syscall.Dup(int(fd))
			if err != nil {
				return
			}
			if next%e.s.opts.loops == want {
				syscall.Close(next)
				return
			}
			pads = append(pads, next)
		}
	})
	return pads
}

// open registers a connection nbio took, on the loop it was dealt to; it
// runs on the accepting goroutine.
func (e *nbioEngine) open(nc *nbio.Conn) {
	l := e.s.loops.at(nc.Hash() % e.s.opts.loops)
	c := e.s.openedOn(nc.RemoteAddr(), nc, l)
	if c == nil {
		_ = nc.Close() // over the cap
		return
	}
	nc.SetSession(c)
	c.published.Store(true)
}

// data takes new bytes on the loop: a heart's wake, or requests.
func (e *nbioEngine) data(nc *nbio.Conn, in []byte) {
	c, _ := nc.Session().(*conn)
	if c == nil || !c.published.Load() {
		_ = nc.Close()
		return
	}
	e.s.loops.bind(c.loop)
	if c.heart {
		e.runQueue(c.loop)
		return
	}
	if c.closed {
		return
	}
	if c.pending || nbioUnsent(nc) > maxPendingOutput {
		// Later requests wait: behind the continuation, or until the
		// client reads what it was sent. nbio cannot stop reading, so a
		// client that goes on sending meanwhile is closed past a bound.
		if len(c.buf)+len(in) > maxPendingInput {
			_ = nc.Close()
			return
		}
		c.buf = append(c.buf, in...) // nbio reuses its read buffer
		c.lastActive.Store(time.Now().UnixNano())
		if !c.pending {
			e.later(c, nc)
		}
		return
	}
	c.buf = append(c.buf, in...)
	e.pump(c, nc, c.loop.scratch[:0])
}

// later looks at c's buffered requests again in a millisecond, on its
// loop, for as long as its answers are not being read: nbio calls OnData
// only when bytes arrive, and a client waiting for its answers sends none.
func (e *nbioEngine) later(c *conn, nc *nbio.Conn) {
	if c.retry {
		return
	}
	c.retry = true
	time.AfterFunc(time.Millisecond, func() {
		e.onLoop(c, func() {
			c.retry = false
			switch {
			case c.closed || c.pending:
			case nbioUnsent(nc) > maxPendingOutput:
				e.later(c, nc)
			default:
				e.pump(c, nc, c.loop.scratch[:0])
			}
		})
	})
}

// pump answers what is buffered on c after out, up to maxPendingOutput
// bytes of answers, and writes them; what is left is looked at again once
// an answer under way is done, or in a millisecond.
func (e *nbioEngine) pump(c *conn, nc *nbio.Conn, out []byte) {
	n, out, closeNow := e.s.drain(c, c.buf, out, maxPendingOutput)
	if c.pending {
		e.dupFor(c, nc)
	}
	c.buf = c.buf[:copy(c.buf, c.buf[n:])]
	c.note(c.buf)
	if len(out) > 0 {
		if _, err := nc.Write(out); err != nil {
			closeNow = true
		}
	}
	c.loop.scratch = out[:0]
	if closeNow {
		_ = nc.Close()
		return
	}
	if !c.pending && len(c.buf) > 0 && (len(out) >= maxPendingOutput || nbioUnsent(nc) > maxPendingOutput) {
		e.later(c, nc)
	}
}

// nbioUnsent is how many bytes nbio holds unsent for nc: its connection's
// unexported left (v1.6.8 conn_unix.go; TestNbioUnsentField fails if it
// moves). It is read on the connection's loop, the goroutine that writes
// and flushes it.
func nbioUnsent(nc *nbio.Conn) int {
	if nbioLeft == nil {
		return 0
	}
	return int(reflect.ValueOf(nc).Elem().FieldByIndex(nbioLeft).Int())
}

// nbioLeft is where nbio's connection keeps its unsent bytes.
var nbioLeft = func() []int {
	f, ok := reflect.TypeFor[nbio.Conn]().FieldByName("left")
	if !ok || f.Type.Kind() != reflect.Int {
		return nil
	}
	return f.Index
}()

// closed is nbio's close of c, on c's loop.
func (e *nbioEngine) closed(c *conn) {
	e.s.closedConn(c)
	if c.pending && c.dupFD > 0 {
		fd := c.dupFD
		c.dupFD = 0
		e.s.orphaned(c, fd) // nbio closed on the end of input; the answer is still owed
	}
}

// dupFor keeps a duplicate of c's descriptor while it is owed an answer:
// nbio closes the descriptor on the end of input, and a client that
// half-closed after asking still waits for the answer.
func (e *nbioEngine) dupFor(c *conn, nc *nbio.Conn) {
	if c.dupFD > 0 {
		return
	}
	if fd, err := syscall.Dup(nc.Hash()); err == nil {
		c.dupFD = fd
	}
}

func (e *nbioEngine) dropDup(c *conn) {
	if c.dupFD > 0 {
		syscall.Close(c.dupFD)
		c.dupFD = 0
	}
}

// onLoop runs f on c's loop, from its mailbox.
func (e *nbioEngine) onLoop(c *conn, f func()) {
	b := &e.boxes[c.loop.index]
	b.mu.Lock()
	b.jobs = append(b.jobs, f)
	wake := !b.woken
	b.woken = true
	b.mu.Unlock()
	if wake {
		e.s.awake(func() { e.s.wake(c.loop.index) })
	}
}

// runQueue runs what was queued for l, on l.
func (e *nbioEngine) runQueue(l *loop) {
	b := &e.boxes[l.index]
	b.mu.Lock()
	jobs := b.jobs
	b.jobs, b.woken = nil, false
	b.mu.Unlock()
	for _, j := range jobs {
		j()
	}
}

// resume runs the continuation on the loop that owns c.
func (e *nbioEngine) resume(c *conn) {
	nc, _ := c.handle.(*nbio.Conn)
	if nc == nil {
		return
	}
	c.ready.Store(true)
	if e.s.answerOrphan(c) { // closed meanwhile: answered here
		return
	}
	e.onLoop(c, func() {
		if c.closed || !c.pending {
			return
		}
		out, closeNow := e.s.finish(c, c.loop.scratch[:0])
		if closeNow {
			e.write(c, nc, out)
			_ = nc.Close()
			return
		}
		if len(c.buf) > 0 {
			e.pump(c, nc, out)
			if !c.pending {
				e.dropDup(c)
			}
			return
		}
		e.write(c, nc, out)
	})
}

// write sends a continuation's answer; when nbio has closed the
// connection already (its close is on its way to the loop), through the
// duplicate descriptor kept for it.
func (e *nbioEngine) write(c *conn, nc *nbio.Conn, out []byte) {
	if _, err := nc.Write(out); err != nil && c.dupFD > 0 {
		writeFD(c.dupFD, out)
	}
	c.loop.scratch = out[:0]
	if !c.pending {
		e.dropDup(c)
	}
}

// beat runs the heartbeat on heart's loop.
func (e *nbioEngine) beat(heart *conn, _ bool) {
	e.onLoop(heart, func() { e.s.beatNow(heart) })
}

// expire closes c on its loop (the timeout sweeper asked).
func (e *nbioEngine) expire(c *conn) {
	nc, _ := c.handle.(*nbio.Conn)
	if nc == nil {
		return
	}
	e.onLoop(c, func() {
		if c.closed {
			return
		}
		if c.owed.Load() { // an answer got under way meanwhile: it is not idle
			c.expired.Store(false)
			return
		}
		_ = nc.Close()
	})
}
