package conform

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/wiretest"
)

func statuses(r *Report) map[string]string {
	m := map[string]string{}
	for _, c := range r.Checks {
		m[c.ID] = c.Status
	}
	return m
}

func describe(r *Report) string {
	var sb strings.Builder
	r.Write(&sb)
	return sb.String()
}

// The fake server without a fault passes everything: each broken server
// below differs from it by one thing only.
func TestFakeCorrect(t *testing.T) {
	r := Run(context.Background(), fakeServer(t, 2, correct), Options{})
	for _, c := range r.Checks {
		if c.Status != Pass {
			t.Errorf("%s: %s %s", c.ID, c.Status, c.Reason)
		}
	}
	if !r.OK() || r.Loops != 2 {
		t.Fatalf("OK %v, loops %d:\n%s", r.OK(), r.Loops, describe(r))
	}
}

// Each deliberately broken server is caught by the check that names its
// fault, fails the check as a whole, and blocks the phases that need it.
func TestBrokenServers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		f      fault
		check  string
		status string
		blocks string // a phase it must block, if any
	}{
		{"async blocks", asyncBlocks, CheckAsyncFreesLoop, Fail, "stall"},
		{"continuation on another loop", otherLoop, CheckContinuation, Fail, "trace"},
		{"no X-Blocked-Ns", noBlockedNs, CheckBlockedNs, Missing, ""},
		{"closes after every answer", closeEvery, CheckKeepAlive, Fail, "sweep"},
		{"slow off the loop", slowOffLoop, CheckSlowHoldsLoop, Fail, "sweep"},
		{"offload holds the loop", offloadHoldsLoop, CheckOffloadFrees, Fail, "offload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Run(context.Background(), fakeServer(t, 2, tc.f), Options{})
			got := r.Get(tc.check)
			if got.Status != tc.status {
				t.Fatalf("%s: %s (%s), want %s:\n%s", tc.check, got.Status, got.Reason, tc.status, describe(r))
			}
			if got.Reason == "" {
				t.Errorf("%s: no reason given", tc.check)
			}
			if r.OK() {
				t.Fatalf("a server with the fault passes as a whole:\n%s", describe(r))
			}
			if tc.blocks != "" && r.Blocking(tc.blocks) == "" {
				t.Errorf("the %s phase is not blocked:\n%s", tc.blocks, describe(r))
			}
			if !strings.Contains(describe(r), "FAILED") {
				t.Errorf("the table does not say it failed")
			}
		})
	}
}

// timing are the checks decided on time, which a busy machine can leave
// undecided.
var timing = map[string]bool{CheckSlowHoldsLoop: true, CheckAsyncFreesLoop: true, CheckOffloadFrees: true}

// TestCloseAfterError: closing the connection after a 400, 404 or
// 405, as Tomcat and httpd always do, is allowed (the published
// experiment's Tomcat failed the check for it).
func TestCloseAfterError(t *testing.T) {
	r := Run(context.Background(), fakeServer(t, 2, closeOnError), Options{})
	if got := r.Get(CheckErrors); got.Status != Pass || !r.OK() {
		t.Fatalf("%s %s:\n%s", got.Status, got.Reason, describe(r))
	}
}

// TestTooBusyToJudge: a timing a busy machine could have made, neither
// what a free loop nor what a held one does, is judged again, then said
// to be too busy to judge with its figures; never a FAIL, and the check as
// a whole does not fail for it.
func TestTooBusyToJudge(t *testing.T) {
	r := Run(context.Background(), fakeServer(t, 2, asyncAmbiguous), Options{})
	got := r.Get(CheckAsyncFreesLoop)
	if got.Status != Busy || !strings.Contains(got.Reason, "machine too busy to judge") || !strings.Contains(got.Reason, "3 samples") {
		t.Fatalf("%s %s, want %s after 3 samples:\n%s", got.Status, got.Reason, Busy, describe(r))
	}
	if !r.OK() || r.Failed() || !r.Unjudged() {
		t.Errorf("OK %v failed %v unjudged %v:\n%s", r.OK(), r.Failed(), r.Unjudged(), describe(r))
	}
	if !strings.Contains(describe(r), "could not be judged") {
		t.Errorf("the table does not say a check could not be judged:\n%s", describe(r))
	}
}

