package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/lag"
	"github.com/bystander-kit/bystander/internal/protocol"
	"github.com/bystander-kit/bystander/internal/serverflags"
	"github.com/bystander-kit/bystander/internal/wiretest"
)

var engines = []string{"gnet", "evio", "nbio"}

type testServer struct {
	addr, admin string
	log         *wiretest.Buffer
	stopOnce    func() error
}

// stop stops the server now and waits for it (also done when the test ends).
func (ts *testServer) stop(t *testing.T) {
	t.Helper()
	if err := ts.stopOnce(); err != nil {
		t.Fatalf("server: %v", err)
	}
}

// start runs a loop server on a free loopback port until the test ends.
func start(t *testing.T, engine string, tweak func(*options)) *testServer {
	t.Helper()
	return startHooked(t, engine, hooks{}, tweak)
}

// startHooked is start with the test's hooks into the server.
func startHooked(t *testing.T, engine string, h hooks, tweak func(*options)) *testServer {
	t.Helper()
	log := &wiretest.Buffer{}
	o := options{
		Common: serverflags.Defaults("127.0.0.1:0", "127.0.0.1:0"),
		engine: engine, loops: 4, blockWarn: time.Millisecond, lagInterval: time.Millisecond, lockThreads: true, log: log,
	}
	o.OffloadWorkers = 16
	if tweak != nil {
		tweak(&o)
	}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runHooked(ctx, o, h, func(a, ad net.Addr) { ready <- [2]string{a.String(), ad.String()} })
	}()
	var ts *testServer
	select {
	case a := <-ready:
		ts = &testServer{addr: a[0], admin: a[1], log: log}
	case err := <-done:
		cancel()
		t.Fatalf("server did not start: %v", err)
	case <-time.After(5 * time.Second):
		cancel()
		t.Fatal("server did not start within 5 s")
	}
	ts.stopOnce = sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(3 * time.Second):
			return fmt.Errorf("server did not stop within 3 s")
		}
	})
	t.Cleanup(func() {
		if err := ts.stopOnce(); err != nil {
			t.Error(err)
		}
	})
	return ts
}

func TestEndpoints(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			parallel(t, eng)
			wiretest.CheckEndpoints(t, start(t, eng, nil).addr, 4)
		})
	}
}

// TestSpread: any 4n consecutive connections land n per loop.
func TestSpread(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			parallel(t, eng)
			s := start(t, eng, nil)
			for round := 0; round < 2; round++ {
				conns := make([]*wiretest.Conn, 12)
				counts := make([]int, 4)
				for i := range conns {
					conns[i] = wiretest.Dial(t, s.addr)
					counts[conns[i].MustGet("/fast").Int(protocol.HeaderLoop)]++
				}
				if eng == "nbio" && !slices.Equal(counts, []int{3, 3, 3, 3}) {
					// nbio takes its own duplicate of each descriptor, and
					// another descriptor opened or closed in the process
					// meanwhile can land one elsewhere: the next deals make
					// up for it, so the loops are even again within a round.
					t.Logf("round %d: 12 connections per loop %v; dealing on", round, counts)
					for range 4 {
						c := wiretest.Dial(t, s.addr)
						conns = append(conns, c)
						counts[c.MustGet("/fast").Int(protocol.HeaderLoop)]++
						if n := len(conns); n%4 == 0 && slices.Equal(counts, []int{n / 4, n / 4, n / 4, n / 4}) {
							break
						}
					}
					if n := len(conns); n%4 != 0 || !slices.Equal(counts, []int{n / 4, n / 4, n / 4, n / 4}) {
						t.Fatalf("round %d: %d connections per loop %v, not even again within 4 more", round, n, counts)
					}
				} else if !slices.Equal(counts, []int{3, 3, 3, 3}) {
					t.Fatalf("round %d: 12 connections per loop %v, want 3 each", round, counts)
				}
				for _, c := range conns {
					c.C.Close()
				}
				waitOpen(t, s, 0)
			}
		})
	}
}

