package client

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestDoReadsProtocolHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Loop", "2")
		h.Set("X-Handler-Start", "1796025321050679074")
		h.Set("X-Continuation-Start", "1796025321055679074")
		h.Set("X-Continuation-Loop", "2")
		h.Set("X-Blocked-Ns", "5070000")
		h.Set("X-Queued-Ns", "0")
		h.Set("Content-Length", "3000")
		if r.URL.Path == "/missing" {
			w.WriteHeader(404)
		}
		_, _ = io.WriteString(w, strings.Repeat("b", 3000))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	c := New(addr, "/fast", 5*time.Second)
	defer c.Close()
	var r Response
	for range 3 {
		if err := c.Do(&r); err != nil {
			t.Fatal(err)
		}
	}
	want := Response{Status: 200, ContentLength: 3000, Loop: 2, ContinuationLoop: 2, HandlerStart: 1796025321050679074,
		ContinuationStart: 1796025321055679074, BlockedNs: 5070000, QueuedNs: 0}
	if r != want {
		t.Fatalf("got %+v\nwant %+v", r, want)
	}
	if c.Dials != 1 {
		t.Fatalf("%d dials for 3 keep-alive requests", c.Dials)
	}
	bad := New(addr, "/missing", 5*time.Second)
	if err := bad.Do(&r); KindOf(err) != BadStatus || r.Status != 404 {
		t.Fatalf("404: %v %+v", err, r)
	}
}

// TestDoAllocs: the request path allocates nothing (the server here is a
// plain loop over a fixed answer, so that its allocations are not counted).
func TestDoAllocs(t *testing.T) {
	addr := plainServer(t, "HTTP/1.1 200 OK\r\nX-Loop: 1\r\nX-Handler-Start: 17\r\nContent-Length: 5\r\n\r\nfast\n")
	c := New(addr, "/fast", 5*time.Second)
	defer c.Close()
	var r Response
	if err := c.Do(&r); err != nil || r.Loop != 1 {
		t.Fatal(err, r)
	}
	if allocs := testing.AllocsPerRun(200, func() { _ = c.Do(&r) }); allocs > 0 {
		t.Errorf("%v allocations per request, want 0", allocs)
	}
}

// plainServer answers every read of one connection with ans: a plain loop
// that allocates nothing per request, so the allocation tests count only
// the client's.
func plainServer(t *testing.T, ans string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	b := []byte(ans)
	go func() {
		sc, err := ln.Accept()
		if err != nil {
			return
		}
		defer sc.Close()
		buf := make([]byte, 4096)
		for {
			if _, err := sc.Read(buf); err != nil {
				return
			}
			if _, err := sc.Write(b); err != nil {
				return
			}
		}
	}()
	return ln.Addr().String()
}

// rawServer answers every connection with fn.
func rawServer(t *testing.T, fn func(net.Conn)) string {
	return serveEach(t, loopback(t), func(_ int, c net.Conn) {
		buf := make([]byte, 4096)
		_, _ = c.Read(buf)
		fn(c)
	})
}

