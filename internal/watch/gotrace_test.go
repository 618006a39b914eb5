package watch

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
)

// ledgerRead asks the ledger at addr for a balance over a new connection
// and waits for its answer: the handler's blocking call.
func ledgerRead(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "BALANCE 42\n"); err != nil {
		return err
	}
	_, err = bufio.NewReader(c).ReadString('\n') // the handler's read
	return err
}

// goService is a goroutine-per-request service on net/http in this
// process: GET /balance asks the ledger at ledger and waits for it, and
// /debug/pprof/ serves the profiler, on the same listener.
func goService(t *testing.T, ledger string) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/balance", func(w http.ResponseWriter, r *http.Request) {
		if err := ledgerRead(ledger); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		io.WriteString(w, "{}")
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// callers send GET path to base from n keep-alive clients until stop.
func callers(base, path string, n int) (stop func()) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
			defer c.CloseIdleConnections()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "GET", base+path, nil)
				if resp, err := c.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}()
	}
	return func() { cancel(); wg.Wait() }
}

// TestGoTraceRequests: a net/http service (a goroutine a connection)
// whose handler waits for a ledger's answer about 5 ms, loaded from 4
// callers and watched through its own pprof's execution trace: the
// request goroutines held in a network read at the handler's own frame,
// a pool's (forgivable); the goroutines idle between requests are not
// held.
func TestGoTraceRequests(t *testing.T) {
	addr := backend(t)
	srv := goService(t, addr)
	stop := callers(srv.URL, "/balance", 4)
	time.Sleep(200 * time.Millisecond)
	s := GoTrace(context.Background(), srv.URL, Options{Window: time.Second}).Clean()
	stop()
	for _, l := range s.Lines() {
		t.Log(l)
	}
	if s.Source != culprit.SourceGoTrace || s.Role != "request goroutines" || !s.Pool || len(s.Holds) == 0 {
		t.Fatalf("%+v", s)
	}
	h := s.Holds[0]
	want := culprit.Frame{Function: "github.com/bystander-kit/bystander/internal/watch.ledgerRead", Line: lineOf(t, "gotrace_test.go", "// the handler's read")}
	if f := h.Frames[0]; h.State != "in a network read" || f.Function != want.Function || f.Line != want.Line || !strings.HasSuffix(f.File, "/internal/watch/gotrace_test.go") {
		t.Errorf("%s; want a network read at %+v", s.Words(), want)
	}
	if len(h.Frames) < 2 || !strings.HasSuffix(h.Frames[1].Function, "goService.func1") {
		t.Errorf("frames %+v", h.Frames)
	}
	if h.Held < 3 || h.Held > 4+2 || s.Serving < h.Held {
		t.Errorf("%d held of %d: %s", h.Held, s.Serving, s.Words())
	}
	if avg := time.Duration(h.HeldNs / int64(max(h.Calls, 1))); avg < 4*time.Millisecond {
		t.Errorf("%d calls of %s on average, want the ledger's 5 ms or more", h.Calls, avg)
	}
	for _, l := range s.Limits {
		if strings.Contains(l, "CPU samples") {
			t.Errorf("the CPU profile did not run beside the trace: %s", l)
		}
	}
}

// TestGoTraceRefused: a URL that does not serve a trace is said in one
// line (what answered, and what to do), nothing watched.
func TestGoTraceRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	s := GoTrace(context.Background(), srv.URL, Options{Window: 100 * time.Millisecond})
	if s.WindowNs != 0 || len(s.Limits) != 1 || !strings.Contains(s.Limits[0], "404 Not Found") {
		t.Errorf("%q", s.Limits)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // nothing listens there now
	s = GoTrace(context.Background(), "http://"+ln.Addr().String(), Options{Window: 100 * time.Millisecond})
	if s.WindowNs != 0 || len(s.Limits) != 1 || !strings.Contains(s.Limits[0], "connection refused") || !strings.Contains(s.Limits[0], "net/http/pprof") {
		t.Errorf("%q", s.Limits)
	}
	for _, bad := range []string{"127.0.0.1:6060", "ftp://x/", "http://"} {
		if s := GoTrace(context.Background(), bad, Options{}); len(s.Limits) != 1 || !strings.Contains(s.Limits[0], "not a URL like") {
			t.Errorf("%s: %q", bad, s.Limits)
		}
	}
	if u, err := pprofURL("http://u:p@127.0.0.1:6060/debug/pprof?x=1"); err != nil || u.String() != "http://127.0.0.1:6060/debug/pprof/" {
		t.Errorf("%v %v", u, err)
	}
}

