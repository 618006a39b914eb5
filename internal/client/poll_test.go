package client

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bystander-kit/bystander/internal/request"
)

// echoServer answers every whole request on every connection with ans.
func echoServer(t *testing.T, ans string) string {
	return heldServer(t, ans, func(int, int) time.Duration { return 0 })
}

// book is a driver for tests: each connection sends n requests back to
// back (or on a schedule every `every`), and every end is kept.
type book struct {
	n      int
	every  time.Duration
	start  time.Time
	sent   []int
	ends   []booked
	onDone func(c *PConn, err error)
}

type booked struct {
	conn            int
	due, sent, done time.Time
	r               Response
	err             error
}

func (b *book) Next(c *PConn, now time.Time) (time.Time, bool) {
	for len(b.sent) <= c.ID {
		b.sent = append(b.sent, 0)
	}
	if b.sent[c.ID] >= b.n {
		return time.Time{}, false
	}
	k := b.sent[c.ID]
	b.sent[c.ID]++
	if b.every > 0 {
		return b.start.Add(time.Duration(k) * b.every), true
	}
	return now, true
}

func (b *book) Send(*PConn, time.Time) {}

func (b *book) Done(c *PConn, due, sent, done time.Time, r *Response, err error) {
	b.ends = append(b.ends, booked{c.ID, due, sent, done, *r, err})
	if b.onDone != nil {
		b.onDone(c, err)
	}
}

