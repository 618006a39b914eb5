package main

import (
	"context"
	"math"
	"net"
	"reflect"
	"sync"
	"syscall"
	"time"

	"github.com/tidwall/evio"
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
		c := s.opened(ec.RemoteAddr(), ec)
		if c == nil {
			return nil, evio.Options{}, evio.Close // over the cap
		}
		ec.SetContext(c)
		return nil, evio.Options{ReuseInputBuffer: true}, evio.None
	}
	ev.Closed = func(ec evio.Conn, _ error) evio.Action {
		c, _ := ec.Context().(*conn)
		s.closedConn(c)
		if c != nil && c.pending && c.dupFD > 0 {
			fd := c.dupFD
			c.dupFD = 0
			s.orphaned(c, fd) // evio closed on the end of input; the answer is still owed
		}
		return evio.None
	}
	ev.Data = e.data
	return evio.Serve(ev, "tcp://"+addr)
}

// data takes new bytes (in) or, with in nil, a wake: the continuation.
func (e *evioEngine) data(ec evio.Conn, in []byte) ([]byte, evio.Action) {
	c, _ := ec.Context().(*conn)
	if c == nil {
		return nil, evio.Close
	}
	if c.heart {
		if in != nil {
			return nil, evio.Close // a heart never sends
		}
		e.s.beatNow(c)
		return nil, evio.None
	}
	out := c.loop.scratch[:0]
	if in == nil && c.expired.Load() { // the timeout sweeper asked
		if !c.pending {
			return nil, evio.Close
		}
		c.expired.Store(false) // an answer got under way meanwhile: it is not idle
	}
	if in == nil { // Wake: the continuation, if it is due
		if !c.pending || !c.ready.Load() {
			return nil, evio.None
		}
		if evioUnsent(ec) > 0 {
			// evio's wake replaces unsent output with what this returns
			// (v1.0.8, loopWake): answer once the earlier answers are out.
			time.AfterFunc(time.Millisecond, func() { e.s.awake(ec.Wake) })
			return nil, evio.None
		}
		e.dropDup(c)
		var closeNow bool
		if out, closeNow = e.s.finish(c, out); closeNow {
			return e.done(c, out, evio.Close)
		}
	} else if c.pending {
		if len(c.buf)+len(in) > maxPendingInput {
			return nil, evio.Close
		}
		c.buf = append(c.buf, in...) // ReuseInputBuffer: keep a copy
		c.lastActive.Store(time.Now().UnixNano())
		return nil, evio.None
	} else if len(c.buf) > 0 {
		c.buf = append(c.buf, in...)
	} else {
		// Nothing buffered: decode straight from evio's read buffer.
		n, out, closeNow := e.s.drain(c, in, out, math.MaxInt) // evio reads nothing more until out is sent
		if c.pending {
			e.dupFor(c, ec)
		}
		if closeNow {
			return e.done(c, out, evio.Close)
		}
		c.buf = append(c.buf[:0], in[n:]...)
		c.note(c.buf)
		return e.done(c, out, evio.None)
	}
	n, out, closeNow := e.s.drain(c, c.buf, out, math.MaxInt)
	if c.pending {
		e.dupFor(c, ec)
	}
	c.buf = c.buf[:copy(c.buf, c.buf[n:])]
	c.note(c.buf)
	if closeNow {
		return e.done(c, out, evio.Close)
	}
	return e.done(c, out, evio.None)
}

func (e *evioEngine) done(c *conn, out []byte, a evio.Action) ([]byte, evio.Action) {
	c.loop.scratch = out[:0] // evio copies out before the next callback
	return out, a
}

// dupFor keeps a duplicate of ec's descriptor while c is owed an answer:
// evio closes the descriptor on the end of input before it says so, and a
// client that half-closed after asking still waits for the answer.
func (e *evioEngine) dupFor(c *conn, ec evio.Conn) {
	if c.dupFD > 0 {
		return
	}
	if f, ok := evioField(ec, evioFD); ok {
		if fd, err := syscall.Dup(int(f.Int())); err == nil {
			c.dupFD = fd
		}
	}
}

// dropDup lets go of the duplicate once the answer goes out the usual way.
func (e *evioEngine) dropDup(c *conn) {
	if c.dupFD > 0 {
		syscall.Close(c.dupFD)
		c.dupFD = 0
	}
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

// evioFields caches, per connection type, the index of each field
// (-1: absent or not of the expected kind), so the per-continuation path
// looks them up by index, not by name.
var evioFields sync.Map // reflect.Type -> [2]int

// evioField is field which of ec's connection struct.
func evioField(ec evio.Conn, which int) (reflect.Value, bool) {
	v := reflect.ValueOf(ec)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	v = v.Elem()
	idx, ok := evioFields.Load(v.Type())
	if !ok {
		found := [2]int{-1, -1}
		for i, want := range []struct {
			name string
			kind reflect.Kind
		}{{"fd", reflect.Int}, {"out", reflect.Slice}} {
			if f, ok := v.Type().FieldByName(want.name); ok && len(f.Index) == 1 && f.Type.Kind() == want.kind {
				found[i] = f.Index[0]
			}
		}
		idx, _ = evioFields.LoadOrStore(v.Type(), found)
	}
	i := idx.([2]int)[which]
	if i < 0 {
		return reflect.Value{}, false
	}
	return v.Field(i), true
}

// beat wakes heart's loop, which runs the heartbeat in data. again says
// the beat is still waiting from an earlier wake: evio v1.0.8's poll
// (internal/internal_linux.go, Wait) handles the queued wakes, then reads
// the eventfd that signalled them, so a wake queued in between keeps its
// place in the queue but loses its signal, and the loop sleeps until other
// traffic, loop 0's tick or its 100 ms poll timeout. A beat is handed over
// the moment the last one ran, inside that very window, so the monitor
// repeats the wake of a beat still waiting at its loop's next turn.
func (e *evioEngine) beat(heart *conn, again bool) {
	if ec, _ := heart.handle.(evio.Conn); ec != nil {
		if e.s.opts.dropWake != nil && e.s.opts.dropWake(again) {
			return
		}
		e.s.awake(ec.Wake)
	}
}

// expire wakes c's loop, which closes it (the timeout sweeper asked).
func (e *evioEngine) expire(c *conn) {
	if ec, _ := c.handle.(evio.Conn); ec != nil {
		e.s.awake(ec.Wake)
	}
}

// resume marks the continuation due and wakes the owning loop, which calls
// data with nil. A wake for a connection evio has closed is dropped by evio.
func (e *evioEngine) resume(c *conn) {
	ec, _ := c.handle.(evio.Conn)
	if ec == nil {
		return
	}
	c.ready.Store(true)
	if e.s.answerOrphan(c) { // closed meanwhile: answered here
		return
	}
	e.s.awake(ec.Wake)
}