// loopback is a listener on a free loopback port, closed with the test.
func loopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// serveEach serves every connection ln accepts with fn, each on its own
// goroutine and closed after it; i counts them from 0 in the order
// accepted. It returns ln's address.
func serveEach(t *testing.T, ln net.Listener, fn func(i int, c net.Conn)) string {
	t.Helper()
	go func() {
		for i := 0; ; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				fn(i, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func TestErrorKinds(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	cases := []struct {
		name string
		addr string
		want Kind
	}{
		{"refused", dead, Refused},
		{"closed", rawServer(t, func(net.Conn) {}), Closed},
		{"reset", rawServer(t, func(c net.Conn) { c.(*net.TCPConn).SetLinger(0) }), Reset},
		{"timeout", rawServer(t, func(net.Conn) { time.Sleep(time.Second) }), Timeout},
		{"garbage", rawServer(t, func(c net.Conn) { io.WriteString(c, "SSH-2.0-OpenSSH\r\n\r\n") }), Malformed},
		{"bad header", rawServer(t, func(c net.Conn) { io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Loop: two\r\nContent-Length: 0\r\n\r\n") }), Malformed},
		{"bad chunk", rawServer(t, func(c net.Conn) { io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\n") }), Malformed},
		{"short body", rawServer(t, func(c net.Conn) { io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc") }), Closed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := New(tc.addr, "/fast", 300*time.Millisecond)
			var r Response
			err := c.Do(&r)
			if KindOf(err) != tc.want {
				t.Fatalf("kind %q (%v), want %q", KindOf(err), err, tc.want)
			}
		})
	}
}

// TestRedial: a server that closes after each answer is redialled, counted.
func TestRedial(t *testing.T) {
	addr := rawServer(t, func(c net.Conn) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
	})
	c := New(addr, "/fast", time.Second)
	var r Response
	for range 3 {
		if err := c.Do(&r); err != nil {
			t.Fatal(err)
		}
	}
	if c.Dials != 3 {
		t.Fatalf("dials %d, want 3", c.Dials)
	}
}

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		raw, addr, rt string
		ok            bool
	}{
		{"http://127.0.0.1:8081/slow", "127.0.0.1:8081", "/slow", true},
		{"http://localhost:8081/slow?block=20ms", "localhost:8081", "/slow?block=20ms", true},
		{"http://[::1]:8082", "[::1]:8082", "/", true},
		{"http://127.0.0.2/fast", "127.0.0.2:80", "/fast", true},
		{"https://127.0.0.1:8081/slow", "", "", false},
		{"127.0.0.1:8081/slow", "", "", false},
		{"http://10.0.0.1:8081/slow", "", "", false},
		{"http://example.com/slow", "", "", false},
		{"http://%zz", "", "", false},
		{"http://user:secret@127.0.0.1:8081/slow", "", "", false},
		{"http://user@127.0.0.1:8081/slow", "", "", false},
		// url.Parse lets a space through the query: the request line
		// would be "GET /b?c d HTTP/1.1", which no server reads.
		{"http://127.0.0.1:8081/b?c d", "", "", false},
		{"http://127.0.0.1:8081/b?c\x01", "", "", false},
	} {
		got, err := ParseTarget(tc.raw, false)
		if (err == nil) != tc.ok || (tc.ok && (got.Addr != tc.addr || got.RequestTarget != tc.rt)) {
			t.Errorf("%q: %+v %v", tc.raw, got, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: the error repeats the password: %v", tc.raw, err)
		}
	}
	if _, err := ParseTarget("http://10.0.0.1:8081/slow", true); err != nil {
		t.Errorf("allowRemote: %v", err)
	}
	// https:// is said for what it is, with what to give instead.
	if _, err := ParseTarget("https://127.0.0.1:8443/health", false); err == nil || !strings.Contains(err.Error(), "plain HTTP") || !strings.Contains(err.Error(), "http://") {
		t.Errorf("https: %v", err)
	}
}

// TestBackoff: every failure pauses the connection, longer while the
// failures go on (up to MaxPause), but a bad status on a connection the
// server keeps open; an answer ends the pause; an interrupted request
// changes nothing.
func TestBackoff(t *testing.T) {
	t0 := time.Unix(1000, 0)
	bad := &Error{BadStatus, errors.New("status 503")}
	kept, closed := &Response{Status: 503}, &Response{Status: 503, Close: true}
	var b Backoff
	if due := b.Due(t0); !due.Equal(t0) {
		t.Fatalf("no failure yet, due %s late", due.Sub(t0))
	}
	b.After(kept, bad, t0)
	if due := b.Due(t0); !due.Equal(t0) {
		t.Fatalf("a 503 on a kept connection paused it %s", due.Sub(t0))
	}
	var pauses []time.Duration
	for _, err := range []error{&Error{Malformed, errMalformed}, &Error{Refused, syscall.ECONNREFUSED}, &Error{Closed, io.EOF},
		&Error{Reset, syscall.ECONNRESET}, &Error{Timeout, os.ErrDeadlineExceeded}, bad, ErrInterrupted} {
		r := kept
		if KindOf(err) == BadStatus {
			r = closed
		}
		b.After(r, err, t0)
		pauses = append(pauses, b.Due(t0).Sub(t0))
	}
	want := []time.Duration{FirstPause, 4 * FirstPause, 16 * FirstPause, 64 * FirstPause, MaxPause, MaxPause, MaxPause}
	if !slices.Equal(pauses, want) {
		t.Fatalf("pauses %v, want %v", pauses, want)
	}
	b.After(&Response{Status: 200}, nil, t0)
	if due := b.Due(t0); !due.Equal(t0) {
		t.Fatalf("after an answer, still paused %s", due.Sub(t0))
	}
	b.After(nil, &Error{Closed, io.EOF}, t0)
	if p := b.Due(t0).Sub(t0); p != FirstPause {
		t.Fatalf("a new run of failures starts at %s, want %s", p, FirstPause)
	}
	if b.Due(t0.Add(time.Hour)) != t0.Add(time.Hour) {
		t.Fatal("a request due after the pause is held")
	}
}

// TestTally: a run with no answer says so, with what it got instead and
// its first failure; one answer is enough.
func TestTally(t *testing.T) {
	var a, b Tally
	a.Add(&Error{Malformed, fmt.Errorf("%w: status line %q", errMalformed, "HELLO")})
	a.Add(ErrInterrupted)
	b.Add(&Error{Malformed, errMalformed})
	b.Add(&Error{Reset, syscall.ECONNRESET})
	a.Merge(&b)
	err := a.NoAnswer(3 * time.Second)
	if !errors.Is(err, ErrNoAnswer) || err.Error() != `no answer in 3s: 1 reset, 2 malformed (first: client: malformed: malformed response: status line "HELLO")` {
		t.Fatalf("%v", err)
	}
	var none Tally
	if err := none.NoAnswer(time.Second); !errors.Is(err, ErrNoAnswer) || !strings.Contains(err.Error(), "no request ended") {
		t.Fatalf("%v", err)
	}
	a.Add(nil)
	if err := a.NoAnswer(time.Second); err != nil || a.Answered() != 1 {
		t.Fatalf("%v, %d answered", err, a.Answered())
	}
}

// TestRedials: the requests after failed answers leave RedialEvery apart
// over every connection, booked from any goroutine.
func TestRedials(t *testing.T) {
	var r Redials
	now := time.Now()
	var mu sync.Mutex
	var got []time.Time
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				d := r.Due(now)
				mu.Lock()
				got = append(got, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.SortFunc(got, time.Time.Compare)
	for i := 1; i < len(got); i++ {
		if gap := got[i].Sub(got[i-1]); gap < RedialEvery {
			t.Fatalf("requests %d and %d %s apart, want %s at least", i-1, i, gap, RedialEvery)
		}
	}
	if last := got[len(got)-1].Sub(now); last != 199*RedialEvery {
		t.Errorf("the 200th leaves %s after the first, want %s", last, 199*RedialEvery)
	}
	if d := r.Due(now.Add(time.Hour)); !d.Equal(now.Add(time.Hour)) {
		t.Errorf("a request due long after the last leaves at %s, not when due", d.Sub(now))
	}
}
