package main

import (
	"bytes"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/serverflags"
	"github.com/bystander-kit/bystander/internal/wiretest"
)

// The connection core's flow, tested once against a fake link: one
// loop goroutine that runs the jobs it is handed, an input buffer, the
// bytes written, and an unsent count the test sets. The engines' own tests
// run the same flow over real sockets on gnet, evio and nbio.

type fakeTransport struct {
	plain
	s    *server
	c    *conn
	jobs chan func()

	mu      sync.Mutex // guards what the test reads from its own goroutine
	in      []byte
	written []byte
	unsentN int
	fdv     int
	shut    bool // the core asked to close
}

func newFake(t *testing.T) (*fakeTransport, *conn) {
	t.Helper()
	o := options{Common: serverflags.Defaults("127.0.0.1:0", ""), loops: 1, log: &wiretest.Buffer{}}
	o.OffloadWorkers = 4
	s := newServer(o, traits{}, hooks{})
	t.Cleanup(s.pool.Close)
	f := &fakeTransport{s: s, jobs: make(chan func(), 64), fdv: -1}
	l := s.loops.at(0)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.loops.bind(l)
		for {
			select {
			case j := <-f.jobs:
				j()
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	f.do(func() { f.c = s.openedOn(nil, f, l) })
	return f, f.c
}

// do runs j on the loop and waits for it.
func (f *fakeTransport) do(j func()) {
	ran := make(chan struct{})
	f.jobs <- func() { j(); close(ran) }
	<-ran
}

// arrive hands the core bytes read, on the loop, as an engine does.
func (f *fakeTransport) arrive(c *conn, b string) {
	f.do(func() {
		f.mu.Lock()
		f.in = append(f.in, b...)
		f.mu.Unlock()
		if f.s.traffic(c) {
			f.closeOnLoop(c)
		}
	})
}

func (f *fakeTransport) closeOnLoop(c *conn) {
	f.mu.Lock()
	f.shut = true
	f.mu.Unlock()
	f.s.closedConn(c)
}

func (f *fakeTransport) run(job func() bool) {
	f.jobs <- func() {
		if job() {
			f.closeOnLoop(f.c)
		}
	}
}

func (f *fakeTransport) input() []byte { return f.in }

func (f *fakeTransport) discard(n int) {
	f.mu.Lock()
	f.in = f.in[n:]
	f.mu.Unlock()
}

func (f *fakeTransport) write(out []byte) error {
	f.mu.Lock()
	f.written = append(f.written, out...)
	f.mu.Unlock()
	return nil
}

func (f *fakeTransport) unsent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.unsentN
}

func (f *fakeTransport) fd() int { return f.fdv }

func (f *fakeTransport) setUnsent(n int) {
	f.mu.Lock()
	f.unsentN = n
	f.mu.Unlock()
}

// answers is the bodies written so far, in order.
func (f *fakeTransport) answers() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var bodies []string
	for _, a := range strings.Split(string(f.written), "HTTP/1.1 ")[1:] {
		bodies = append(bodies, strings.TrimSpace(a[strings.Index(a, "\r\n\r\n")+4:]))
	}
	return bodies
}

func (f *fakeTransport) closedNow() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.shut
}

// waitFor polls cond for up to 10 s (a continuation or a later look runs
// from a timer): the flow is checked, not its timing.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %s", what)
		}
	}
}

func req(path string) string { return "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n" }

func TestCorePipelineAnsweredInOrder(t *testing.T) {
	f, c := newFake(t)
	f.arrive(c, req("/fast")+req("/nope")+req("/fast")+"GET /fa")
	if got := f.answers(); len(got) != 3 || got[0] != "fast" || got[2] != "fast" {
		t.Fatalf("answers %q, want fast, not found, fast", got)
	}
	f.do(func() {
		if string(f.in) != "GET /fa" || c.partialSince.Load() == 0 {
			t.Errorf("left buffered %q (partial since %d), want the incomplete request, timed from its first byte", f.in, c.partialSince.Load())
		}
	})
}

