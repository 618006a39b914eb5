package main

import (
	"context"
	"net"
	"reflect"
	"sync"
	"time"

	"github.com/tidwall/evio"
	"golang.org/x/sys/unix"
)

// evioEngine serves on evio. Its RoundRobin balancer is racy (a loop that
// loses the accept race still burns a turn), so connections are dealt with
// LeastConnections: a loop accepts only while no other loop holds fewer open
// connections, which keeps the open counts within one of each other, so 4n
// connections opened on a balanced server land exactly n per loop.
type evioEngine struct {
	s *server
}

func (e *evioEngine) serve(ctx context.Context, s *server, addr string, ready func(net.Addr)) error {
	e.s = s
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			s.stop()
		case <-done:
		}
	}()
	var ev evio.Events
	ev.NumLoops = s.opts.loops
	ev.LoadBalance = evio.LeastConnections
	ev.Serving = func(srv evio.Server) evio.Action {
		ready(srv.Addrs[0])
		return evio.None
	}
	// evio has no stop call: the ticker (on loop 0) returns Shutdown.
	ev.Tick = func() (time.Duration, evio.Action) {
		if s.stopping.Load() {
			return 0, evio.Shutdown
		}
		return 20 * time.Millisecond, evio.None
	}
	ev.Opened = func(ec evio.Conn) ([]byte, evio.Options, evio.Action) {
		c := s.opened(ec.RemoteAddr(), &evioConn{ec: ec})
		if c == nil {
			return nil, evio.Options{}, evio.Close // over the cap
		}
		ec.SetContext(c)
		return nil, evio.Options{ReuseInputBuffer: true}, evio.None
	}
	// evio closes the descriptor before it says so.
	ev.Closed = func(ec evio.Conn, _ error) evio.Action {
		c, _ := ec.Context().(*conn)
		s.closedConn(c)
		return evio.None
	}
	ev.Data = e.data
	return evio.Serve(ev, "tcp://"+addr)
}

// evioConn is evio's connection, the jobs queued for its loop and the
// output of the callback under way.
type evioConn struct {
	ec   evio.Conn
	mu   sync.Mutex
	jobs []func() bool
	out  []byte
}

// data takes new bytes (in) or, with in nil, a wake: the jobs queued.
func (e *evioEngine) data(ec evio.Conn, in []byte) ([]byte, evio.Action) {
	c, _ := ec.Context().(*conn)
	if c == nil {
		return nil, evio.Close
	}
	h := c.handle.(*evioConn)
	h.out = h.out[:0] // evio copied what the last callback returned
	var closeNow bool
	if in == nil {
		closeNow = e.jobs(c, h)
	} else {
		c.in.take(in)
		closeNow = e.s.traffic(c)
		c.in.keep() // ReuseInputBuffer: evio reuses its read buffer
	}
	if closeNow {
		return h.out, evio.Close // evio sends the output, then closes
	}
	if c.dupFD > 0 && len(h.out) == 0 && evioUnsent(ec) == 0 {
		e.quiet(c)
	}
	return h.out, evio.None
}

// quiet makes c's entry in its loop's epoll set edge-triggered while the
// core keeps a duplicate of its socket (an answer is owed): evio closes a
// descriptor at the end of input without taking it out of its
// level-triggered set, and the entry lives as long as the socket, so the
// end of input was reported again at every wait and the loop spun until
// the answer went out. Edge-triggered, it is reported once. evio sets the
// entry level-triggered again itself when it next has output for c (an
// answer: its ModReadWrite), which it does only while it has c open; with
// neither output nor an action to take it changes nothing after this
// callback (v1.0.8 loopRead, loopWake).
func (e *evioEngine) quiet(c *conn) {
	ep, ok := evioEpfd(c.handle.(*evioConn).ec)
	fd := e.fd(c)
	if !ok || fd < 0 {
		return
	}
	_ = unix.EpollCtl(ep, unix.EPOLL_CTL_MOD, fd, &unix.EpollEvent{Fd: int32(fd), Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET})
}

