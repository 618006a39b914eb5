// Package client is the kit's raw HTTP/1.1 keep-alive client: one request
// at a time per connection, the protocol's timing headers read into fields,
// bodies read and dropped however they are framed (a length, chunks, or
// until the close: frame), no allocation per request.
//
// Conn is one connection for one goroutine, with blocking calls: what the
// probers' placing and checks use. Poller drives many connections from one
// goroutine through its own epoll set, a write and a read per request: what
// the load generator and the per-connection prober measure with. Go's
// net/http client costs several times more CPU per request (measured on a
// 2-core machine at 64 keep-alive connections on /fast: about 61 us of
// generator CPU per request, against 10-13 us for wrk and less for a
// Poller: docs/measurements.md).
//
// Every failure is classified (Kind) so callers can count it, and a
// connection the server closed is redialled on the next request.
package client

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/bystander-kit/bystander/internal/request"
)

// Response is what one request returned. Timing fields are -1 when the
// header was absent.
type Response struct {
	Status            int
	ContentLength     int
	Loop              int64 // X-Loop
	ContinuationLoop  int64 // X-Continuation-Loop
	HandlerStart      int64 // X-Handler-Start, unix ns
	ContinuationStart int64 // X-Continuation-Start, unix ns
	BlockedNs         int64 // X-Blocked-Ns
	QueuedNs          int64 // X-Queued-Ns
	Close             bool  // the server will close the connection
	Chunked           bool  // the body came in chunks (Transfer-Encoding: chunked)
}

// FirstLineMax is how much of the first line of a failed answer's body
// the error keeps.
const FirstLineMax = 200

// Conn is one keep-alive connection to a server. It is not safe for
// concurrent use: a worker owns it.
type Conn struct {
	addr    string
	req     []byte
	mix     *request.Mix  // Use: the requests sent in turn, or nil
	wire    *request.Wire // the request last sent from mix
	timeout time.Duration
	c       net.Conn
	// buf[r:w] is what was read and not yet consumed.
	buf      []byte
	r, w     int
	body     frame
	headOnly bool // the request is a HEAD: its answers have no body
	// Dials counts connections opened, the first one included.
	Dials int

	mu          sync.Mutex // guards c's replacement and interrupted, for Interrupt
	interrupted bool
}

// ErrInterrupted is returned by requests cut short by Interrupt: the run
// ended, the request did not fail.
var ErrInterrupted = errors.New("client: interrupted")

// MaxConns is the most keep-alive connections one of the kit's load
// generators opens (loadgen --conc): every caller count the kit plans is
// bounded by it.
const MaxConns = 10000

// New returns a connection (not yet dialled) that sends GET target to addr
// (host:port) with the given per-request timeout.
func New(addr, target string, timeout time.Duration) *Conn {
	c := &Conn{addr: addr, timeout: timeout}
	c.Retarget(target)
	return c
}

// Retarget makes the connection's next requests GET target instead (the
// same server: a path and query, as ParseTarget checked it), ending Use.
func (c *Conn) Retarget(target string) {
	c.req, c.mix, c.wire, c.headOnly = getWire(c.addr, target), nil, nil, false
}

// Use makes the connection send m's requests, each in its turn (a user's
// REQUEST: internal/request), instead of its GET. m is the connection's
// own (request.Mix.Fork): it is not guarded.
func (c *Conn) Use(m *request.Mix) { c.mix = m }

// Sent is the request of m (Use) the connection sent last; nil before any,
// or without Use.
func (c *Conn) Sent() *request.Wire { return c.wire }

// getWire is GET target to addr as the kit sends it: rendered by
// internal/request, the one way the kit makes a request's bytes.
func getWire(addr, target string) []byte {
	r := request.Request{Method: "GET", Target: target, Host: addr}
	return r.Wire()
}

