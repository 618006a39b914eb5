package main

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/protocol"
	"github.com/bystander-kit/bystander/internal/serverflags"
	"github.com/bystander-kit/bystander/internal/wiretest"
)

type testServer struct{ addr, admin string }

// start runs a pool server with n slots on a free loopback port until the
// test ends.
func start(t *testing.T, n int) *testServer {
	t.Helper()
	o := options{Common: serverflags.Defaults("127.0.0.1:0", "127.0.0.1:0"), slots: n}
	o.OffloadWorkers = 16
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan *testServer, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, o, func(a, ad net.Addr) { ready <- &testServer{a.String(), ad.String()} })
	}()
	var ts *testServer
	select {
	case ts = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("server did not start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server: %v", err)
			}
		case <-time.After(3 * time.Second):
			t.Error("server did not stop within 3 s")
		}
	})
	return ts
}

func stats(t *testing.T, s *testServer) Stats {
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

// occupy starts n callers of target and returns once the server counts each
// as having taken a slot or queueing for one; wait waits for their answers.
func occupy(t *testing.T, s *testServer, n int, target string) (wait func() []wiretest.Answer) {
	t.Helper()
	base := stats(t, s).SlotAcquisitions
	var wg sync.WaitGroup
	answers := make([]wiretest.Answer, n)
	for i := range n {
		c := wiretest.Dial(t, s.addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := c.Get(target)
			if err != nil {
				t.Errorf("%s: %v", target, err)
			}
			answers[i] = a
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := stats(t, s)
		if st.SlotAcquisitions-base+st.QueueNow >= int64(n) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d callers of %s never arrived", n, target)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return func() []wiretest.Answer { wg.Wait(); return answers }
}

func TestEndpoints(t *testing.T) {
	s := start(t, 200)
	wiretest.CheckEndpoints(t, s.addr, 0)
	st := stats(t, s)
	for _, r := range st.Requests {
		if want := map[string]int64{"/async": 2}[r.Route]; r.Route != "unknown" && r.Requests != max(want, 1) {
			t.Errorf("route %s counted %d", r.Route, r.Requests)
		}
	}
	if st.SlotsBusy != 0 || st.QueueNow != 0 || st.Process.CPUNs() <= 0 {
		t.Errorf("idle stats %+v", st)
	}
}

// TestBystanderWaitsForSlots: with 4 slots held by 200 ms blocks, a /fast
// waits about one block; with 3 held it does not wait.
func TestBystanderWaitsForSlots(t *testing.T) {
	for _, tc := range []struct {
		callers int
		waits   bool
	}{{3, false}, {4, true}} {
		s := start(t, 4)
		wait := occupy(t, s, tc.callers, "/slow?block=200ms")
		a := wiretest.Dial(t, s.addr).MustGet("/fast")
		held := wait()
		queued := time.Duration(a.Int(protocol.HeaderQueuedNs))
		t.Logf("%d callers: /fast took %s, queued %s", tc.callers, a.Elapsed, queued)
		// With every slot held, /fast runs only once a slot is given back:
		// its handler starts after the first block ends (by the server's
		// clock), however late it arrived in the blocks (on a busy machine
		// the callers may have held their slots most of 200ms by then).
		firstFree := int64(math.MaxInt64)
		for _, h := range held {
			firstFree = min(firstFree, h.Int(protocol.HeaderHandlerStart)+h.Int(protocol.HeaderBlockedNs))
		}
		if tc.waits && (queued <= 0 || a.Int(protocol.HeaderHandlerStart) < firstFree) {
			t.Errorf("4 slots held: /fast queued %s and began %s before the first slot was free; want it to wait for one",
				queued, time.Duration(firstFree-a.Int(protocol.HeaderHandlerStart)))
		}
		if !tc.waits && (queued > 50*time.Millisecond || a.Elapsed > 100*time.Millisecond) {
			t.Errorf("3 of 4 slots held: /fast queued %s, took %s; want no wait", queued, a.Elapsed)
		}
		if tc.waits && stats(t, s).QueueMax < 1 {
			t.Error("the queue never held the bystander")
		}
	}
}

// TestFIFO: with the pool full, waiters get the slot in arrival order.
func TestFIFO(t *testing.T) {
	s := start(t, 1)
	wait := occupy(t, s, 1, "/slow?block=300ms")
	const n = 6
	var wg sync.WaitGroup
	starts := make([]int64, n)
	for i := range n {
		c := wiretest.Dial(t, s.addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			starts[i] = c.MustGet("/slow?block=10ms").Int(protocol.HeaderHandlerStart)
		}()
		// The next waiter arrives only once this one is queued.
		deadline := time.Now().Add(5 * time.Second)
		for stats(t, s).QueueNow < int64(i+1) && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
	}
	wg.Wait()
	wait()
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(starts[a] - starts[b]) })
	if !slices.Equal(order, []int{0, 1, 2, 3, 4, 5}) {
		t.Fatalf("served in order %v, want arrival order", order)
	}
}

// TestAsyncGivesSlotBack: 8 concurrent /async with 4 slots finish in about
// one delay, not two.
func TestAsyncGivesSlotBack(t *testing.T) {
	s := start(t, 4)
	start := time.Now()
	answers := occupy(t, s, 8, "/async?delay=300ms")()
	took := time.Since(start)
	for _, a := range answers {
		if a.Status != 200 {
			t.Fatalf("status %d", a.Status)
		}
	}
	t.Logf("8 /async on 4 slots took %s", took)
	if took > 500*time.Millisecond {
		t.Fatalf("8 /async?delay=300ms on 4 slots took %s: the slots were held while waiting", took)
	}
}

// TestOffloadGivesSlotBack: /offload frees its slot while it blocks (a /fast
// gets through on the only slot), and its answer needs a slot again (it
// waits for a /slow that took the slot meanwhile).
func TestOffloadGivesSlotBack(t *testing.T) {
	s := start(t, 1)
	off := wiretest.Dial(t, s.addr)
	done := make(chan wiretest.Answer, 1)
	sent := time.Now()
	go func() { done <- off.MustGet("/offload?block=300ms") }()
	time.Sleep(50 * time.Millisecond)
	if a := wiretest.Dial(t, s.addr).MustGet("/fast"); a.Elapsed > 100*time.Millisecond {
		t.Fatalf("/fast waited %s while /offload blocked off the slot", a.Elapsed)
	}
	slow := wiretest.Dial(t, s.addr).MustGet("/slow?block=500ms") // holds the slot until ~550ms
	slowEnd := time.Now()
	a := <-done
	cont := time.Unix(0, a.Int(protocol.HeaderContinuationStart))
	t.Logf("offload answered after %s; continuation %s after the /slow ended", time.Since(sent), cont.Sub(slowEnd))
	if b := time.Duration(a.Int(protocol.HeaderBlockedNs)); b < 300*time.Millisecond || b > 450*time.Millisecond {
		t.Errorf("X-Blocked-Ns %s, want about 300ms", b)
	}
	if slow.Status != 200 || cont.Before(slowEnd.Add(-20*time.Millisecond)) {
		t.Errorf("the continuation ran at %s, before the /slow holding the only slot ended (%s)", cont, slowEnd)
	}
}

// netHTTPDiffers lists the cases of the shared table where RFC 9112 allows
// two answers and net/http gives the other one than the loop server's decoder.
var netHTTPDiffers = map[string]wiretest.Differ{
	"obsolete folding": {Status: 200, Why: "net/http joins a folded header line with spaces, which RFC 9112 5.2 allows instead of a 400"},
	"empty lines only, too many": {Status: 400, Why: "net/http takes the first empty line for a malformed request line (RFC 9112 2.2: a server SHOULD, not MUST, skip it) " +
		"and closes with the rest unread, which may reset the answer away"},
}

// TestMalformed: the same table as the loop server; every request is
// answered with the same status and the server keeps serving a bystander.
func TestMalformed(t *testing.T) {
	wiretest.CheckRefusals(t, start(t, 4).addr, netHTTPDiffers)
}

// TestQueueSeries: the seconds /stats lists count every slot taken once,
// never more slots busy than there are, and a second in which requests
// waited behind held slots says how long (a held slot's block at least
// for the one that waited behind all of them).
func TestQueueSeries(t *testing.T) {
	s := start(t, 2)
	wait := occupy(t, s, 3, "/slow?block=300ms") // the third waits for a slot
	wait()
	var st Stats
	deadline := time.Now().Add(10 * time.Second)
	for {
		st = stats(t, s)
		var n int64
		for _, sec := range st.Seconds {
			n += sec.Acquisitions
		}
		if n == st.SlotAcquisitions {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the seconds count %d slots taken, the server %d", n, st.SlotAcquisitions)
		}
		time.Sleep(100 * time.Millisecond) // until the last second has closed
	}
	var waited, busy int64
	for i, sec := range st.Seconds {
		if sec.SlotsBusyMax > 2 || sec.SlotsBusyMean > 2 || sec.SlotsBusyMean < 0 {
			t.Errorf("second %d: busy max %d mean %.2f with 2 slots", i, sec.SlotsBusyMax, sec.SlotsBusyMean)
		}
		if i > 0 && sec.UnixS <= st.Seconds[i-1].UnixS {
			t.Errorf("seconds out of order: %d after %d", sec.UnixS, st.Seconds[i-1].UnixS)
		}
		waited = max(waited, sec.WaitMaxNs)
		busy = max(busy, sec.SlotsBusyMax)
	}
	if waited < int64(250*time.Millisecond) || st.QueueWait.MaxNs < int64(250*time.Millisecond) || st.QueueWait.Count != st.SlotAcquisitions {
		t.Errorf("longest wait in a second %d ns, since start %+v; want one request about 300ms behind the held slots", waited, st.QueueWait)
	}
	if busy != 2 {
		t.Errorf("at most %d slots seen busy while 3 callers held 2 slots for 300ms", busy)
	}
}

// TestMetrics: /metrics gives the pool's slots and waits in the Prometheus
// text format, beside the process's own figures.
func TestMetrics(t *testing.T) {
	s := start(t, 4)
	wiretest.Dial(t, s.addr).MustGet("/fast")
	resp, err := http.Get("http://" + s.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{"\nbystander_pool_slots 4\n", "\nbystander_pool_slot_acquisitions_total 1\n", `bystander_pool_queue_wait_seconds{quantile="0.99"}`, "\nprocess_cpu_seconds_total "} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %q", strings.TrimSpace(want))
		}
	}
}
