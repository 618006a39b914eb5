package client

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bystander-kit/bystander/internal/request"
)

// A Poller drives many connections from one goroutine, the way wrk does:
// non-blocking sockets in one epoll set, each connection one request at a
// time, the next request written as soon as the previous answer is read (a
// write and a read per request, and a share of one epoll wait), or at the
// moment its schedule says, slept to within microseconds by epoll_pwait2's
// nanosecond timeout. Go's own network path costs more per request: a read
// that finds nothing (EAGAIN) before every answer, the goroutine parked and
// readied through the runtime's poller, and timers that wake up to a
// millisecond late.
//
// A Driver says when each connection's next request is due and books what
// came back. A Poller and its connections belong to the goroutine that
// calls Run; Stop is the one method safe from any goroutine.
type Poller struct {
	epfd, wake int
	// With ReadOnSchedule: the sockets' own epoll set (epfd then holds
	// the wake-up only), and how long after its due time a request's
	// answer may wait to be read.
	sockfd   int
	lazyFor  time.Duration
	conns    []*PConn
	due      dueHeap
	events   []unix.EpollEvent
	active   int // connections whose driver has not said done
	inFlight int
	stopped  atomic.Bool
	closed   bool
}

// A Driver schedules and books one Poller's requests. Its methods run on
// the Poller's goroutine.
type Driver interface {
	// Next says when connection c's next request is due: at the start, and
	// after each request ended (now is when). ok false: c is done.
	Next(c *PConn, now time.Time) (due time.Time, ok bool)
	// Send is told that c's request is leaving now (a driver may Retarget c).
	Send(c *PConn, now time.Time)
	// Done books one request of c: the answer in r when err is nil (or of
	// kind BadStatus), else the failure; ErrInterrupted when Stop cut it.
	Done(c *PConn, due, sent, end time.Time, r *Response, err error)
}

// PConn is one keep-alive connection of a Poller.
type PConn struct {
	// ID is the caller's: Add numbers connections 0, 1, ... in order.
	ID      int
	addr    string
	req     []byte
	mix     *request.Mix  // Use: the requests sent in turn, or nil
	wire    *request.Wire // the request last sent from mix
	timeout time.Duration
	fd      int
	buf     []byte
	r, w    int
	// Dials counts connections opened, the first one included.
	Dials int

	busy      bool   // a request is in flight
	out       []byte // what is left to write of the request in flight (nil: all written)
	stamp     int64  // with ReadOnSchedule: when the last bytes read arrived (the kernel's, Unix ns)
	msg       unix.Msghdr
	iov       unix.Iovec
	oob       []byte
	head      bool // its head is read; its body is being read (body)
	body      frame
	headOnly  bool // the request is a HEAD: its answers have no body
	resp      Response
	due, sent time.Time
	deadline  time.Time
}

// NewPoller makes an empty poller.
func NewPoller() (*Poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("client: epoll: %w", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("client: eventfd: %w", err)
	}
	p := &Poller{epfd: epfd, sockfd: -1, wake: wake, events: make([]unix.EpollEvent, 256)}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: -1}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wake, &ev); err != nil {
		p.Close()
		return nil, fmt.Errorf("client: epoll: %w", err)
	}
	return p, nil
}

// Add makes a connection (not yet dialled) that sends GET target to addr
// (host:port) with the given per-request timeout.
func (p *Poller) Add(addr, target string, timeout time.Duration) *PConn {
	c := &PConn{ID: len(p.conns), addr: addr, timeout: timeout, fd: -1}
	c.Retarget(target)
	p.conns = append(p.conns, c)
	return c
}

// ReadOnSchedule makes Run wake only when a request is due, not when an
// answer comes: the answers that came meanwhile are read then, each timed
// by when it reached the socket (the kernel's receive timestamp,
// SO_TIMESTAMPNS), not by when it was read. A prober with twelve
// connections each due every 10 ms then wakes 1,200 times a second instead
// of 2,400; on a virtual machine a wake-up costs about 15 us of CPU
// (docs/measurements.md). An answer still awaited lazy after its request's
// due time (the next request of its connection is due by then: give the
// interval) is read as soon as it comes, so a connection held up is
// never held further by the poller. Call it before Dial.
func (p *Poller) ReadOnSchedule(lazy time.Duration) error {
	if p.sockfd < 0 {
		fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			return fmt.Errorf("client: epoll: %w", err)
		}
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: -1}
		if err := unix.EpollCtl(fd, unix.EPOLL_CTL_ADD, p.wake, &ev); err != nil {
			unix.Close(fd)
			return fmt.Errorf("client: epoll: %w", err)
		}
		p.sockfd = fd
	}
	p.lazyFor = lazy
	return nil
}