// drive dials p's connections and runs them n requests each, back to
// back, failing t unless every request was booked.
func drive(t *testing.T, p *Poller, n int) *book {
	t.Helper()
	if err := p.Dial(); err != nil {
		t.Fatal(err)
	}
	b := &book{n: n}
	if err := p.Run(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if len(b.ends) != n*len(p.conns) {
		t.Fatalf("poller: %d booked, want %d", len(b.ends), n*len(p.conns))
	}
	return b
}

func newPoller(t *testing.T) *Poller {
	t.Helper()
	p, err := NewPoller()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestPollerClosedLoop: many connections, each its requests back to back,
// every answer read whole (a body larger than the buffer too), one dial each.
func TestPollerClosedLoop(t *testing.T) {
	for _, body := range []int{5, 100000} {
		ans := "HTTP/1.1 200 OK\r\nX-Loop: 3\r\nX-Blocked-Ns: 5070000\r\nContent-Length: " + itoa(body) + "\r\n\r\n" + strings.Repeat("b", body)
		addr := echoServer(t, ans)
		p := newPoller(t)
		for range 8 {
			p.Add(addr, "/fast", 5*time.Second)
		}
		if err := p.Dial(); err != nil {
			t.Fatal(err)
		}
		b := &book{n: 50}
		if err := p.Run(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		if len(b.ends) != 8*50 {
			t.Fatalf("body %d: %d requests booked, want %d", body, len(b.ends), 8*50)
		}
		for _, e := range b.ends {
			if e.err != nil || e.r.Status != 200 || e.r.Loop != 3 || e.r.BlockedNs != 5070000 || e.r.ContentLength != body {
				t.Fatalf("body %d: %+v", body, e)
			}
			if e.sent.Before(e.due) || e.done.Before(e.sent) {
				t.Fatalf("body %d: times out of order: %+v", body, e)
			}
		}
		for _, c := range p.conns {
			if c.Dials != 1 {
				t.Fatalf("body %d: connection %d dialled %d times", body, c.ID, c.Dials)
			}
		}
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// TestPollerSchedule: requests on a schedule leave at their due time,
// never before, and every due request is booked once with its due time.
func TestPollerSchedule(t *testing.T) {
	addr := echoServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	p := newPoller(t)
	for range 3 {
		p.Add(addr, "/fast", 5*time.Second)
	}
	if err := p.Dial(); err != nil {
		t.Fatal(err)
	}
	b := &book{n: 20, every: 5 * time.Millisecond, start: time.Now().Add(10 * time.Millisecond)}
	if err := p.Run(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if len(b.ends) != 60 {
		t.Fatalf("%d booked, want 60", len(b.ends))
	}
	seen := map[[2]int64]bool{}
	for _, e := range b.ends {
		if e.err != nil {
			t.Fatal(e.err)
		}
		if e.sent.Before(e.due) {
			t.Fatalf("sent %s before its due time", e.due.Sub(e.sent))
		}
		k := [2]int64{int64(e.conn), e.due.UnixNano()}
		if seen[k] {
			t.Fatalf("due time booked twice: %+v", e)
		}
		seen[k] = true
	}
}

// TestPollerErrorKinds: every failure the blocking client classifies, the
// poller classifies the same, and the connection is redialled after it.
func TestPollerErrorKinds(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	cases := []struct {
		name string
		addr string
		want Kind
	}{
		{"closed", rawServer(t, func(net.Conn) {}), Closed},
		{"reset", rawServer(t, func(c net.Conn) { c.(*net.TCPConn).SetLinger(0) }), Reset},
		{"timeout", rawServer(t, func(net.Conn) { time.Sleep(time.Second) }), Timeout},
		{"garbage", rawServer(t, func(c net.Conn) { io.WriteString(c, "SSH-2.0-OpenSSH\r\n\r\n") }), Malformed},
		{"bad header", rawServer(t, func(c net.Conn) { io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Loop: two\r\nContent-Length: 0\r\n\r\n") }), Malformed},
		{"bad chunk", rawServer(t, func(c net.Conn) { io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\n") }), Malformed},
		{"short body", rawServer(t, func(c net.Conn) { io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc") }), Closed},
		{"huge head", rawServer(t, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Pad: "+strings.Repeat("a", MaxHead)+"\r\nContent-Length: 0\r\n\r\n")
		}), Malformed},
		{"404", rawServer(t, func(c net.Conn) { io.WriteString(c, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n") }), BadStatus},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPoller(t)
			p.Add(tc.addr, "/fast", 300*time.Millisecond)
			b := drive(t, p, 2)
			if e := b.ends[0]; KindOf(e.err) != tc.want {
				t.Fatalf("kind %q (%v), want %q", KindOf(e.err), e.err, tc.want)
			}
			// A failure closes the connection, so the second request goes
			// on a new one, and fails the same; a 404 keeps its connection
			// (the second request then finds it closed by rawServer: closed,
			// or reset when the close came after the request arrived).
			want, dials := []Kind{tc.want}, 2
			if tc.want == BadStatus {
				want, dials = []Kind{Closed, Reset}, 1
			}
			if e := b.ends[1]; !slices.Contains(want, KindOf(e.err)) {
				t.Fatalf("second: kind %q (%v), want one of %q", KindOf(e.err), e.err, want)
			}
			if d := p.conns[0].Dials; d != dials {
				t.Fatalf("%d dials, want %d", d, dials)
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		p := newPoller(t)
		p.Add(dead, "/fast", 300*time.Millisecond)
		if err := p.Dial(); KindOf(err) != Refused {
			t.Fatalf("dial: %v, want refused", err)
		}
		b := &book{n: 3}
		if err := p.Run(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		if len(b.ends) != 3 || KindOf(b.ends[2].err) != Refused {
			t.Fatalf("%+v", b.ends)
		}
	})
}

// TestPollerStop: Stop (or the context's end) cuts the requests in flight,
// booked as interrupted, and Run returns at once.
func TestPollerStop(t *testing.T) {
	addr := rawServer(t, func(net.Conn) { time.Sleep(5 * time.Second) })
	p := newPoller(t)
	for range 4 {
		p.Add(addr, "/fast", time.Minute)
	}
	if err := p.Dial(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	b := &book{n: 5}
	start := time.Now()
	if err := p.Run(ctx, b); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("Run returned %s after the cancel", d)
	}
	if len(b.ends) != 4 {
		t.Fatalf("%d booked, want the 4 in flight", len(b.ends))
	}
	for _, e := range b.ends {
		if e.err != ErrInterrupted {
			t.Fatalf("%v, want interrupted", e.err)
		}
	}
}

// TestPollerAllocs: requests after the first allocate nothing (the server
// here is a plain loop over a fixed answer, so that its allocations are
// not counted).
func TestPollerAllocs(t *testing.T) {
	addr := plainServer(t, "HTTP/1.1 200 OK\r\nX-Loop: 1\r\nContent-Length: 5\r\n\r\nfast\n")
	p := newPoller(t)
	p.Add(addr, "/fast", 5*time.Second)
	if err := p.Dial(); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	run := func(k int) {
		b := &counter{n: k, count: &n}
		if err := p.Run(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	run(10)
	allocs := testing.AllocsPerRun(3, func() { run(1000) })
	if allocs > 20 { // Run's own few (its context hook), not one per request
		t.Errorf("%v allocations for 1000 requests", allocs)
	}
	if n.Load() < 3010 {
		t.Fatalf("%d answered", n.Load())
	}
}

type counter struct {
	n     int
	left  int
	count *atomic.Int64
	init  bool
}

func (c *counter) Next(_ *PConn, now time.Time) (time.Time, bool) {
	if !c.init {
		c.left, c.init = c.n, true
	}
	c.left--
	return now, c.left >= 0
}
func (c *counter) Send(*PConn, time.Time) {}
func (c *counter) Done(_ *PConn, _, _, _ time.Time, _ *Response, err error) {
	if err == nil {
		c.count.Add(1)
	}
}

// FuzzParseHead: whatever bytes come, parsing never panics, a head found
// is inside the bytes, and the same bytes cut short are never read as a
// different whole head.
func FuzzParseHead(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nX-Loop: 1\r\nContent-Length: 5\r\n\r\nfast\n"))
	f.Add([]byte("HTTP/1.0 404 Not Found\nConnection: close\nContent-Length: 0\n\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Response
		n, err := parseHead(b, &r)
		if n < 0 || n > len(b) || (err != nil && n != 0) {
			t.Fatalf("n %d err %v for %d bytes", n, err, len(b))
		}
		if n > 0 {
			if r.ContentLength < -1 || r.Status < 100 || r.Status > 999 || r.Status == 101 || (r.Chunked && r.ContentLength >= 0) {
				t.Fatalf("head of %d bytes read as %+v", n, r)
			}
			for k := range n {
				if m, err := parseHead(b[:k], &r); err == nil && m != 0 {
					t.Fatalf("a head of %d bytes found in the first %d of a head of %d", m, k, n)
				}
			}
		}
	})
}

// heldServer answers each whole request (one read in two pieces is still
// one request) with ans after hold(connection index, request index).
func heldServer(t *testing.T, ans string, hold func(conn, req int) time.Duration) string {
	t.Helper()
	return serveEach(t, loopback(t), func(i int, c net.Conn) {
		buf := make([]byte, 4096)
		var pending []byte
		for k := 0; ; {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			pending = append(pending, buf[:n]...)
			for {
				end := strings.Index(string(pending), "\r\n\r\n")
				if end < 0 {
					break
				}
				pending = pending[end+4:]
				time.Sleep(hold(i, k))
				k++
				if _, err := io.WriteString(c, ans); err != nil {
					return
				}
			}
		}
	})
}

// phased is a schedule per connection: request k of connection i due at
// start + phase[i] + k x every.
type phased struct {
	book
	phase []time.Duration
}

func (b *phased) Next(c *PConn, now time.Time) (time.Time, bool) {
	due, ok := b.book.Next(c, now)
	return due.Add(b.phase[c.ID]), ok
}

// TestPollerReadOnSchedule: answers read on the schedule's wake-ups are
// timed by when they came (never before the server could have sent them,
// never after they were booked), and a connection whose answer is awaited
// past its next due time is read, and sent again, when the answer comes,
// not at another connection's next due time.
func TestPollerReadOnSchedule(t *testing.T) {
	const hold = 3 * time.Millisecond
	addr := heldServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", func(conn, req int) time.Duration {
		if conn == 0 && req == 1 {
			return 500 * time.Millisecond // connection 0's second answer is held up
		}
		return hold
	})
	p := newPoller(t)
	for range 2 {
		p.Add(addr, "/fast", 5*time.Second)
	}
	const every = 400 * time.Millisecond
	if err := p.ReadOnSchedule(every); err != nil {
		t.Fatal(err)
	}
	if err := p.Dial(); err != nil {
		t.Fatal(err)
	}
	b := &phased{book: book{n: 4, every: every, start: time.Now().Add(20 * time.Millisecond)}, phase: []time.Duration{0, 10 * time.Millisecond}}
	var at []time.Time
	b.onDone = func(*PConn, error) { at = append(at, time.Now()) }
	// One processor: the poller's wait then goes through Go's system call
	// path, which the runtime's preemption signal does not cut short, so
	// nothing but the poller's own rule wakes it for the held-up answer.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	if err := p.Run(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if len(b.ends) != 8 {
		t.Fatalf("%d booked, want 8", len(b.ends))
	}
	var first []booked
	for i, e := range b.ends {
		if e.err != nil {
			t.Fatal(e.err)
		}
		if e.done.Sub(e.sent) < hold {
			for _, e := range b.ends {
				t.Logf("conn %d due %s sent %s done %s", e.conn, e.due.Sub(b.start), e.sent.Sub(b.start), e.done.Sub(b.start))
			}
			t.Fatalf("answer %d timed %s after its send; the server held it %s", i, e.done.Sub(e.sent), hold)
		}
		if e.done.After(at[i]) {
			t.Fatalf("answer timed %s after it was booked", e.done.Sub(at[i]))
		}
		if e.conn == 0 {
			first = append(first, e)
		}
	}
	// Connection 0's second answer came about 500 ms after its send, past
	// its third due time (400 ms later): the third left when it came, not at
	// connection 1's next due time (310 ms after that).
	if gap := first[2].sent.Sub(first[1].done); gap > 250*time.Millisecond {
		t.Fatalf("the held-up connection's next request left %s after its answer came", gap)
	}
}

// TestPollerRunAfterStop: a poller stopped (the run was cut short) sends
// nothing more when run again, and returns at once.
func TestPollerRunAfterStop(t *testing.T) {
	var got atomic.Int64
	addr := heldServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", func(int, int) time.Duration { got.Add(1); return 0 })
	p := newPoller(t)
	p.Add(addr, "/fast", time.Second)
	if err := p.Dial(); err != nil {
		t.Fatal(err)
	}
	p.Stop()
	b := &book{n: 3}
	if err := p.Run(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := got.Load(); n != 0 || len(b.ends) != 0 {
		t.Fatalf("the server got %d requests, %d booked, after Stop", n, len(b.ends))
	}
}

// TestUse: connections that Use a mix send its requests in turn, each
// connection from its own start (Fork), byte for byte as rendered, and
// say which they sent; Retarget ends the mix.
func TestUse(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.RequestURI()+" "+string(b))
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	dir := t.TempDir()
	file := filepath.Join(dir, "targets.txt")
	if err := os.WriteFile(filepath.Join(dir, "b.json"), []byte(`{"u":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("GET /a\n\nPOST /b\nContent-Type: application/json\n@b.json\n\nDELETE /c?x=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := request.Parse("@"+file, addr)
	if err != nil {
		t.Fatal(err)
	}
	mix := spec.Mix()

	p, err := NewPoller()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var labels [2][]string
	for i := range 2 {
		p.Add(addr, "/never", 5*time.Second).Use(mix.Fork(i))
	}
	b := &book{n: 3, onDone: func(c *PConn, err error) {
		if err != nil {
			t.Errorf("conn %d: %v", c.ID, err)
		}
		labels[c.ID] = append(labels[c.ID], c.Sent().Label)
	}}
	if err := p.Run(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	want := []string{"GET /a", `POST /b (+body 7 B)`, "DELETE /c?x=1"}
	if !slices.Equal(labels[0], want) || !slices.Equal(labels[1], append(want[1:], want[0])) {
		t.Errorf("sent %q and %q, want %q from the first and from the second", labels[0], labels[1], want)
	}
	mu.Lock()
	slices.Sort(got)
	mu.Unlock()
	wantGot := []string{"DELETE /c?x=1 ", "DELETE /c?x=1 ", "GET /a ", "GET /a ", `POST /b {"u":1}`, `POST /b {"u":1}`}
	if !slices.Equal(got, wantGot) {
		t.Errorf("the server read %q, want %q", got, wantGot)
	}

	c := New(addr, "/never", 5*time.Second)
	defer c.Close()
	c.Use(mix.Fork(2))
	var r Response
	for _, w := range []string{"DELETE /c?x=1", "GET /a"} {
		if err := c.Do(&r); err != nil || c.Sent().Label != w {
			t.Fatalf("Conn sent %v (%v), want %s", c.Sent(), err, w)
		}
	}
	c.Retarget("/d")
	if err := c.Do(&r); err != nil || c.Sent() != nil {
		t.Fatalf("after Retarget: %v, sent %v", err, c.Sent())
	}
	mu.Lock()
	defer mu.Unlock()
	if last := got[len(got)-1]; last != "GET /d " {
		t.Errorf("after Retarget the server read %q, want GET /d", last)
	}
}

// stalledServer answers every request on each connection it accepts with
// 200 and tells got how many body bytes it read (all of them 'b'), after
// not reading the connection at all for stall from its first bytes: a
// server whose loop is held. Its sockets take little (a small receive buffer and segment, as a
// server may set them), so the client's socket cannot hold a large request
// whole while nobody reads it.
func stalledServer(t *testing.T, stall time.Duration, got chan<- int) string {
	t.Helper()
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		if cerr := rc.Control(func(fd uintptr) {
			if err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4096); err == nil {
				err = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG, 536)
			}
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return serveEach(t, ln, func(_ int, c net.Conn) {
		// The stall begins when the request's first bytes come
		// (looked at, not read), however late the client sends.
		rc, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			return
		}
		var one [1]byte
		if err := rc.Read(func(fd uintptr) bool {
			_, _, err := unix.Recvfrom(int(fd), one[:], unix.MSG_PEEK)
			return err != unix.EAGAIN
		}); err != nil {
			return
		}
		time.Sleep(stall)
		r := bufio.NewReader(c)
		for {
			length := -1
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if line == "\r\n" {
					break
				}
				if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
					length, _ = strconv.Atoi(strings.TrimSpace(v))
				}
			}
			body := make([]byte, max(length, 0))
			if _, err := io.ReadFull(r, body); err != nil {
				return
			}
			if bytes.Count(body, []byte("b")) != len(body) {
				length = -2
			}
			got <- length
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
				return
			}
		}
	})
}

// TestPollerBodyStalledServer: a request as large as a body may be
// (request.MaxBody) to a server that does not read for a while is sent
// whole once the server reads again, and its wait is the stall, booked as
// an answer: a socket that took only part of it at first (a stalled
// server's does not read it) is written again when it takes more, not
// counted a failed request. Both ways of reading the answers.
func TestPollerBodyStalledServer(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big"), bytes.Repeat([]byte("b"), request.MaxBody), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "targets.txt")
	if err := os.WriteFile(file, []byte("POST /up\n@big\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const stall = 300 * time.Millisecond
	for _, lazy := range []time.Duration{0, 100 * time.Millisecond} {
		t.Run(fmt.Sprintf("lazy %s", lazy), func(t *testing.T) {
			got := make(chan int, 4)
			addr := stalledServer(t, stall, got)
			spec, err := request.Parse("@"+file, addr)
			if err != nil {
				t.Fatal(err)
			}
			p := newPoller(t)
			p.Add(addr, "/never", 10*time.Second).Use(spec.Mix())
			if lazy > 0 {
				if err := p.ReadOnSchedule(lazy); err != nil {
					t.Fatal(err)
				}
			}
			b := drive(t, p, 2)
			for i, e := range b.ends {
				if e.err != nil || e.r.Status != 200 {
					t.Fatalf("request %d: status %d, %v", i, e.r.Status, e.err)
				}
			}
			if w := b.ends[0].done.Sub(b.ends[0].sent); w < stall {
				t.Errorf("the first request's wait %s, under the server's %s stall", w, stall)
			}
			for i := range 2 {
				if n := <-got; n != request.MaxBody {
					t.Errorf("request %d: the server read a body of %d bytes, want %d", i, n, request.MaxBody)
				}
			}
		})
	}
}
