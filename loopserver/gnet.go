package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// gnetEngine serves on gnet: one main reactor accepts and deals connections
// round-robin to the loops, so any 4n consecutive connections land n per loop.
type gnetEngine struct {
	gnet.BuiltinEventEngine
	s     *server
	eng   gnet.Engine
	ready func(net.Addr)
}

func (e *gnetEngine) serve(ctx context.Context, s *server, addr string, ready func(net.Addr)) error {
	e.s, e.ready = s, ready
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			s.stopping.Store(true)
			sctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			_ = e.eng.Stop(sctx)
		case <-done:
		}
	}()
	return gnet.Run(e, "tcp://"+addr,
		gnet.WithNumEventLoop(s.opts.loops),
		gnet.WithLoadBalancing(gnet.RoundRobin),
		gnet.WithReusePort(false), // with it, the kernel hashes and the balancer is ignored
		gnet.WithReuseAddr(true),  // restart on the port while TIME_WAIT sockets exist
		gnet.WithLockOSThread(s.opts.lockThreads),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		gnet.WithLogger(gnetLog{s.log}),
	)
}

// gnetLog keeps gnet's warnings and errors in the server's log, one line
// each, and drops its chatter.
type gnetLog struct{ w io.Writer }

func (gnetLog) Debugf(string, ...any) {}
func (gnetLog) Infof(string, ...any)  {}
func (l gnetLog) Warnf(f string, a ...any) {
	fmt.Fprintf(l.w, "loopserver: gnet: "+f+"\n", a...)
}
func (l gnetLog) Errorf(f string, a ...any) {
	fmt.Fprintf(l.w, "loopserver: gnet: "+f+"\n", a...)
}
func (l gnetLog) Fatalf(f string, a ...any) {
	fmt.Fprintf(l.w, "loopserver: gnet: "+f+"\n", a...)
}

func (e *gnetEngine) OnBoot(eng gnet.Engine) gnet.Action {
	e.eng = eng
	fd, err := eng.Dup()
	if err != nil {
		fmt.Fprintf(e.s.log, "loopserver: cannot read the bound address: %v\n", err)
		return gnet.Shutdown
	}
	defer unix.Close(fd)
	sa, err := unix.Getsockname(fd)
	if err != nil {
		fmt.Fprintf(e.s.log, "loopserver: cannot read the bound address: %v\n", err)
		return gnet.Shutdown
	}
	e.ready(sockaddrToTCP(sa))
	return gnet.None
}

func (e *gnetEngine) OnOpen(gc gnet.Conn) ([]byte, gnet.Action) {
	c := e.s.opened(gc.RemoteAddr(), gc)
	if c == nil {
		return nil, gnet.Close // over the cap
	}
	gc.SetContext(c)
	return nil, gnet.None
}

func (e *gnetEngine) OnClose(gc gnet.Conn, _ error) gnet.Action {
	c, _ := gc.Context().(*conn)
	e.s.closedConn(c)
	if c != nil && c.pending {
		// gnet closes on the end of input, also a half-close; the socket
		// outlives its descriptor here through a duplicate until the owed
		// answer is written (gnet closes the descriptor after this returns).
		if fd, err := syscall.Dup(gc.Fd()); err == nil {
			e.s.orphaned(c, fd)
		}
	}
	return gnet.None
}

func (e *gnetEngine) OnTraffic(gc gnet.Conn) gnet.Action {
	c := gc.Context().(*conn)
	if c.heart {
		return gnet.Close // a heart never sends
	}
	if c.pending || gc.OutboundBuffered() > maxPendingOutput {
		// Later requests wait: behind the continuation, or until the
		// client reads what it was sent. gnet cannot stop reading, so a
		// client that goes on sending meanwhile is closed past a bound.
		if gc.InboundBuffered() > maxPendingInput {
			return gnet.Close
		}
		if !c.pending {
			e.later(c, gc)
		}
		return gnet.None
	}
	if e.pump(c, gc, c.loop.scratch[:0]) {
		return gnet.Close
	}
	return gnet.None
}

// pump answers what is buffered on gc after out, up to maxPendingOutput
// bytes of answers, writes them in one go and reports whether the
// connection must close. Requests left buffered are looked at again later.
func (e *gnetEngine) pump(c *conn, gc gnet.Conn, out []byte) bool {
	buf, _ := gc.Peek(-1)
	n, out, closeNow := e.s.drain(c, buf, out, maxPendingOutput)
	if n > 0 {
		_, _ = gc.Discard(n) // Discard(0) would discard everything
	}
	c.note(buf[n:])
	if len(out) > 0 {
		_, _ = gc.Write(out)
	}
	c.loop.scratch = out[:0]
	if !closeNow && !c.pending && n < len(buf) && len(out) >= maxPendingOutput {
		e.later(c, gc)
	}
	return closeNow
}

// later looks at c's buffered requests again in a millisecond, on its
// loop, for as long as its answers are not being read: gnet calls
// OnTraffic only when bytes arrive, and a client waiting for its answers
// sends none.
func (e *gnetEngine) later(c *conn, gc gnet.Conn) {
	if c.retry {
		return
	}
	c.retry = true
	time.AfterFunc(time.Millisecond, func() {
		e.onLoop(c, gc, func() bool {
			c.retry = false
			if c.pending {
				return false
			}
			if gc.OutboundBuffered() > maxPendingOutput {
				e.later(c, gc)
				return false
			}
			return e.pump(c, gc, c.loop.scratch[:0])
		})
	})
}

// onLoop runs f on the loop that owns c, unless c has closed by then (its
// descriptor may already serve another connection); f returning true
// closes c.
func (e *gnetEngine) onLoop(c *conn, gc gnet.Conn, f func() (closeNow bool)) {
	_ = gc.EventLoop().Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		if c.closed || !f() {
			return nil
		}
		return gc.EventLoop().Close(gc)
	}))
}

// resume runs the continuation on the loop that owns the connection.
func (e *gnetEngine) resume(c *conn) {
	gc := e.connOf(c)
	if gc == nil {
		return
	}
	c.ready.Store(true)
	if e.s.answerOrphan(c) { // closed meanwhile: answered here
		return
	}
	e.onLoop(c, gc, func() bool {
		out, closeNow := e.s.finish(c, c.loop.scratch[:0])
		if closeNow {
			_, _ = gc.Write(out)
			c.loop.scratch = out[:0]
			return true
		}
		return e.pump(c, gc, out)
	})
}

// beat runs the heartbeat on heart's loop, as a task queued on it (gnet
// loses no wake: the monitor never asks again).
func (e *gnetEngine) beat(heart *conn, _ bool) {
	gc := e.connOf(heart)
	if gc == nil {
		return
	}
	_ = gc.EventLoop().Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		e.s.beatNow(heart)
		return nil
	}))
}

// expire closes c on its loop (the timeout sweeper asked).
func (e *gnetEngine) expire(c *conn) {
	gc := e.connOf(c)
	if gc == nil {
		return
	}
	e.onLoop(c, gc, func() bool {
		if c.owed.Load() { // an answer got under way meanwhile: it is not idle
			c.expired.Store(false)
			return false
		}
		return true
	})
}

func (e *gnetEngine) connOf(c *conn) gnet.Conn {
	gc, _ := c.handle.(gnet.Conn)
	return gc
}

func sockaddrToTCP(sa unix.Sockaddr) *net.TCPAddr {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]).To16(), Port: a.Port}
	case *unix.SockaddrInet6:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]), Port: a.Port}
	}
	return &net.TCPAddr{}
}