func stats(t testing.TB, s *testServer) Stats {
	t.Helper()
	resp, err := http.Get("http://" + s.admin + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

func waitOpen(t *testing.T, s *testServer, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var open int64
		for _, l := range stats(t, s).Loops {
			open += l.ConnectionsOpen
		}
		if open == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want %d", open, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestContinuationOnOwningLoop asserts, from the thread that ran it, that the
// /async continuation and the /offload reply ran on the loop that owns the
// connection.
func TestContinuationOnOwningLoop(t *testing.T) {
	for _, eng := range engines {
		for _, lock := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/lock-threads=%v", eng, lock), func(t *testing.T) {
				parallel(t, eng)
				s := start(t, eng, func(o *options) { o.lockThreads = lock })
				var wg sync.WaitGroup
				for range 8 {
					c := wiretest.Dial(t, s.addr)
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range 10 {
							target := "/async?delay=1ms"
							if i%2 == 1 {
								target = "/offload?block=1ms"
							}
							a, err := c.Get(target)
							if err != nil {
								t.Errorf("%s: %v", target, err)
								return
							}
							own, ran := a.Int(protocol.HeaderLoop), a.Int(protocol.HeaderContinuationLoop)
							if ran != own || own < 0 {
								t.Errorf("%s: continuation ran on loop %d, connection owned by loop %d", target, ran, own)
							}
						}
					}()
				}
				wg.Wait()
			})
		}
	}
}

// TestStall is the experiment in miniature: 12 keep-alive /async probe
// connections, 3 per loop; k further connections keep k loops busy with
// back-to-back 100 ms /slow calls. Exactly the probes on those k loops stall.
func TestStall(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			s := start(t, eng, func(o *options) { o.blockWarn = 0 })
			probes, loopOf := placeByLoop(t, s.addr, 4, 3)
			// One blocker connection per loop, opened before any loop blocks:
			// a connection dealt to a blocked loop is not opened until it unblocks.
			blockers := map[int64]*wiretest.Conn{}
			for len(blockers) < 4 {
				c := wiretest.Dial(t, s.addr)
				blockers[c.MustGet("/fast").Int(protocol.HeaderLoop)] = c
			}
			for k := 0; k <= 4; k++ {
				blocked := map[int64]bool{}
				for l := int64(0); l < int64(k); l++ {
					blocked[l] = true
				}
				medians := stallRound(t, probes, blockers, blocked)
				var stalled, want []int
				for i, m := range medians {
					if m > 50*time.Millisecond {
						stalled = append(stalled, i)
					}
					if blocked[loopOf[i]] {
						want = append(want, i)
					}
				}
				t.Logf("k=%d: stalled %d of 12, medians %v", k, len(stalled), medians)
				if len(want) != 3*k || !slices.Equal(stalled, want) {
					t.Fatalf("k=%d: stalled connections %v, want exactly those on blocked loops %v (medians %v)", k, stalled, want, medians)
				}
			}
		})
	}
}

// placeByLoop opens connections until each of loops loops holds perLoop,
// placed by the loop each one says it is on (X-Loop), as the experiment
// places its probes: the test then does not depend on the deal being
// exact (nbio's is not when another descriptor of the process is opened
// or closed meanwhile; TestSpread checks the deal itself). Connections
// over a loop's share are closed.
func placeByLoop(t *testing.T, addr string, loops, perLoop int) ([]*wiretest.Conn, []int64) {
	t.Helper()
	var conns []*wiretest.Conn
	var loopOf []int64
	count := make([]int, loops)
	for tries := 0; len(conns) < loops*perLoop; tries++ {
		if tries == 10*loops*perLoop {
			t.Fatalf("placing %d connections per loop: after %d dials the loops hold %v", perLoop, tries, count)
		}
		c := wiretest.Dial(t, addr)
		l := c.MustGet("/async").Int(protocol.HeaderLoop)
		if l < 0 || l >= int64(loops) {
			t.Fatalf("a connection says it is on loop %d of %d", l, loops)
		}
		if count[l] == perLoop {
			c.C.Close()
			continue
		}
		count[l]++
		conns = append(conns, c)
		loopOf = append(loopOf, l)
	}
	return conns, loopOf
}

