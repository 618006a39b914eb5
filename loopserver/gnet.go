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
// hands each to gnet (gnet_accept.go), which deals them round-robin to the
// loops in the order they come, so any 4n consecutive connections land n
// per loop. gnet itself listens on a unix socket in a private directory
// that nothing connects to.
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

func (e *gnetEngine) traits() traits { return traits{} }

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

func (e *gnetEngine) OnOpen(gc gnet.Conn) ([]byte, gnet.Action) {
	c := e.s.opened(gc.RemoteAddr(), &gnetLink{gc: gc})
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

// gnetLink is a connection on gnet, which keeps its input and unsent
// output in its own buffers and runs a task on a connection's loop
// (EventLoop.Execute).
type gnetLink struct {
	plain
	gc gnet.Conn
}

func (l *gnetLink) run(f func() bool) {
	_ = l.gc.EventLoop().Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		if !f() {
			return nil
		}
		return l.gc.EventLoop().Close(l.gc)
	}))
}

func (l *gnetLink) input() []byte {
	buf, _ := l.gc.Peek(-1)
	return buf
}

func (l *gnetLink) discard(n int) { _, _ = l.gc.Discard(n) }

func (l *gnetLink) write(out []byte) error {
	_, err := l.gc.Write(out)
	return err
}

func (l *gnetLink) unsent() int { return l.gc.OutboundBuffered() }

func (l *gnetLink) fd() int { return l.gc.Fd() }