// TestReadTraceVersions: a trace of a Go newer than the reader is said,
// not guessed; what is not a trace is said so.
func TestReadTraceVersions(t *testing.T) {
	_, err := readTrace(strings.NewReader(fmt.Sprintf("go 1.%d trace\x00\x00\x00rest", newestTrace+1)), time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("reads up to Go 1.%d", newestTrace)) {
		t.Errorf("newer: %v", err)
	}
	if _, err := readTrace(strings.NewReader("<html>404</html>"), time.Millisecond); err == nil || !strings.Contains(err.Error(), "not a Go execution trace") {
		t.Errorf("not a trace: %v", err)
	}
	if _, err := readTrace(strings.NewReader("go 1.26 trace\x00\x00\x00\xff\xff\xff"), time.Millisecond); err == nil {
		t.Error("garbage read as a trace")
	}
}

// TestGoFrames: which Go frames are the runtime's (the standard library,
// golang.org/x/sys, x/net, x/sync) and which the servers' libraries'; a
// stack's call and a block's words.
func TestGoFrames(t *testing.T) {
	for fn, want := range map[string][2]bool{
		"runtime.gopark": {true, false}, "net/http.(*conn).serve": {true, false}, "internal/poll.(*FD).Read": {true, false},
		"golang.org/x/sys/unix.EpollWait": {true, false}, "golang.org/x/sync/errgroup.(*Group).Go.func1": {true, false},
		"main.(*ledgerClient).balance": {false, false}, "main.main": {false, false},
		"github.com/panjf2000/gnet/v2.(*eventloop).read": {false, true}, "github.com/valyala/fasthttp.(*Server).serveConn": {false, true},
		"github.com/acme/shop/ledger.(*Client).Balance": {false, false}, "example.com/x.F[...]": {false, false},
	} {
		if got := [2]bool{goIsRuntime(fn), goIsServer(fn)}; got != want {
			t.Errorf("%s: runtime, server %v, want %v", fn, got, want)
		}
	}
	if p := goPackage("github.com/panjf2000/gnet/v2.(*eventloop).read"); p != "github.com/panjf2000/gnet/v2" {
		t.Errorf("package %q", p)
	}
	frames := func(fns ...string) *stackInfo {
		var fs []culprit.Frame
		for _, fn := range fns {
			fs = append(fs, culprit.Frame{Function: fn})
		}
		return &stackInfo{call: goCall(fs)}
	}
	for want, st := range map[string]*stackInfo{
		"in a network read":            frames("internal/poll.(*pollDesc).wait", "internal/poll.(*FD).Read", "net.(*conn).Read"),
		"in a network connect":         frames("internal/poll.(*pollDesc).waitWrite", "net.(*netFD).connect"),
		"in a network wait":            frames("internal/poll.(*pollDesc).wait"),
		"in a system call (epollwait)": frames("syscall.Syscall6", "golang.org/x/sys/unix.EpollWait"),
		"in a system call (read)":      frames("syscall.Syscall", "syscall.read", "syscall.Read"),
	} {
		got := "in a system call"
		if st.call != "" {
			got += " (" + st.call + ")"
		}
		if strings.HasPrefix(want, "in a network") {
			got = goWait("network", st)
		}
		if got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
	if goWait("GC mark assist wait for work", nil) != "" || goWait("sleep", nil) != "in a sleep" || goWait("sync", nil) != "blocked on a lock" {
		t.Error("block reasons")
	}
}