// stallRound keeps the blocked loops busy for a while and returns each
// probe's median /async latency meanwhile.
func stallRound(t *testing.T, probes []*wiretest.Conn, blockers map[int64]*wiretest.Conn, blocked map[int64]bool) []time.Duration {
	t.Helper()
	const window = 900 * time.Millisecond
	stop := time.Now().Add(window)
	var wg sync.WaitGroup
	for l := range blocked {
		c := blockers[l]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				if _, err := c.Get("/slow?block=100ms"); err != nil {
					t.Errorf("blocker on loop %d: %v", l, err)
					return
				}
			}
		}()
	}
	time.Sleep(50 * time.Millisecond) // let the blockers get in first
	medians := make([]time.Duration, len(probes))
	for i, p := range probes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			for time.Now().Before(stop.Add(-100 * time.Millisecond)) {
				a, err := p.Get("/async")
				if err != nil {
					t.Errorf("probe %d: %v", i, err)
					return
				}
				lat = append(lat, a.Elapsed)
			}
			sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
			if len(lat) > 0 {
				medians[i] = lat[len(lat)/2]
			}
		}()
	}
	wg.Wait()
	return medians
}

// TestPipelining: requests sent in one write, a deferred one among them, are
// answered in order on the same connection.
func TestPipelining(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			parallel(t, eng)
			s := start(t, eng, nil)
			c := wiretest.Dial(t, s.addr)
			targets := []string{"/async?delay=30ms", "/fast", "/offload?block=10ms", "/slow?block=1ms", "/fast"}
			var req strings.Builder
			for _, tg := range targets {
				req.WriteString("GET " + tg + " HTTP/1.1\r\nHost: t\r\n\r\n")
			}
			if _, err := io.WriteString(c.C, req.String()); err != nil {
				t.Fatal(err)
			}
			for _, tg := range targets {
				a, err := c.Read("GET", time.Now())
				if err != nil {
					t.Fatalf("%s: %v", tg, err)
				}
				want := protocol.RouteOf([]byte(strings.SplitN(tg, "?", 2)[0])).Body()
				if a.Status != 200 || a.Body != want {
					t.Fatalf("answer for %s: %d %q, want %q", tg, a.Status, a.Body, want)
				}
			}
		})
	}
}

func TestConnectionHandling(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			parallel(t, eng)
			s := start(t, eng, nil)
			for _, tc := range []struct {
				name, req string
				closes    bool
			}{
				{"1.1 keeps alive", "GET /fast HTTP/1.1\r\nHost: t\r\n\r\n", false},
				{"1.1 close", "GET /fast HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", true},
				{"1.1 close on async", "GET /async HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", true},
				{"1.0 closes", "GET /fast HTTP/1.0\r\n\r\n", true},
				{"1.0 keep-alive", "GET /slow?block=1ms HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", false},
				{"body read and ignored", "GET /fast HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nabcd", false},
			} {
				c := wiretest.Dial(t, s.addr)
				a, err := c.Raw(tc.req, "GET")
				if err != nil || a.Status != 200 {
					t.Fatalf("%s: %+v %v", tc.name, a, err)
				}
				if a.Closed != tc.closes || c.EOF() != tc.closes {
					t.Fatalf("%s: closed %v, want %v", tc.name, a.Closed, tc.closes)
				}
			}
		})
	}
}

// TestMalformed: the shared table of malformed and refused requests, each
// on its own connection while a bystander keeps using the server.
func TestMalformed(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			parallel(t, eng)
			wiretest.CheckRefusals(t, start(t, eng, nil).addr, nil)
		})
	}
}

