package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
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
	// sockDir holds the unix socket gnet listens on (gnet.Run wants an
	// address); removed once gnet has bound it.
	sockDir string
	ln      net.Listener
	ready   func(net.Addr)
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
	e.sockDir = dir
	defer os.RemoveAll(dir) // if gnet never booted
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

// OnBoot: gnet has bound its unix socket, which nothing dials (the kit
// accepts the connections itself), so its directory goes now: a server
// killed rather than stopped leaves nothing in the temporary directory.
func (e *gnetEngine) OnBoot(eng gnet.Engine) gnet.Action {
	_ = os.RemoveAll(e.sockDir)
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

// OnClose comes before gnet closes the descriptor.
func (e *gnetEngine) OnClose(gc gnet.Conn, _ error) gnet.Action {
	c, _ := gc.Context().(*conn)
	e.s.closedConn(c)
	return gnet.None
}

func (e *gnetEngine) OnTraffic(gc gnet.Conn) gnet.Action {
	return gnetAction(e.s.traffic(gc.Context().(*conn)))
}

func gnetAction(closeNow bool) gnet.Action {
	if closeNow {
		return gnet.Close
	}
	return gnet.None
}

// The transport: gnet keeps a connection's input and unsent output in its
// own buffers, and runs a task on a connection's loop (EventLoop.Execute).

func (e *gnetEngine) run(c *conn, f func() bool) {
	gc := c.handle.(gnet.Conn)
	_ = gc.EventLoop().Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		if !f() {
			return nil
		}
		return gc.EventLoop().Close(gc)
	}))
}

func (e *gnetEngine) input(c *conn) []byte {
	buf, _ := c.handle.(gnet.Conn).Peek(-1)
	return buf
}

func (e *gnetEngine) discard(c *conn, n int) { _, _ = c.handle.(gnet.Conn).Discard(n) }

func (e *gnetEngine) write(c *conn, out []byte) error {
	_, err := c.handle.(gnet.Conn).Write(out)
	return err
}

func (e *gnetEngine) unsent(c *conn) int { return c.handle.(gnet.Conn).OutboundBuffered() }

func (e *gnetEngine) fd(c *conn) int { return c.handle.(gnet.Conn).Fd() }