// Retarget makes the connection's next requests GET target instead (the
// same server: a path and query, as ParseTarget checked it), ending Use.
func (c *PConn) Retarget(target string) {
	c.req, c.mix, c.wire, c.headOnly = getWire(c.addr, target), nil, nil, false
}

// Use makes the connection send m's requests, each in its turn (a user's
// REQUEST: internal/request), instead of its GET. m is the connection's
// own (request.Mix.Fork): it is not guarded, and taken on the Poller's
// goroutine only.
func (c *PConn) Use(m *request.Mix) { c.mix = m }

// Sent is the request of m (Use) the connection sent last, for a Driver's
// Done to book an answer by request; nil before any, or without Use.
func (c *PConn) Sent() *request.Wire { return c.wire }

// Stop makes Run return soon, its requests in flight booked as
// ErrInterrupted. Safe from any goroutine, and more than once.
func (p *Poller) Stop() {
	if p.stopped.CompareAndSwap(false, true) {
		var one = [8]byte{1}
		_, _ = unix.Write(p.wake, one[:])
	}
}

// Close closes every connection and the poller.
func (p *Poller) Close() {
	if p.closed {
		return
	}
	p.closed = true
	for _, c := range p.conns {
		p.drop(c)
	}
	unix.Close(p.wake)
	unix.Close(p.epfd)
	if p.sockfd >= 0 {
		unix.Close(p.sockfd)
	}
}

// sweepEvery is how often requests in flight are checked against their
// deadlines: a timeout is noticed up to this late.
const sweepEvery = 10 * time.Millisecond

// Run drives every connection until its driver says it is done, or ctx
// ends or Stop is called (then what is in flight is booked interrupted).
// It may be run again with another driver (the prober places its
// connections, then probes them); once stopped, it sends nothing more.
func (p *Poller) Run(ctx context.Context, d Driver) error {
	defer context.AfterFunc(ctx, p.Stop)()
	if p.stopped.Load() {
		return nil // stopped before, or while it ran before: nothing more
	}
	p.due = p.due[:0]
	now := time.Now()
	p.active = len(p.conns)
	for _, c := range p.conns {
		p.next(c, d, now, false)
	}
	nextSweep := now.Add(sweepEvery)
	procs := int32(runtime.GOMAXPROCS(0))
	for p.active > 0 {
		if p.sockfd >= 0 && p.inFlight > 0 {
			// The answers that came since the last wake.
			if stop, err := p.poll(p.sockfd, 0, procs, d); stop || err != nil {
				return err
			}
		}
		now = time.Now()
		for len(p.due) > 0 && !p.due[0].due.After(now) {
			c := heap.Pop(&p.due).(*PConn)
			p.send(c, d, c.due)
			now = time.Now()
		}
		if p.active == 0 {
			break
		}
		wait := time.Duration(-1)
		if len(p.due) > 0 {
			wait = max(p.due[0].due.Sub(now), 0)
		}
		if p.inFlight > 0 && p.sockfd < 0 {
			if now.After(nextSweep) {
				p.sweep(d, now)
				nextSweep = now.Add(sweepEvery)
				continue
			}
			if s := nextSweep.Sub(now); wait < 0 || s < wait {
				wait = s
			}
		}
		set := p.epfd
		if p.sockfd >= 0 {
			// Sleep to the next due time, unless an answer is awaited past
			// its lazy time: then its coming wakes.
			set = p.epfd
			if len(p.due) == 0 {
				set = p.sockfd
			}
			// The scan also finds the next deadline: no periodic sweep.
			expired := false
			for _, c := range p.conns {
				if !c.busy {
					continue
				}
				if c.out != nil {
					set = p.sockfd // its socket taking more of the request wakes
				}
				if c.timeout > 0 {
					dl := c.deadline.Sub(now)
					expired = expired || dl <= 0
					if wait < 0 || dl < wait {
						wait = max(dl, 0)
					}
				}
				late := c.due.Add(p.lazyFor).Sub(now)
				if late <= 0 {
					set = p.sockfd
				} else if wait < 0 || late < wait {
					wait = late
				}
			}
			if expired {
				p.sweep(d, now)
				continue
			}
		}
		if stop, err := p.poll(set, wait, procs, d); stop || err != nil {
			return err
		}
	}
	return nil
}