// TestBlockDetector: a request that holds its loop is one block of that
// loop in /slow, seen while it lasts (the admin side answers meanwhile),
// logged once with the loop and the route, as long as the request; the
// loop's heartbeat waited through it; no other loop has a /slow block.
func TestBlockDetector(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			parallel(t, eng)
			s := start(t, eng, func(o *options) { o.blockWarn = 50 * time.Millisecond })
			c := wiretest.Dial(t, s.addr)
			own := c.MustGet("/fast").Int(protocol.HeaderLoop)
			// The block is long enough that a busy machine cannot close
			// the window in which the admin listener must answer: the test
			// asks until it sees the loop held, and fails only if the
			// block ended first.
			const block = 2 * time.Second
			done := make(chan wiretest.Answer, 1)
			go func() { done <- c.MustGet(fmt.Sprintf("/slow?block=%s", block)) }()
			stream := make(chan []lag.Event, 1)
			go func() { stream <- lagEvents(t, s, fmt.Sprintf("/lag?for=%s", block+time.Second)) }()
			var st Stats
			for {
				st = stats(t, s) // answers while the loop is blocked
				select {
				case <-done:
					t.Fatalf("/slow (held %s) answered before the admin listener saw its loop held: loop %d %+v", block, own, st.Loops[own].Stats)
				default:
				}
				if st.Loops[own].BlockedNow {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if l := st.Loops[own]; l.BlocksByRoute["/slow"] != 1 {
				t.Errorf("loop %d during the block: %+v, want one block in /slow", own, l.Stats)
			}
			<-done
			// The detector ends a block at its first tick after the
			// request left: wait for that before reading the log.
			deadline := time.Now().Add(5 * time.Second)
			for st = stats(t, s); st.Loops[own].BlockedNow && time.Now().Before(deadline); st = stats(t, s) {
				time.Sleep(5 * time.Millisecond)
			}
			for _, l := range st.Loops {
				want := int64(0)
				if int64(l.Loop) == own {
					want = 1
				}
				if l.BlocksByRoute["/slow"] != want {
					t.Errorf("loop %d has %d blocks in /slow, want %d", l.Loop, l.BlocksByRoute["/slow"], want)
				}
			}
			l := st.Loops[own]
			if l.BlockedNs < int64(block) || l.LongestBlockNs < int64(block) {
				t.Errorf("blocked %d ns, longest %d ns, want >= %s", l.BlockedNs, l.LongestBlockNs, block)
			}
			if l.LagMaxNs < int64(200*time.Millisecond) {
				t.Errorf("loop %d's heartbeat lag max %d ns through a 400ms block", own, l.LagMaxNs)
			}
			if st.Detection.Count < 1 || st.LagIntervalNs != int64(time.Millisecond) {
				t.Errorf("detection %+v, interval %d", st.Detection, st.LagIntervalNs)
			}
			want := fmt.Sprintf(`msg="loopwatch: loop held" server=loopserver loop=%d `, own)
			if log := s.log.String(); strings.Count(log, "loop held") != 1 || !strings.Contains(log, want) || !strings.Contains(log, "block.nanosleep") {
				t.Errorf("detector log %q, want one line with %q at block.nanosleep", log, want)
			}
			if c := l.Culprit; c == nil || c.Route != "/slow" || c.State != "syscall" || !strings.HasSuffix(c.Culprit().Function, "block.nanosleep") {
				t.Errorf("culprit %+v, want /slow held in syscall at block.nanosleep", c)
			}
			// The stream saw it too: the loop held, in /slow, the others not.
			var held bool
			for _, ev := range <-stream {
				if len(ev.Loops) != 4 || ev.WindowNs <= 0 {
					t.Fatalf("event %+v", ev)
				}
				for _, le := range ev.Loops {
					if le.Route == "/slow" && int64(le.Loop) != own {
						t.Errorf("loop %d streamed as blocked in /slow", le.Loop)
					}
					if int64(le.Loop) == own && le.BlockedNow && le.Route == "/slow" && le.BlockedShare > 0 {
						held = true
					}
				}
			}
			if !held {
				t.Error("no streamed event shows the held loop blocked in /slow")
			}
		})
	}
}