// Dial opens the connection now if it is not open.
func (c *Conn) Dial() error {
	if c.c != nil {
		return nil
	}
	nc, err := net.DialTimeout("tcp", c.addr, c.timeout)
	if err != nil {
		if c.isInterrupted() {
			return ErrInterrupted
		}
		return &Error{classify(err), err}
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c.Dials++
	c.mu.Lock()
	c.c = nc
	c.mu.Unlock()
	if c.buf == nil {
		c.buf = make([]byte, 4096)
	}
	c.r, c.w = 0, 0
	return nil
}

// Close closes the connection; the next Do redials.
func (c *Conn) Close() error {
	if c.c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.c.Close()
	c.c = nil
	return err
}

func (c *Conn) isInterrupted() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.interrupted
}

// Do sends the request and reads the answer into r. A status other than 2xx
// or 3xx is returned in r with an Error of kind BadStatus that says the
// first line of its body. After any other error the connection is closed
// and the next Do redials.
func (c *Conn) Do(r *Response) error {
	if err := c.Dial(); err != nil {
		return err
	}
	c.mu.Lock()
	if c.interrupted {
		c.mu.Unlock()
		return ErrInterrupted
	}
	if c.timeout > 0 {
		_ = c.c.SetDeadline(time.Now().Add(c.timeout))
	}
	c.mu.Unlock()
	if c.mix != nil {
		c.wire = c.mix.Next()
		c.req, c.headOnly = c.wire.Bytes, c.wire.Head
	}
	if _, err := c.c.Write(c.req); err != nil {
		c.Close()
		if c.isInterrupted() {
			return ErrInterrupted
		}
		return &Error{classify(err), err}
	}
	err := c.read(r)
	if err != nil {
		c.Close()
		if c.isInterrupted() {
			return ErrInterrupted
		}
		return err
	}
	if r.Close {
		c.Close()
	}
	if failed(r.Status) {
		return c.body.badStatus(r.Status)
	}
	return nil
}

var errMalformed = errors.New("malformed response")

// MaxHead is the longest response head (status line and headers) the
// client reads; a longer one is malformed.
const MaxHead = 16 << 10

// read reads one answer into r: its head (after any interim 1xx ones),
// then its body, dropped (see frame).
func (c *Conn) read(r *Response) error {
	for {
		n, err := parseHead(c.buf[c.r:c.w], r)
		if err != nil {
			return err
		}
		if n > 0 {
			c.r += n
			if interim(r.Status) {
				continue
			}
			break
		}
		if err := c.fill(); err != nil {
			return err
		}
	}
	c.body.start(r, c.headOnly)
	for {
		n, done, err := c.body.step(c.buf[c.r:c.w])
		c.r += n
		if err != nil || done {
			return err
		}
		if c.r == c.w {
			c.r, c.w = 0, 0
		}
		if err := c.fill(); err != nil {
			if c.body.closes() && errors.Is(err, io.EOF) {
				return nil // the close ends the body
			}
			return err
		}
	}
}

// fill reads what the socket has into the buffer, making room first:
// what was consumed is dropped, and a head that does not fit yet grows the
// buffer up to MaxHead.
func (c *Conn) fill() error {
	c.buf, c.r, c.w = room(c.buf, c.r, c.w)
	n, err := c.c.Read(c.buf[c.w:])
	c.w += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return &Error{classify(err), err}
}

// room makes space at the end of buf[r:w] for a read: it moves the unread
// bytes to the front and, when they fill the buffer, doubles it (what is
// kept unread is a head or a line of a chunked body, and parseHead and
// frame refuse those past MaxHead bytes, so it never grows past twice that).
func room(buf []byte, r, w int) ([]byte, int, int) {
	if r > 0 {
		w = copy(buf, buf[r:w])
		r = 0
	}
	if w == len(buf) {
		nb := make([]byte, 2*len(buf))
		copy(nb, buf[:w])
		buf = nb
	}
	return buf, r, w
}

// Interrupt makes a request in flight on another goroutine fail at once
// (as a timeout); the connection is then closed by its owner. Safe to call
// from any goroutine.
func (c *Conn) Interrupt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.interrupted = true
	if c.c != nil {
		_ = c.c.SetDeadline(time.Unix(1, 0))
	}
}