// TestStarvedServer: a server that gets no CPU for a while starts every
// handler late, its loop free: the timing checks that a late start would
// otherwise fail (/async or /offload holding the loop) are not failed; a
// loop held shows as handlers spaced a call apart, which starvation does
// not make. Found running the check on the kit's loop server at nice 19
// beside 12 noisy neighbours: async-frees-loop FAIL.
func TestStarvedServer(t *testing.T) {
	r := Run(context.Background(), fakeServer(t, 2, starved), Options{})
	for _, id := range []string{CheckAsyncFreesLoop, CheckOffloadFrees} {
		if got := r.Get(id); got.Status == Fail {
			t.Errorf("%s on a starved server: %s %s", id, got.Status, got.Reason)
		}
	}
	if r.Failed() {
		t.Errorf("a correct, starved server failed the check:\n%s", describe(r))
	}
}

// A server said to have loops but answering without X-Loop fails; one not
// said to have any is taken as a pool and its loop checks are skipped.
func TestNoLoops(t *testing.T) {
	addr, _ := wiretest.StartServer(t, "../../poolserver")
	r := Run(context.Background(), addr, Options{})
	if !r.OK() || r.Loops != 0 {
		t.Fatalf("pool server: OK %v loops %d:\n%s", r.OK(), r.Loops, describe(r))
	}
	st := statuses(r)
	for _, id := range []string{CheckLoops, CheckSlowHoldsLoop, CheckAsyncFreesLoop, CheckContinuation, CheckOffloadFrees} {
		if st[id] != Skip {
			t.Errorf("pool server %s: %s, want SKIP", id, st[id])
		}
	}
	for _, id := range []string{CheckFast, CheckSlow, CheckBlockedNs, CheckAsync, CheckOffload, CheckKeepAlive, CheckErrors} {
		if st[id] != Pass {
			t.Errorf("pool server %s: %s, want PASS:\n%s", id, st[id], describe(r))
		}
	}
	r = Run(context.Background(), addr, Options{Loops: 4})
	if r.OK() || r.Get(CheckLoops).Status != Missing || r.Blocking("stall") == "" {
		t.Fatalf("said to have 4 loops, no X-Loop: OK %v, %s:\n%s", r.OK(), r.Get(CheckLoops).Status, describe(r))
	}
}

// The kit's own loop server passes on every engine, and the loops it
// learns are the server's. On a machine too busy to tell, a timing check
// may say so; it never fails the kit's own servers.
func TestKitLoopServer(t *testing.T) {
	for _, engine := range []string{"gnet", "evio", "nbio"} {
		t.Run(engine, func(t *testing.T) {
			addr, _ := wiretest.StartServer(t, "../../loopserver", "--engine", engine, "--loops", "3")
			r := Run(context.Background(), addr, Options{})
			for _, c := range r.Checks {
				if c.Status != Pass && !(c.Status == Busy && timing[c.ID]) {
					t.Errorf("%s: %s %s", c.ID, c.Status, c.Reason)
				}
			}
			if r.Loops != 3 {
				t.Errorf("loops %d, want 3", r.Loops)
			}
			// The JSON form reads back.
			var back Report
			if err := json.Unmarshal(r.JSON(), &back); err != nil || back.Schema != Schema || len(back.Checks) != len(r.Checks) {
				t.Fatalf("JSON: %v %+v", err, back)
			}
		})
	}
}