// lagEvents reads the NDJSON lag stream at path to its end.
func lagEvents(t *testing.T, s *testServer, path string) []lag.Event {
	resp, err := http.Get("http://" + s.admin + path)
	if err != nil {
		t.Error(err)
		return nil
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "application/x-ndjson" {
		t.Errorf("%s: %s %q", path, resp.Status, ct)
	}
	var evs []lag.Event
	dec := json.NewDecoder(resp.Body)
	dec.DisallowUnknownFields()
	for dec.More() {
		var ev lag.Event
		if err := dec.Decode(&ev); err != nil {
			t.Error(err)
			break
		}
		evs = append(evs, ev)
	}
	return evs
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"--engine=evio", "--loops=2", "--block=1ms", "--block-mode=syscall"}, true},
		{[]string{"--engine=netty"}, false},
		{[]string{"--loops=0"}, false},
		{[]string{"--block=-1ms"}, false},
		{[]string{"--block=20s"}, false},
		{[]string{"--block-mode=nap"}, false},
		{[]string{"--offload-workers=0"}, false},
		{[]string{"--block-mode=postgres"}, false},
		{[]string{"--block-mode=postgres", "--db-url=postgres://u@127.0.0.1:5432/db"}, true},
		{[]string{"--block-mode=postgres", "--db-url=postgres://u@127.0.0.1:5432/db", "--db-pool=0"}, false},
		{[]string{"--block-mode=postgres", "--db-url=postgres://u@127.0.0.1:5432/db", "--db-pool=100000"}, false},
		{[]string{"--offload-workers=1000000"}, false},
		{[]string{"--offload-queue=4000000000"}, false},
		{[]string{"--max-block=87600h"}, false},
		{[]string{"--max-block=1h", "--block=30m"}, true},
		{[]string{"--addr=127.0.0.1:9999", "--admin=127.0.0.1:9999"}, false},
		{[]string{"--addr=127.0.0.1:http"}, true},
		{[]string{"--addr=127.0.0.1:nosuchservice"}, false},
		{[]string{"--addr=nope"}, false},
		{[]string{"stray"}, false},
		{[]string{"--lag-interval=0", "--block-warn=0"}, true},
		{[]string{"--lag-interval=500us", "--block-warn=5ms"}, true},
		{[]string{"--lag-interval=50us"}, false},
		{[]string{"--lag-interval=2s"}, false},
		{[]string{"--lag-interval=-1ms"}, false},
		{[]string{"--block-warn=2h"}, false},
		{[]string{"--block-warn=-1ms"}, false},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if (err == nil) != tc.ok {
			t.Errorf("%v: err %v, want ok=%v", tc.args, err, tc.ok)
		}
	}
}

// parallel runs the test beside the other engines' unless eng is nbio:
// nbio deals a connection to poller fd % pollers, and the kit deals
// round-robin by choosing that descriptor (nbio_deal.go), which descriptors
// opened meanwhile by other servers in the same process would disturb.
func parallel(t *testing.T, eng string) {
	if eng != "nbio" {
		t.Parallel()
	}
}

// TestGnetSocketDirGone: gnet needs an address of its own to listen on
// (the kit accepts the connections itself); its unix socket's directory is
// gone once gnet has bound it, so a server that is killed, not stopped,
// leaves nothing behind in the temporary directory.
func TestGnetSocketDirGone(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ts := start(t, "gnet", nil)
	wiretest.Dial(t, ts.addr).MustGet("/fast")
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("while the server runs, %s holds %v: a kill would leave it", tmp, left)
	}
	ts.stop(t)
}
