package watch

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/examples/services"
	"github.com/bystander-kit/bystander/internal/culprit"
)

// load sends r to s from n keep-alive connections, back to back, until
// stop is called (or a minute has passed): the service's own traffic, its
// blocking route. answered counts the answers so far; stop returns them
// all.
func load(t testing.TB, s *services.Service, r services.Request, n int) (answered func() int64, stop func() int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	var wg sync.WaitGroup
	var count atomic.Int64
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: 10 * time.Second}
			defer c.CloseIdleConnections()
			for ctx.Err() == nil {
				resp, err := c.Do(r.HTTP(s.URL()).WithContext(ctx))
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				count.Add(1)
			}
		}()
	}
	return count.Load, func() int64 {
		cancel()
		wg.Wait()
		return count.Load()
	}
}

// watched starts kind, loads its blocking route from n connections and
// watches it for window.
func watched(t *testing.T, kind services.Kind, n int, window time.Duration) (*services.Service, culprit.Service) {
	t.Helper()
	s := services.Start(t, kind, services.Options{})
	_, stop := load(t, s, s.Blocking, n)
	time.Sleep(500 * time.Millisecond) // the connections made, the loops busy
	w := Watch(context.Background(), Target{PID: s.PID, Pprof: s.PProf}, Options{Window: window})
	answered := stop()
	t.Logf("%s: %d answers to %s", kind, answered, s.Blocking)
	for _, l := range w.Lines() {
		t.Log(l)
	}
	return s, w
}

// TestWatchNettyShop: the Netty shop (examples/services), whose
// LedgerClient reads the ledger's answer over a blocking socket on its 4
// event loops, loaded on that route from 8 connections: Flight Recorder
// names the loops held in that read, the ledger as the peer, the
// repository's frame at its line.
func TestWatchNettyShop(t *testing.T) {
	need(t, "jcmd", "jfr")
	s, w := watched(t, services.Netty, 8, 2*time.Second)
	if w.Source != culprit.SourceJFR || w.Role != "event-loop threads" || w.Pool || w.Serving != 4 || len(w.Holds) == 0 {
		t.Fatalf("%+v", w)
	}
	h := w.Holds[0]
	want := culprit.Frame{Function: s.Frame, File: s.FrameFile, Line: s.FrameLine}
	if h.State != "in a socket read" || h.Peer != s.Ledger.Addr || h.Frames[0] != want || h.FileInferred {
		t.Errorf("%s; want a socket read to %s at %+v", w.Words(), s.Ledger.Addr, want)
	}
	if h.Held != 4 || !strings.HasPrefix(w.Words(), "4 of 4 event-loop threads held ") {
		t.Errorf("%s", w.Words())
	}
}

// TestWatchTomcatShop: the same shop on Tomcat, loaded from 8
// connections: its request threads are held in the same frame, named as a
// pool's; its idle threads are not held.
func TestWatchTomcatShop(t *testing.T) {
	need(t, "jcmd", "jfr")
	s, w := watched(t, services.Tomcat, 8, 2*time.Second)
	if w.Source != culprit.SourceJFR || w.Role != "request threads" || !w.Pool || len(w.Holds) == 0 {
		t.Fatalf("%+v", w)
	}
	h := w.Holds[0]
	want := culprit.Frame{Function: s.Frame, File: s.FrameFile, Line: s.FrameLine}
	if h.State != "in a socket read" || h.Peer != s.Ledger.Addr || h.Frames[0] != want {
		t.Errorf("%s; want a socket read to %s at %+v", w.Words(), s.Ledger.Addr, want)
	}
	// 8 callers hold at most 8 threads at once; Tomcat starts 10 or more.
	if h.Held < 1 || w.Serving < 10 || h.Held > w.Serving {
		t.Errorf("held %d of %d: %s", h.Held, w.Serving, w.Words())
	}
}

// TestWatchGnetShop: the gnet shop (examples/services), whose report
// route asks the ledger from gnet's 4 event loops, loaded from 8
// connections: its pprof's execution trace names the loop goroutines held
// in a network read at the shop's own frame.
func TestWatchGnetShop(t *testing.T) {
	s, w := watched(t, services.Gnet, 8, 2*time.Second)
	if w.Source != culprit.SourceGoTrace || w.Role != "event-loop goroutines" || w.Pool || w.Serving != 4 || len(w.Holds) == 0 {
		t.Fatalf("%+v", w)
	}
	h := w.Holds[0]
	if f := h.Frames[0]; h.State != "in a network read" || f.Function != s.Frame || f.Line != s.FrameLine || filepath.Base(f.File) != s.FrameFile {
		t.Errorf("%s; want a network read at %s (%s:%d)", w.Words(), s.Frame, s.FrameFile, s.FrameLine)
	}
	if h.Held != 4 || !strings.HasPrefix(w.Words(), "4 of 4 event-loop goroutines held ") {
		t.Errorf("%s", w.Words())
	}
}

// TestWatchNodeShop: the Node.js service (examples/services) hashing each
// sign-in's password with crypto.pbkdf2Sync, loaded on that route from 2
// connections: /proc finds its main thread, its event loop, on a CPU,
// and says how to get the frame.
func TestWatchNodeShop(t *testing.T) {
	_, w := watched(t, services.Node, 2, 2*time.Second)
	if w.Source != culprit.SourceProc || w.Role != "event-loop threads" || w.Serving != 1 || len(w.Holds) == 0 {
		t.Fatalf("%+v", w)
	}
	h := w.Holds[0]
	if h.State != "on a CPU" || h.Held != 1 || h.Threads[0] != "node (main thread)" || len(h.Frames) != 0 {
		t.Errorf("%s", w.Words())
	}
	if !strings.Contains(w.Hint, "--cpu-prof") {
		t.Errorf("hint %q", w.Hint)
	}
}
