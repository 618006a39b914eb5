package main

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/tidwall/evio"
)

// evioEngine serves on evio. Its RoundRobin balancer is racy (a loop that
// loses the accept race still burns a turn), so connections are dealt with
// LeastConnections: a loop accepts only while no other loop holds fewer open
// connections, which keeps the open counts within one of each other, so 4n
// connections opened on a balanced server land exactly n per loop. What it
// works around: a lost wake (evio_wake.go), a closed descriptor left in its
// epoll set (evio_epoll.go), and fields it does not export
// (evio_fields.go).
type evioEngine struct {
	s *server
}

func (e *evioEngine) traits() traits { return traits{losesWakes: true} }

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
		l := &evioLink{e: e, ec: ec}
		if l.c = s.opened(ec.RemoteAddr(), l); l.c == nil {
			return nil, evio.Options{}, evio.Close // over the cap
		}
		ec.SetContext(l)
		return nil, evio.Options{ReuseInputBuffer: true}, evio.None
	}
	// evio closes the descriptor before it says so.
	ev.Closed = func(ec evio.Conn, _ error) evio.Action {
		if l, _ := ec.Context().(*evioLink); l != nil {
			s.closedConn(l.c)
		}
		return evio.None
	}
	ev.Data = e.data
	return evio.Serve(ev, "tcp://"+addr)
}

// data takes new bytes (in) or, with in nil, a wake: the jobs queued.
func (e *evioEngine) data(ec evio.Conn, in []byte) ([]byte, evio.Action) {
	l, _ := ec.Context().(*evioLink)
	if l == nil {
		return nil, evio.Close
	}
	l.out = l.out[:0] // evio copied what the last callback returned
	var closeNow bool
	if in == nil {
		closeNow = l.runJobs()
	} else {
		l.take(in)
		closeNow = e.s.traffic(l.c)
		l.keep() // ReuseInputBuffer: evio reuses its read buffer
	}
	if closeNow {
		return l.out, evio.Close // evio sends the output, then closes
	}
	if l.c.dupFD > 0 && len(l.out) == 0 && evioUnsent(ec) == 0 {
		l.quiet()
	}
	return l.out, evio.None
}

// evioLink is a connection on evio: evio hands each read's bytes to data
// (the inbox), keeps unsent output itself and takes the callback's output
// as its return value; a job reaches a loop by a connection's Wake, which
// calls data with nil.
type evioLink struct {
	plain // but rewake (evio_wake.go)
	inbox
	e    *evioEngine
	ec   evio.Conn
	c    *conn
	mu   sync.Mutex
	jobs []func() bool
	out  []byte // the output of the callback under way
}

// run queues f on the connection and wakes its loop. evio drops the wake
// of a connection it has closed.
func (l *evioLink) run(f func() bool) {
	l.mu.Lock()
	l.jobs = append(l.jobs, f)
	l.mu.Unlock()
	l.wake(false)
}

// write adds out to what the callback under way returns (a job runs inside
// one too: data with nil).
func (l *evioLink) write(out []byte) error {
	l.out = append(l.out, out...)
	return nil
}

func (l *evioLink) unsent() int { return evioUnsent(l.ec) }

func (l *evioLink) fd() int {
	if f, ok := evioField(l.ec, evioFD); ok {
		return int(f.Int())
	}
	return -1
}
