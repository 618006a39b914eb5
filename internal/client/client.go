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
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bystander-kit/bystander/internal/protocol"
	"github.com/bystander-kit/bystander/internal/request"
)

// Kind classifies a failed request.
type Kind string

// The kinds of failure.
const (
	Refused   Kind = "refused"   // nothing listens (connection refused)
	Reset     Kind = "reset"     // the peer reset the connection
	Timeout   Kind = "timeout"   // no answer within the deadline
	Closed    Kind = "closed"    // the server closed the connection before answering
	Malformed Kind = "malformed" // the answer is not HTTP/1.1 this client can read
	BadStatus Kind = "bad_status"
	Other     Kind = "other"
)

// Kinds lists every kind in a fixed order, for reports.
var Kinds = []Kind{Refused, Reset, Timeout, Closed, Malformed, BadStatus, Other}

// FirstPause is how long a connection that asks back to back waits after a
// failed answer before it asks again; each further failure in a row makes
// the pause four times longer, up to MaxPause, and an answer ends the run
// of failures (Backoff). A server that refuses, resets, closes, or answers
// what cannot be read is not spun on: 16 connections against one dialled
// 18,911 times in 3 s, leaving 12,000 sockets in TIME_WAIT; each connection
// now asks 5 times in its first second (after 0, 10, 50, 210 and 850 ms)
// and once a second after.
const (
	FirstPause = 10 * time.Millisecond
	MaxPause   = time.Second
)

// Pauses says whether a request that ended with err (r its answer, read
// whole or not) calls for a pause before the connection asks again: every
// failure does (refused, reset, closed, timeout, an answer that cannot be
// read), but a bad status on a connection the server keeps open. That one
// is an answer read whole on a connection that stays: asking again costs
// no dial and is paced by the server's answers as a 200 is; and a server
// that sheds load with a 503 (the offload queue full, a database that
// refuses) is answering the load, so a caller that paused after it would
// lower the load exactly when it is being measured.
func Pauses(r *Response, err error) bool {
	switch {
	case err == nil, errors.Is(err, ErrInterrupted):
		return false
	case KindOf(err) == BadStatus:
		return r == nil || r.Close
	}
	return true
}

// Backoff paces one connection that asks back to back (Pauses, FirstPause,
// MaxPause). The zero value has no pause. Not safe for concurrent use: the
// connection's driver owns it.
type Backoff struct {
	until time.Time
	pause time.Duration
}

// After books how the connection's request that ended at end went.
func (b *Backoff) After(r *Response, err error, end time.Time) {
	if errors.Is(err, ErrInterrupted) {
		return
	}
	if !Pauses(r, err) {
		b.pause, b.until = 0, time.Time{}
		return
	}
	b.pause = min(max(4*b.pause, FirstPause), MaxPause)
	b.until = end.Add(b.pause)
}

// Due is when a request due at due may leave: not before the pause ends.
func (b *Backoff) Due(due time.Time) time.Time {
	if b.until.After(due) {
		return b.until
	}
	return due
}

// Paused says whether the connection's last request failed and called
// for a pause (its next one asks again, maybe on a new connection).
func (b *Backoff) Paused() bool { return b.pause > 0 }

// RedialEvery spaces the requests that follow a failed answer over all of
// a tool's connections (Redials): at most 100 a second whatever --conc,
// where each connection's own Backoff alone let 64 connections dial 165
// times a second against a server that answers garbage.
const RedialEvery = 10 * time.Millisecond

// Redials is the one pace of a tool's requests after failed answers (a
// failed answer's next request often dials anew). Its zero value is ready;
// safe for concurrent use (a tool's pollers share one).
type Redials struct {
	mu   sync.Mutex
	next time.Time
}

// Due books a request after a failed answer, due at due, and says when it
// may leave: not before RedialEvery after the one booked before it.
func (r *Redials) Due(due time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next.After(due) {
		due = r.next
	}
	r.next = due.Add(RedialEvery)
	return due
}

// ErrNoAnswer is what a tool says, beside what it measured, when no
// request of its run was answered (Tally.NoAnswer).
var ErrNoAnswer = errors.New("no answer")

// Tally counts how a tool's requests ended, over its whole run, so that a
// run that got no answer says so and what it got instead. Not safe for
// concurrent use: keep one per goroutine and Merge them.
type Tally struct {
	answered int64
	failed   [8]int64 // by Kinds' order
	first    error
}

