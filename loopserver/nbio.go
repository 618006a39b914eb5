package main

import (
	"context"
	"net"
	"sync/atomic"
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
// kit labels each loop by its poller's index. What it works around: no way
// onto a loop but the loop's heart (nbio_mailbox.go), its own acceptor and
// dealing (nbio_deal.go), and a closed descriptor left in its epoll set
// (nbio_epoll.go).
type nbioEngine struct {
	s     *server
	g     *nbio.Engine
	ln    net.Listener
	boxes []mailbox
	next  int // the loop after the last client dealt
	// dealt counts the clients each loop was dealt (accept's goroutine only).
	dealt []int64
}

func (e *nbioEngine) traits() traits {
	return traits{keepsClosedFDs: true, jobsRideHearts: true}
}

func (e *nbioEngine) serve(ctx context.Context, s *server, addr string, ready func(net.Addr)) error {
	e.s = s
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
	g.OnClose(e.closed)
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

// open registers a connection nbio took, on the loop it was dealt to; it
// runs on the accepting goroutine.
func (e *nbioEngine) open(nc *nbio.Conn) {
	l := &nbioLink{e: e, nc: nc, loop: nc.Hash() % e.s.opts.loops}
	if l.c = e.s.openedOn(nc.RemoteAddr(), l, e.s.loops.at(l.loop)); l.c == nil {
		_ = nc.Close() // over the cap
		return
	}
	nc.SetSession(l)
	l.published.Store(true)
}

// data takes new bytes on the loop: a heart's wake, or requests.
func (e *nbioEngine) data(nc *nbio.Conn, in []byte) {
	l, _ := nc.Session().(*nbioLink)
	if l == nil || !l.published.Load() {
		_ = nc.Close()
		return
	}
	c := l.c
	e.s.loops.bind(c.loop)
	if c.heart {
		e.runQueue(c.loop)
		return
	}
	l.take(in)
	closeNow := e.s.traffic(c)
	l.keep() // nbio reuses its read buffer
	if closeNow {
		_ = nc.Close()
	}
}

// closed is nbio's close, called from a timer goroutine after the
// descriptor is closed (engine.go OnClose: g.Async): it is handed to the
// connection's loop.
func (e *nbioEngine) closed(nc *nbio.Conn, _ error) {
	if l, _ := nc.Session().(*nbioLink); l != nil {
		e.queue(l.loop, func() { e.s.closedConn(l.c) })
	}
}

// nbioLink is a connection on nbio: nbio hands each read's bytes to data
// (the inbox) and keeps unsent output itself; a job reaches a loop through
// its mailbox and its heart.
type nbioLink struct {
	plain // but hold and release (nbio_epoll.go)
	inbox
	e    *nbioEngine
	nc   *nbio.Conn
	loop int   // its loop's index, known before it opens (run reads it on any goroutine)
	c    *conn // set once it opened: read on its loop
	// published: made on the goroutine that accepted it, then handed to
	// its loop through the kernel; the loop's first look at it reads this,
	// so that what the accepting goroutine wrote is seen (the race
	// detector knows no other edge between the two).
	published atomic.Bool
}

// run queues f in the mailbox of the connection's loop and wakes the loop
// through its heart, unless a wake is on its way already.
func (l *nbioLink) run(f func() bool) {
	l.e.queue(l.loop, func() {
		if f() {
			_ = l.nc.Close()
		}
	})
}

func (l *nbioLink) write(out []byte) error {
	_, err := l.nc.Write(out)
	return err
}

func (l *nbioLink) unsent() int { return nbioUnsent(l.nc) }

func (l *nbioLink) fd() int { return l.nc.Hash() }
