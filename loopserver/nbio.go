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
		e.queue(c.loop.index, func() { e.s.closedConn(c) }) // on its loop
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
	c.in.take(in)
	closeNow := e.s.traffic(c)
	c.in.keep() // nbio reuses its read buffer
	if closeNow {
		_ = nc.Close()
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

// nbioEpfd is the epoll set of nc's poller (its unexported p.epfd, v1.6.8
// poller_epoll.go; TestNbioEpollField fails if it moves), or -1.
func nbioEpfd(nc *nbio.Conn) int {
	p, ok := fieldOf(reflect.ValueOf(nc), "p", reflect.Pointer)
	if !ok {
		return -1
	}
	f, ok := fieldOf(p, "epfd", reflect.Int)
	if !ok {
		return -1
	}
	return int(f.Int())
}

// hold takes c's descriptor out of its poller's epoll set while the core
// keeps a duplicate of it (keeper): nbio closes a descriptor without
// deleting it from the set, and the entry lives as long as the socket.
func (e *nbioEngine) hold(c *conn) {
	nc := c.handle.(*nbio.Conn)
	if ep := nbioEpfd(nc); ep >= 0 {
		_ = syscall.EpollCtl(ep, syscall.EPOLL_CTL_DEL, nc.Hash(), nil)
	}
}

// release puts c's descriptor back in the set with the events nbio asks
// for in its level-triggered mode (the kit's: Config.EpollMod unset),
// writes too if output waits, unless nbio has closed it meanwhile (on this
// loop, as every close of it is).
func (e *nbioEngine) release(c *conn) {
	nc := c.handle.(*nbio.Conn)
	ep := nbioEpfd(nc)
	if closed, _ := nc.IsClosed(); closed || ep < 0 {
		return
	}
	events := uint32(syscall.EPOLLERR | syscall.EPOLLHUP | syscall.EPOLLRDHUP | syscall.EPOLLPRI | syscall.EPOLLIN)
	if nbioUnsent(nc) > 0 {
		events |= syscall.EPOLLOUT
	}
	fd := nc.Hash()
	_ = syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Fd: int32(fd), Events: events})
}

// The transport: nbio hands each read's bytes to data and keeps unsent
// output itself; a job reaches a loop through its mailbox and its heart.

// run queues f in the mailbox of c's loop and wakes the loop through its
// heart, unless a wake is on its way already.
func (e *nbioEngine) run(c *conn, f func() bool) {
	nc, _ := c.handle.(*nbio.Conn)
	e.queue(c.loop.index, func() {
		if f() && nc != nil {
			_ = nc.Close()
		}
	})
}

func (e *nbioEngine) queue(index int, job func()) {
	b := &e.boxes[index]
	b.mu.Lock()
	b.jobs = append(b.jobs, job)
	wake := !b.woken
	b.woken = true
	b.mu.Unlock()
	if wake && !e.s.wake(index) {
		// No heart yet (or the server stopped): the next job wakes it.
		b.mu.Lock()
		b.woken = false
		b.mu.Unlock()
	}
}

func (e *nbioEngine) input(c *conn) []byte { return c.in.bytes() }

func (e *nbioEngine) discard(c *conn, n int) { c.in.discard(n) }

func (e *nbioEngine) write(c *conn, out []byte) error {
	_, err := c.handle.(*nbio.Conn).Write(out)
	return err
}

func (e *nbioEngine) unsent(c *conn) int { return nbioUnsent(c.handle.(*nbio.Conn)) }

func (e *nbioEngine) fd(c *conn) int { return c.handle.(*nbio.Conn).Hash() }

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