// evioEpfd is the epoll set of ec's loop (evio v1.0.8: conn.loop.poll.fd,
// all unexported; TestEvioUnsentField fails if it moves).
func evioEpfd(ec evio.Conn) (int, bool) {
	v := reflect.ValueOf(ec)
	for _, f := range []struct {
		name string
		kind reflect.Kind
	}{{"loop", reflect.Pointer}, {"poll", reflect.Pointer}, {"fd", reflect.Int}} {
		var ok bool
		if v, ok = fieldOf(v, f.name, f.kind); !ok {
			return -1, false
		}
	}
	return int(v.Int()), true
}

// jobs runs the jobs queued for c, on its loop. evio's wake replaces the
// output still unsent with what the callback returns (v1.0.8, loopWake,
// where a read appends): what a job answers goes out behind it.
func (e *evioEngine) jobs(c *conn, h *evioConn) (closeNow bool) {
	h.mu.Lock()
	jobs := h.jobs
	h.jobs = nil
	h.mu.Unlock()
	for _, f := range jobs {
		if f() {
			closeNow = true
		}
	}
	if len(h.out) > 0 {
		if f, ok := evioField(h.ec, evioOut); ok && f.Len() > 0 {
			h.out = append(append(make([]byte, 0, f.Len()+len(h.out)), f.Bytes()...), h.out...)
		}
	}
	return closeNow
}

// The transport: evio hands each read's bytes to data, keeps unsent output
// itself and takes the callback's output as its return value; a job
// reaches a loop by a connection's Wake, which calls data with nil.

// run queues f on c and wakes its loop. evio drops the wake of a
// connection it has closed.
func (e *evioEngine) run(c *conn, f func() bool) {
	h := c.handle.(*evioConn)
	h.mu.Lock()
	h.jobs = append(h.jobs, f)
	h.mu.Unlock()
	if c.heart && e.s.opts.dropWake != nil && e.s.opts.dropWake(false) {
		return
	}
	h.ec.Wake()
}

// rewake wakes heart's loop again for a beat still waiting. evio v1.0.8's
// poll (internal/internal_linux.go, Wait) handles the queued wakes, then
// reads the eventfd that signalled them, so a wake queued in between keeps
// its place in the queue but loses its signal, and the loop sleeps until
// other traffic, loop 0's tick or its 100 ms poll timeout. A beat is
// handed over the moment the last one ran, inside that very window, so the
// monitor repeats the wake of a beat still waiting at its loop's next turn.
func (e *evioEngine) rewake(heart *conn) {
	if e.s.opts.dropWake != nil && e.s.opts.dropWake(true) {
		return
	}
	heart.handle.(*evioConn).ec.Wake()
}

func (e *evioEngine) input(c *conn) []byte { return c.in.bytes() }

func (e *evioEngine) discard(c *conn, n int) { c.in.discard(n) }

// write adds out to what the callback under way returns (a job runs inside
// one too: data with nil).
func (e *evioEngine) write(c *conn, out []byte) error {
	h := c.handle.(*evioConn)
	h.out = append(h.out, out...)
	return nil
}

func (e *evioEngine) unsent(c *conn) int { return evioUnsent(c.handle.(*evioConn).ec) }

func (e *evioEngine) fd(c *conn) int {
	if f, ok := evioField(c.handle.(*evioConn).ec, evioFD); ok {
		return int(f.Int())
	}
	return -1
}

// evioUnsent is how many bytes evio still holds unsent for ec. It is
// called on the connection's loop, the only goroutine that touches them.
func evioUnsent(ec evio.Conn) int {
	if f, ok := evioField(ec, evioOut); ok {
		return f.Len()
	}
	return 0
}

// The two unexported fields of evio's connection the kit reads: its
// descriptor and its unsent output (evio v1.0.8 is pinned and
// unmaintained; TestEvioUnsentField fails if they move).
const (
	evioFD = iota
	evioOut
)

// evioField is field which (evioFD, evioOut) of ec's connection struct.
func evioField(ec evio.Conn, which int) (reflect.Value, bool) {
	if which == evioFD {
		return fieldOf(reflect.ValueOf(ec), "fd", reflect.Int)
	}
	return fieldOf(reflect.ValueOf(ec), "out", reflect.Slice)
}