// A request answered later holds the connection: the requests behind it
// wait, and are answered after it, in order, once its continuation ran.
func TestCoreContinuationHoldsLaterRequests(t *testing.T) {
	f, c := newFake(t)
	f.arrive(c, req("/async?delay=30ms")+req("/fast"))
	if got := f.answers(); len(got) != 0 {
		t.Fatalf("answered %q before the continuation", got)
	}
	f.arrive(c, req("/offload?block=1ms"))
	waitFor(t, "three answers", func() bool { return len(f.answers()) == 3 })
	if got := f.answers(); got[0] != "async" || got[1] != "fast" || got[2] != "offload" {
		t.Fatalf("answers %q, want async, fast, offload", got)
	}
	if c.owed.Load() || c.dupFD != 0 {
		t.Fatalf("after the answers: owed %v, duplicate descriptor %d kept", c.owed.Load(), c.dupFD)
	}
}

// Answers wait while the client does not read; once it does, the requests
// buffered meanwhile are answered without new bytes arriving.
func TestCoreBackPressure(t *testing.T) {
	f, c := newFake(t)
	f.setUnsent(maxPendingOutput + 1)
	f.arrive(c, req("/fast")+req("/fast"))
	time.Sleep(5 * time.Millisecond)
	if got := f.answers(); len(got) != 0 {
		t.Fatalf("answered %q while %d bytes waited unsent", got, maxPendingOutput+1)
	}
	f.setUnsent(0)
	waitFor(t, "the two waiting requests answered once the client read", func() bool { return len(f.answers()) == 2 })
}

// A client that goes on sending while its answers wait is closed past the
// input bound.
func TestCoreInputBound(t *testing.T) {
	f, c := newFake(t)
	f.arrive(c, req("/async?delay=10s"))
	f.arrive(c, strings.Repeat("x", maxPendingInput+1))
	if !f.closedNow() {
		t.Fatal("not closed with more than the bound buffered behind a continuation")
	}
}

// The sweeper's expiry closes an idle connection, not one owed an answer.
func TestCoreExpire(t *testing.T) {
	f, c := newFake(t)
	f.arrive(c, req("/async?delay=200ms"))
	c.expired.Store(true)
	f.s.expire(c)
	f.do(func() {})
	if f.closedNow() || c.expired.Load() {
		t.Fatalf("closed %v, still marked expired %v: an answer was under way", f.closedNow(), c.expired.Load())
	}
	waitFor(t, "the answer", func() bool { return len(f.answers()) == 1 })
	f.s.expire(c)
	waitFor(t, "the idle connection closed", f.closedNow)
	if n := f.s.open.Load(); n != 0 {
		t.Fatalf("%d connections counted open after the close", n)
	}
}

// A connection the engine closes while an answer is owed (the client
// half-closed) still gets it, through the duplicate descriptor.
func TestCoreAnswerOwedAfterClose(t *testing.T) {
	f, c := newFake(t)
	p, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(p[1])
	f.fdv = p[0]
	f.arrive(c, req("/async?delay=30ms"))
	f.do(func() {
		f.s.closedConn(c)   // the engine's close callback ...
		syscall.Close(p[0]) // ... and its descriptor gone
	})
	tv := syscall.Timeval{Sec: 10}
	_ = syscall.SetsockoptTimeval(p[1], syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := syscall.Read(p[1], buf)
		if n <= 0 || err != nil {
			break
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.HasPrefix(got, []byte("HTTP/1.1 200")) || !bytes.HasSuffix(got, []byte("async\n")) || !bytes.Contains(got, []byte("Connection: close")) {
		t.Fatalf("after the close the client read %q, want the async answer, closing", got)
	}
	if len(f.answers()) != 0 {
		t.Fatal("the answer was also handed to the closed connection's engine")
	}
}

// A heart never sends: bytes on one close it.
func TestCoreHeartSends(t *testing.T) {
	f, c := newFake(t)
	c.heart = true
	if !f.s.traffic(c) {
		t.Fatal("a heart that sent was not closed")
	}
}