// Add books one request's end (ErrInterrupted is no end: not booked).
func (t *Tally) Add(err error) {
	switch {
	case err == nil:
		t.answered++
	case errors.Is(err, ErrInterrupted):
	default:
		k := KindOf(err)
		i := slices.Index(Kinds, k)
		if i < 0 {
			i = slices.Index(Kinds, Other)
		}
		t.failed[i]++
		if t.first == nil {
			t.first = err
		}
	}
}

// Merge adds o's counts to t's (t's first failure stays first).
func (t *Tally) Merge(o *Tally) {
	t.answered += o.answered
	for i, n := range o.failed {
		t.failed[i] += n
	}
	if t.first == nil {
		t.first = o.first
	}
}

// Answered is how many requests were answered (a 2xx or 3xx read whole).
func (t *Tally) Answered() int64 { return t.answered }

// NoAnswer is nil when some request was answered; otherwise an error
// (ErrNoAnswer) saying what the run of length took got instead, as "no
// answer in 3s: 18 malformed (first: ...)".
func (t *Tally) NoAnswer(took time.Duration) error {
	if t.answered > 0 {
		return nil
	}
	var parts []string
	for i, n := range t.failed {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, Kinds[i]))
		}
	}
	took = took.Round(100 * time.Millisecond)
	if len(parts) == 0 {
		return fmt.Errorf("%w in %s: no request ended", ErrNoAnswer, took)
	}
	return fmt.Errorf("%w in %s: %s (first: %v)", ErrNoAnswer, took, strings.Join(parts, ", "), t.first)
}

// Error is a failed request with its kind.
type Error struct {
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("client: %s: %v", e.Kind, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// KindOf classifies err (nil for no error).
func KindOf(err error) Kind {
	if err == nil {
		return ""
	}
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Kind
	}
	return classify(err)
}

func classify(err error) Kind {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return Refused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return Reset
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return Timeout
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return Closed
	}
	return Other
}

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

// parseHead reads a response head from the front of b into r and returns
// its length, or 0 when b does not hold a whole head yet. The body is the
// caller's to read (frame): r.ContentLength long (-1: not given), in
// chunks (r.Chunked), or else until the server closes.
func parseHead(b []byte, r *Response) (int, error) {
	*r = Response{Loop: -1, ContinuationLoop: -1, HandlerStart: -1, ContinuationStart: -1, BlockedNs: -1, QueuedNs: -1, ContentLength: -1}
	pos := 0
	next := func() ([]byte, bool) {
		i := bytes.IndexByte(b[pos:], '\n')
		if i < 0 {
			return nil, false
		}
		line := b[pos : pos+i+1]
		pos += i + 1
		return line, true
	}
	more := func() (int, error) {
		if len(b) >= MaxHead {
			return 0, &Error{Malformed, fmt.Errorf("%w: head over %d KiB", errMalformed, MaxHead>>10)}
		}
		return 0, nil
	}
	line, ok := next()
	if !ok {
		return more()
	}
	// "HTTP/1.1 200 OK"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' ||
		len(line) > 12 && line[12] != ' ' && line[12] != '\r' && line[12] != '\n' {
		return 0, &Error{Malformed, fmt.Errorf("%w: status line %q", errMalformed, cut(trim(line), 100))}
	}
	st, ok := atoi(line[9:12])
	if !ok || st < 100 {
		return 0, &Error{Malformed, fmt.Errorf("%w: status line %q", errMalformed, cut(trim(line), 100))}
	}
	if st == 101 {
		return 0, &Error{Malformed, fmt.Errorf("%w: 101 Switching Protocols, and this client asked for no other protocol", errMalformed)}
	}
	r.Status = int(st)
	http10 := line[7] == '0'
	r.Close = http10
	te := false
	for {
		line, ok = next()
		if !ok {
			return more()
		}
		line = trim(line)
		if len(line) == 0 {
			break
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return 0, &Error{Malformed, fmt.Errorf("%w: header line %q", errMalformed, cut(line, 100))}
		}
		name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
		var dst *int64
		switch {
		case fold(name, "content-length"):
			n, ok := atoi(value)
			if !ok || n < 0 || r.ContentLength >= 0 && int(n) != r.ContentLength {
				return 0, &Error{Malformed, fmt.Errorf("%w: Content-Length %q", errMalformed, cut(value, 40))}
			}
			r.ContentLength = int(n)
			continue
		case fold(name, "transfer-encoding"):
			// The last coding of the last such header says how the
			// body ends: chunked, or else at the close.
			te, r.Chunked = true, fold(lastToken(value), "chunked")
			continue
		case fold(name, "connection"):
			r.Close = fold(value, "close")
			continue
		case fold(name, protocol.HeaderLoop):
			dst = &r.Loop
		case fold(name, protocol.HeaderHandlerStart):
			dst = &r.HandlerStart
		case fold(name, protocol.HeaderContinuationStart):
			dst = &r.ContinuationStart
		case fold(name, protocol.HeaderContinuationLoop):
			dst = &r.ContinuationLoop
		case fold(name, protocol.HeaderBlockedNs):
			dst = &r.BlockedNs
		case fold(name, protocol.HeaderQueuedNs):
			dst = &r.QueuedNs
		default:
			continue
		}
		if n, ok := atoi(value); ok {
			*dst = n
		} else {
			return 0, &Error{Malformed, fmt.Errorf("%w: %s %q", errMalformed, name, cut(value, 40))}
		}
	}
	if te {
		// Transfer-Encoding overrides Content-Length; beside one, or in
		// an HTTP/1.0 answer, it is framing to close after (RFC 9112, 6.1
		// and 6.3).
		if r.ContentLength >= 0 || http10 {
			r.Close = true
		}
		r.ContentLength = -1
	}
	return pos, nil
}