// poll waits on an epoll set up to wait (0: a look; -1: no limit) and
// reads what came; stop is Stop's wake-up. A wait that may block holds its
// processor only while another is left for the process's other goroutines
// (procs is GOMAXPROCS): see rawHeld.
func (p *Poller) poll(set int, wait time.Duration, procs int32, d Driver) (stop bool, err error) {
	raw := wait == 0
	if !raw {
		if rawHeld.Add(1) < procs {
			raw = true
			defer rawHeld.Add(-1)
		} else {
			rawHeld.Add(-1)
		}
	}
	n, err := epollWait(set, p.events, wait, !raw)
	if err != nil {
		if errors.Is(err, unix.EINTR) {
			return false, nil
		}
		return false, fmt.Errorf("client: epoll: %w", err)
	}
	for _, ev := range p.events[:n] {
		if ev.Fd < 0 {
			p.interrupt(d)
			return true, nil
		}
		c := p.conns[ev.Fd]
		if ev.Events&unix.EPOLLOUT != 0 && c.out != nil {
			p.writable(c, d)
		}
		if ev.Events&^unix.EPOLLOUT != 0 {
			p.readable(c, d)
		}
	}
	return false, nil
}

// next asks the driver for c's next due time: at once or later, or never.
// Only after an answer is a request due now sent at once; after a failure
// it waits for Run's next turn (a driver that asks again at once for a dead
// server makes Run spin, never recurse).
func (p *Poller) next(c *PConn, d Driver, now time.Time, answered bool) {
	due, ok := d.Next(c, now)
	if !ok {
		p.active--
		return
	}
	c.due = due
	if answered && !due.After(now) {
		p.send(c, d, due)
		return
	}
	heap.Push(&p.due, c)
}

// send writes c's request (dialling first if its socket was closed).
func (p *Poller) send(c *PConn, d Driver, due time.Time) {
	c.due = due
	now := time.Now()
	c.sent = now
	d.Send(c, now)
	if c.fd < 0 {
		if err := p.dial(c); err != nil {
			p.end(c, d, now, nil, err)
			return
		}
		now = time.Now()
	}
	c.sent, c.busy, c.head = now, true, false
	c.deadline = now.Add(c.timeout)
	p.inFlight++
	if c.mix != nil {
		w := c.mix.Next()
		c.req, c.wire, c.headOnly = w.Bytes, w, w.Head
	}
	c.out = c.req
	p.writable(c, d)
}

// writable writes what is left of c's request. What the socket does not
// take now (a server that does not read: its buffers and ours full; a
// request of a large body) is written when it takes more (EPOLLOUT), the
// request in flight meanwhile, its wait counting from its send.
func (p *Poller) writable(c *PConn, d Driver) {
	waiting := len(c.out) < len(c.req)
	n, err := rawWrite(c.fd, c.out)
	if err == unix.EAGAIN || err == unix.EINTR {
		n, err = 0, nil
	}
	if err == nil {
		c.out = c.out[n:]
		switch {
		case len(c.out) == 0 && waiting:
			c.out, err = nil, p.watchOut(c, false)
		case len(c.out) == 0:
			c.out = nil
		case !waiting:
			err = p.watchOut(c, true)
		}
	}
	if err != nil {
		p.fail(c, d, err)
	}
}

// readable reads what c's socket holds and books the answer once whole.
func (p *Poller) readable(c *PConn, d Driver) {
	for c.fd >= 0 {
		c.makeRoom()
		space := len(c.buf) - c.w
		var n int
		var err error
		if p.sockfd >= 0 {
			n, err = c.recv()
		} else {
			n, err = rawRead(c.fd, c.buf[c.w:])
		}
		if err != nil {
			if err == unix.EAGAIN || err == unix.EINTR {
				return
			}
			p.fail(c, d, err)
			return
		}
		if n == 0 {
			p.hungUp(c, d)
			return
		}
		if !c.busy {
			// Bytes nobody asked for: the connection is not usable.
			p.drop(c)
			return
		}
		c.w += n
		if !p.parse(c, d) {
			return
		}
		if n < space {
			return // drained: the next bytes are the next event's
		}
	}
}

