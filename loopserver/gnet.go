package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// gnetEngine serves on gnet. The kit accepts the connections itself and
// hands each to gnet (Engine.Register), which deals them round-robin to
// the loops in the order they come, so any 4n consecutive connections land
// n per loop. gnet's own acceptor stops the whole engine on any accept
// error but a few (v2.9.7 acceptor_unix.go accept0: "too many open files"
// included), and accepts a burst whole before its loops can close the
// connections past the cap, so a burst could run the process out of
// descriptors and stop the engine. The kit's acceptor backs off on
// "too many open files" (as net/http does) and closes a connection past
// the cap before gnet sees it. gnet itself listens on a unix socket in a
// private directory that nothing connects to.
type gnetEngine struct {
	gnet.BuiltinEventEngine
	s   *server
	eng gnet.Engine // set by OnBoot, before booted is closed
	// booted is closed once gnet has booted and eng is set: only then can
	// the engine be stopped (a server stopped earlier waits for it).
	booted chan struct{}
	ln     net.Listener
	ready  func(net.Addr)
	// slots holds one token per connection accepted and handed to gnet but
	// not yet opened on a loop, and bounds how many are under way at once:
	// gnet takes a connection by duplicating its descriptor, so each one
	// under way holds two; beyond the bound the acceptor waits and the
	// kernel queues the connections.
	slots     chan struct{}
	acceptErr chan error
	started   sync.Once
}

// handoverSlots is how many connections may be under way to gnet at once:
// an eighth of the descriptors the connection cap leaves spare, 4 to 1024.
func handoverSlots(s *server) int {
	return int(min(max((s.nofile-s.maxConns)/8, 4), 1024))
}

func (e *gnetEngine) serve(ctx context.Context, s *server, addr string, ready func(net.Addr)) error {
	e.s, e.ready = s, ready
	lc := net.ListenConfig{KeepAlive: -1} // as gnet's own listener: no TCP keep-alive
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	e.ln = ln
	defer ln.Close()
	dir, err := os.MkdirTemp("", "loopserver-gnet-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	e.acceptErr = make(chan error, 1)
	e.slots = make(chan struct{}, handoverSlots(s))
	e.booted = make(chan struct{})
	done := make(chan struct{})
	defer close(done)
	go func() {
		var err error
		select {
		case <-ctx.Done():
		case err = <-e.acceptErr:
			e.acceptErr <- err // for serve's return
		case <-done:
			return
		}
		s.stop()
		ln.Close()
		select {
		case <-e.booted: // a stop before the boot waits for it: eng is set then
		case <-done:
			return
		}
		sctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_ = e.eng.Stop(sctx)
	}()
	err = gnet.Run(e, "unix://"+filepath.Join(dir, "gnet.sock"),
		gnet.WithNumEventLoop(s.opts.loops),
		gnet.WithLoadBalancing(gnet.RoundRobin),
		gnet.WithReusePort(false),
		gnet.WithLockOSThread(s.opts.lockThreads),
		gnet.WithTicker(true), // its first tick starts the acceptor
		gnet.WithLogger(gnetLog{s.log}),
	)
	select {
	case aerr := <-e.acceptErr:
		return aerr
	default:
	}
	return err
}

// accept takes the connections and hands them to gnet until the listener
// closes (acceptLoop); a connection under way holds a slot until gnet has
// opened it.
func (e *gnetEngine) accept() {
	err := e.s.acceptLoop(e.ln, func() bool { return e.s.open.Load()+int64(len(e.slots)) >= e.s.maxConns }, func(c net.Conn) {
		e.slots <- struct{}{}
		done := func() { <-e.slots }
		res, err := e.eng.Register(gnet.NewNetConnContext(context.Background(), c))
		if err != nil {
			done()
			c.Close()
			return
		}
		go func() {
			// gnet sends the result once the loop has opened the
			// connection (or failed to take it: its copy of the
			// descriptor, say).
			if r := <-res; r.Err != nil && !e.s.stopping.Load() {
				fmt.Fprintf(e.s.log, "loopserver: gnet could not take a connection: %v\n", r.Err)
			}
			done()
		}()
	})
	if err != nil {
		e.acceptErr <- err
	}
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
	close(e.booted)
	return gnet.None
}

// OnTick is called first once every loop is registered with the balancer
// (gnet calls OnBoot before): only then may connections be handed over.
func (e *gnetEngine) OnTick() (time.Duration, gnet.Action) {
	e.started.Do(func() {
		go e.accept()
		e.ready(e.ln.Addr())
	})
	return time.Hour, gnet.None
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
	e.s.awake(func() {
		_ = gc.EventLoop().Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			if c.closed || !f() {
				return nil
			}
			return gc.EventLoop().Close(gc)
		}))
	})
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
	e.s.awake(func() {
		_ = gc.EventLoop().Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			e.s.beatNow(heart)
			return nil
		}))
	})
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
