package main

import (
	"net"
	"strconv"

	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/bystander-kit/bystander/internal/lag"
	"github.com/bystander-kit/bystander/internal/protocol"
	"github.com/bystander-kit/bystander/internal/wiretest"
)

// TestHearts: every loop gets its heartbeat from a connection of the
// server's own, which is not a client: no loop counts it, and clients are
// still dealt evenly (8 connections, 2 per loop).
func TestHearts(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			parallel(t, eng)
			s := start(t, eng, nil)
			deadline := time.Now().Add(10 * time.Second)
			for {
				st := stats(t, s)
				beating := 0
				for _, l := range st.Loops {
					if l.LagBeats > 0 {
						beating++
					}
					if l.ConnectionsOpen != 0 || l.ConnectionsTotal != 0 {
						t.Fatalf("loop %d counts %d open, %d in all before any client", l.Loop, l.ConnectionsOpen, l.ConnectionsTotal)
					}
				}
				if len(st.Loops) == 4 && beating == 4 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after 10s %d loops, %d with heartbeats: %+v", len(st.Loops), beating, st.Loops)
				}
				time.Sleep(20 * time.Millisecond)
			}
			counts := map[int64]int{}
			for range 8 {
				counts[wiretest.Dial(t, s.addr).MustGet("/fast").Int(protocol.HeaderLoop)]++
			}
			for l := range int64(4) {
				if counts[l] != 2 {
					t.Errorf("8 clients dealt %v, want 2 per loop", counts)
					break
				}
			}
		})
	}
}

// TestLagOff: --lag-interval 0 opens no hearts and records no beats; the
// detector alone still streams; with it off too, /lag says there is nothing.
func TestLagOff(t *testing.T) {
	s := start(t, "gnet", func(o *options) { o.lagInterval = 0 })
	c := wiretest.Dial(t, s.addr)
	c.MustGet("/fast")
	for _, l := range stats(t, s).Loops {
		if l.LagBeats != 0 {
			t.Errorf("loop %d has %d beats with the heartbeat off", l.Loop, l.LagBeats)
		}
	}
	if evs := lagEvents(t, s, "/lag?for=250ms"); len(evs) == 0 {
		t.Error("no events from the detector alone")
	}
	off := start(t, "gnet", func(o *options) { o.lagInterval, o.blockWarn = 0, 0 })
	resp, err := http.Get("http://" + off.admin + "/lag")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/lag with nothing measured: %s, want 404", resp.Status)
	}
}

// TestLagStreamSSE: a browser's EventSource gets Server-Sent Events, each
// an event named lag whose data is one JSON event; bad parameters get 400.
func TestLagStreamSSE(t *testing.T) {
	s := start(t, "gnet", nil)
	req, _ := http.NewRequest("GET", "http://"+s.admin+"/lag?for=350ms", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var events, names int
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "event: lag":
			names++
		case strings.HasPrefix(line, "data: "):
			var ev lag.Event
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil || len(ev.Loops) != 4 {
				t.Errorf("data %q: %v", line, err)
			}
			events++
		}
	}
	if events == 0 || events != names {
		t.Errorf("%d data lines, %d event names", events, names)
	}
	for _, q := range []string{"every=1ms", "every=x", "for=-1s", "format=xml"} {
		resp, err := http.Get("http://" + s.admin + "/lag?" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("/lag?%s: %s, want 400", q, resp.Status)
		}
	}
}

// TestNoWakeAfterStop: once the server has stopped, neither a heartbeat
// nor a late continuation may wake an engine: its pollers' descriptors are
// closed, their numbers given to whatever opens next, and a wake writes 8
// bytes into that (seen as "\x01\x00\x00\x00\x00\x00\x00\x00HTTP/1.1" at
// the head of another server's answer, in this very test process).
func TestNoWakeAfterStop(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			var srv *server
			s := startHooked(t, eng, hooks{started: func(s *server) { srv = s }}, nil)
			c := wiretest.Dial(t, s.addr)
			c.MustGet("/fast")
			var cn *conn
			srv.conns.Range(func(k, _ any) bool { cn = k.(*conn); return false })
			heart := srv.loops.all()[0].heart.Load()
			if cn == nil || heart == nil {
				t.Fatal("no connection or heart to wake")
			}
			s.stop(t)
			// The engine's closed descriptors are among the lowest free ones
			// now (with the holes earlier tests left): fill them.
			var pipes [][2]int
			for range 1024 {
				var p [2]int
				if err := syscall.Pipe2(p[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
					t.Fatal(err)
				}
				pipes = append(pipes, p)
			}
			defer func() {
				for _, p := range pipes {
					syscall.Close(p[0])
					syscall.Close(p[1])
				}
			}()
			srv.beat(heart, false)
			srv.beat(heart, true)
			srv.expire(cn)
			srv.resume(cn)
			time.Sleep(50 * time.Millisecond) // wakes may be deferred
			for _, p := range pipes {
				var b [64]byte
				if n, _ := syscall.Read(p[0], b[:]); n > 0 {
					t.Fatalf("%d bytes written after the stop into a descriptor the engine had closed: %q", n, b[:n])
				}
			}
		})
	}
}