// The kit's goroutine servers (net/http as the pool server without its
// pool, fasthttp and netpoll) pass every check a server without loops
// must, and are taken for what they are: no X-Loop, so no loops.
func TestKitGoServers(t *testing.T) {
	servers := []struct {
		name string
		dir  string
		args []string
	}{
		{"nethttp", "../../poolserver", []string{"--slots", "0"}},
		{"fasthttp", "../../goserver", []string{"--engine", "fasthttp"}},
		{"netpoll", "../../goserver", []string{"--engine", "netpoll"}},
	}
	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) {
			addr, _ := wiretest.StartServer(t, s.dir, s.args...)
			r := Run(context.Background(), addr, Options{})
			if !r.OK() || r.Failed() || r.Loops != 0 {
				t.Fatalf("OK %v failed %v loops %d:\n%s", r.OK(), r.Failed(), r.Loops, describe(r))
			}
			st := statuses(r)
			for _, id := range []string{CheckFast, CheckSlow, CheckBlockedNs, CheckAsync, CheckOffload, CheckKeepAlive, CheckErrors} {
				if st[id] != Pass {
					t.Errorf("%s: %s, want PASS:\n%s", id, st[id], describe(r))
				}
			}
		})
	}
}

// Nothing listening: a clear failure, not a hang.
func TestNothingListens(t *testing.T) {
	r := Run(context.Background(), wiretest.FreeAddr(t), Options{})
	if r.OK() || r.Get(CheckFast).Status != Fail || !strings.Contains(r.Get(CheckFast).Reason, "connecting") {
		t.Fatalf("%s", describe(r))
	}
}

// hostileServer answers every request with what f writes, on raw
// connections, until the test ends.
func hostileServer(t *testing.T, f func(nc net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				br := bufio.NewReader(nc)
				for {
					if _, err := http.ReadRequest(br); err != nil {
						return
					}
					f(nc)
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// TestHostileAnswers: a server's answer is a stranger's bytes. Headers
// that never end, too many header lines and a body far over what the
// protocol's one-line bodies need are refused with a reason, read no
// further than a cap and in bounded time, never taken as a pass.
func TestHostileAnswers(t *testing.T) {
	endless := func(nc net.Conn) {
		_, _ = io.WriteString(nc, "HTTP/1.1 200 OK\r\n")
		line := []byte("X-Filler: " + strings.Repeat("a", 1000) + "\r\n")
		for range 1 << 20 { // 1 GB of headers, if anyone read them
			if _, err := nc.Write(line); err != nil {
				return
			}
		}
	}
	manyLines := func(nc net.Conn) {
		var b strings.Builder
		b.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n")
		for i := range 500 {
			fmt.Fprintf(&b, "X-%d: 1\r\n", i)
		}
		b.WriteString("\r\nfast\n")
		_, _ = io.WriteString(nc, b.String())
	}
	hugeBody := func(nc net.Conn) {
		fmt.Fprintf(nc, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nX-Handler-Start: %d\r\n\r\n", 1<<30, time.Now().UnixNano())
		chunk := make([]byte, 64<<10)
		for range 1 << 14 {
			if _, err := nc.Write(chunk); err != nil {
				return
			}
		}
	}
	for name, f := range map[string]func(net.Conn){"endless headers": endless, "500 header lines": manyLines, "a 1 GB body": hugeBody} {
		t.Run(name, func(t *testing.T) {
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			r := Run(context.Background(), hostileServer(t, f), Options{Timeout: 2 * time.Second})
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if r.OK() || r.Get(CheckFast).Status != Fail || !strings.Contains(r.Get(CheckFast).Reason, "over") {
				t.Errorf("fast: %s %s", r.Get(CheckFast).Status, r.Get(CheckFast).Reason)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("the check took %s", d)
			}
			if grew := int64(after.TotalAlloc) - int64(before.TotalAlloc); grew > 64<<20 {
				t.Errorf("the check allocated %d MB reading it", grew>>20)
			}
		})
	}
}