// lastToken is the last of a comma-separated list's items, trimmed.
func lastToken(b []byte) []byte {
	if i := bytes.LastIndexByte(b, ','); i >= 0 {
		b = b[i+1:]
	}
	return bytes.TrimSpace(b)
}

func trim(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

func atoi(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// fold compares ASCII case-insensitively.
func fold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// Target is a parsed http:// URL: where to connect and what to ask for.
type Target struct {
	Addr          string // host:port
	RequestTarget string // path and query
}

// ParseTarget reads an http:// URL. Unless allowRemote, the host must be a
// loopback address or localhost: the kit loads its own machine only.
func ParseTarget(raw string, allowRemote bool) (Target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Target{}, fmt.Errorf("client: target %q: %w", redact(raw), err)
	}
	if u.User != nil {
		return Target{}, fmt.Errorf("client: target %q: %w", u.Redacted(), ErrCredentials)
	}
	if strings.EqualFold(u.Scheme, "https") {
		return Target{}, fmt.Errorf("client: target %q: %w", u.Redacted(), ErrHTTPS)
	}
	if u.Scheme != "http" || u.Host == "" {
		return Target{}, fmt.Errorf("client: target %q: want http://host:port/path", raw)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "80"
	}
	if !allowRemote && !IsLoopback(host) {
		return Target{}, fmt.Errorf("client: target %q is not a loopback address: the kit loads this machine only", raw)
	}
	rt := u.EscapedPath()
	if rt == "" {
		rt = "/"
	}
	if u.RawQuery != "" {
		rt += "?" + u.RawQuery
	}
	addr := net.JoinHostPort(host, port)
	// What the request line will carry, checked as every request is: a
	// URL such as http://h/b?c d parses, and would send a malformed line.
	if _, err := request.New(addr, "GET", rt, nil, nil); err != nil {
		return Target{}, fmt.Errorf("client: target %q: %w", u.Redacted(), err)
	}
	return Target{Addr: addr, RequestTarget: rt}, nil
}

// ErrCredentials refuses a URL with a user name or password in it: the kit
// sends none, and everything a run writes (results, run.json, the report)
// is made to be shared.
var ErrCredentials = errors.New("credentials in the URL are refused: the kit sends none, and a run's files are made to be shared; give the URL without user:password@")

// ErrHTTPS refuses an https:// URL, saying what to give instead.
var ErrHTTPS = errors.New("https:// is refused: the kit speaks plain HTTP/1.1 on loopback; give the service's plain http:// port (with TLS ended in front of it if it has to be)")

// redact hides what lies between "//" and the last "@" of an URL that
// does not parse, so that an error never repeats a password.
func redact(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "//")
	if !ok {
		return raw
	}
	host, path, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(host, "@"); i >= 0 {
		host = "xxxxx@" + host[i+1:]
	}
	if path != "" || strings.Contains(rest, "/") {
		host += "/" + path
	}
	return scheme + "//" + host
}

// IsLoopback says whether host (a name or an address) is this machine's
// loopback: localhost or a loopback IP.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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