// TestMetrics: /metrics says in the Prometheus text format what /stats
// says: the block in /slow on its loop, every loop's heartbeats, and the
// process's own figures.
func TestMetrics(t *testing.T) {
	s := start(t, "gnet", func(o *options) { o.blockWarn = 50 * time.Millisecond })
	c := wiretest.Dial(t, s.addr)
	own := c.MustGet("/slow?block=200ms").Int(protocol.HeaderLoop)
	deadline := time.Now().Add(5 * time.Second)
	for stats(t, s).Loops[own].BlockedNow && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	resp, err := http.Get("http://" + s.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	value := func(name string, labels map[string]string) (float64, bool) {
		f := fams[name]
		if f == nil {
			return 0, false
		}
	next:
		for _, m := range f.Metric {
			for _, lp := range m.Label {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue(), true
			case m.Gauge != nil:
				return m.Gauge.GetValue(), true
			}
		}
		return 0, false
	}
	loop := strconv.FormatInt(own, 10)
	if v, ok := value("bystander_loop_blocks_total", map[string]string{"loop": loop, "route": "/slow"}); !ok || v != 1 {
		t.Errorf("blocks in /slow on loop %s: %v %v, want 1", loop, v, ok)
	}
	if v, ok := value("bystander_loop_blocked_seconds_total", map[string]string{"loop": loop}); !ok || v < 0.2 {
		t.Errorf("blocked seconds on loop %s: %v, want 0.2 or more", loop, v)
	}
	for l := range 4 {
		if v, ok := value("bystander_loop_heartbeats_total", map[string]string{"loop": strconv.Itoa(l)}); !ok || v <= 0 {
			t.Errorf("loop %d heartbeats: %v %v", l, v, ok)
		}
	}
	if _, ok := value("process_cpu_seconds_total", nil); !ok {
		t.Error("no process_cpu_seconds_total")
	}
}

// TestLoopThreadsNamed: with each loop on its own thread (the default),
// the thread is named for its loop (loop-N), so that what /proc counts of
// it (its run-queue waits above all) is told from the other threads'.
func TestLoopThreadsNamed(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			addr, cmd := wiretest.StartServer(t, ".", "--engine", eng)
			for range 8 {
				wiretest.Dial(t, addr).MustGet("/fast")
			}
			want := map[string]bool{"loop-0": true, "loop-1": true, "loop-2": true, "loop-3": true}
			deadline := time.Now().Add(10 * time.Second)
			for {
				tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", cmd.Process.Pid))
				seen := map[string]int{}
				for _, tk := range tasks {
					b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/comm", cmd.Process.Pid, tk.Name()))
					seen[strings.TrimSpace(string(b))]++
				}
				ok := true
				for n := range want {
					if seen[n] != 1 {
						ok = false
					}
				}
				if ok {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("threads by name %v, want one each of loop-0 to loop-3", seen)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// TestHeartLandsTwice: an engine that deals a heart to a loop that already
// has one (nbio deals by descriptor number, and a descriptor opened on a
// loop meanwhile moves it) must not leave another loop without a heart: the
// second heart was taken as that loop's, its descriptor written over the
// first's, and the loop left without one got no continuation for the
// server's life (one nbio loop's /offload clients unanswered for 10 s in
// about 1 of 50 TestHalfClosed runs). The heart that landed twice is
// closed and another dialled.
func TestHeartLandsTwice(t *testing.T) {
	s := newServer(options{loops: 2, lagInterval: time.Millisecond, log: &wiretest.Buffer{}}, traits{}, hooks{})
	s.hearts.ports, s.hearts.byLoop = map[int]chan *conn{}, map[int]int{}
	for i := range 2 {
		s.loops.at(i).gid.Store(uint64(i + 1)) // bound: bindAll has nothing to wait for
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// The engine: the first two hearts land on loop 0, the rest on loop 1.
	go func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			s.openedHeart(c.RemoteAddr(), nil, s.loops.at(min(n/2, 1)))
		}
	}()
	if err := s.openHearts(ln.Addr()); err != nil {
		t.Fatal(err)
	}
	defer s.closeHearts()
	for i := range 2 {
		if s.loops.at(i).heart.Load() == nil {
			t.Errorf("loop %d has no heart", i)
		}
	}
	if len(s.hearts.byLoop) != 2 || s.hearts.byLoop[0] == s.hearts.byLoop[1] {
		t.Errorf("the hearts' client ends by loop: %v, want one each", s.hearts.byLoop)
	}
}