// makeRoom makes space in c's buffer for a read (see room); a body being
// read with nothing of it left unread is read over from the start.
func (c *PConn) makeRoom() {
	if !c.head || c.w > c.r {
		c.buf, c.r, c.w = room(c.buf, c.r, c.w)
	} else {
		c.r, c.w = 0, 0
	}
}

// hungUp is the server's close of c: the end of an answer delimited by
// it, or else a failure.
func (p *Poller) hungUp(c *PConn, d Driver) {
	if c.busy && c.head && c.body.closes() {
		p.answered(c, d)
		return
	}
	p.fail(c, d, io.EOF)
}

// parse books c's answer when the buffer holds it whole, reporting whether
// to go on reading.
func (p *Poller) parse(c *PConn, d Driver) bool {
	for !c.head {
		n, err := parseHead(c.buf[c.r:c.w], &c.resp)
		if err != nil {
			p.fail(c, d, err)
			return false
		}
		if n == 0 {
			return true
		}
		c.r += n
		if !interim(c.resp.Status) {
			c.head = true
			c.body.start(&c.resp, c.headOnly)
		}
	}
	n, done, err := c.body.step(c.buf[c.r:c.w])
	c.r += n
	if err != nil {
		p.fail(c, d, err)
		return false
	}
	if !done {
		return true
	}
	p.answered(c, d)
	return false
}

// answered books c's answer, read whole.
func (p *Poller) answered(c *PConn, d Driver) {
	now := time.Now()
	if p.sockfd >= 0 && c.stamp > 0 {
		// When the answer's last bytes reached the socket, on the
		// monotonic clock: now less how long ago that was.
		if ago := now.UnixNano() - c.stamp; ago > 0 {
			now = now.Add(-time.Duration(ago))
		}
		if now.Before(c.sent) {
			now = c.sent
		}
	}
	c.busy = false
	p.inFlight--
	r := &c.resp
	var err error
	if failed(r.Status) {
		err = c.body.badStatus(r.Status)
	}
	if r.Close || c.out != nil {
		// (An answer before the whole request was written: what is left
		// of it would be read as the next request.)
		p.drop(c)
	}
	p.end(c, d, now, r, err)
}

// fail ends c's request in flight with err (or, idle, just closes c).
func (p *Poller) fail(c *PConn, d Driver, err error) {
	p.drop(c)
	if !c.busy {
		return
	}
	c.busy = false
	p.inFlight--
	var ce *Error
	if !errors.As(err, &ce) && err != ErrInterrupted {
		err = &Error{classify(err), err}
	}
	p.end(c, d, time.Now(), nil, err)
}

// end books c's request and asks for the next one.
func (p *Poller) end(c *PConn, d Driver, now time.Time, r *Response, err error) {
	if r == nil {
		r = &c.resp
		*r = Response{Loop: -1, ContinuationLoop: -1, HandlerStart: -1, ContinuationStart: -1, BlockedNs: -1, QueuedNs: -1, ContentLength: -1}
	}
	d.Done(c, c.due, c.sent, now, r, err)
	if err == ErrInterrupted {
		return
	}
	p.next(c, d, now, err == nil || KindOf(err) == BadStatus)
}

// sweep fails the requests in flight past their deadlines.
func (p *Poller) sweep(d Driver, now time.Time) {
	for _, c := range p.conns {
		if c.busy && c.timeout > 0 && now.After(c.deadline) {
			p.fail(c, d, os.ErrDeadlineExceeded)
		}
	}
}

// interrupt books every request in flight as interrupted.
func (p *Poller) interrupt(d Driver) {
	for _, c := range p.conns {
		if c.busy {
			p.drop(c)
			c.busy = false
			p.inFlight--
			d.Done(c, c.due, c.sent, time.Now(), &c.resp, ErrInterrupted)
		}
	}
}

// dueHeap orders connections waiting for their due time.
type dueHeap []*PConn

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(*PConn)) }
func (h *dueHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return c
}
