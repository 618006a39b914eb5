package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/serverflags"
	"github.com/bystander-kit/bystander/internal/wiretest"
)

// start runs goserver's engine on a free loopback port until the test ends.
func start(t *testing.T, engine string) (addr, adminAddr string) {
	t.Helper()
	o := options{Common: serverflags.Defaults("127.0.0.1:0", "127.0.0.1:0"), engine: engine}
	o.OffloadWorkers = 16
	if err := o.Validate("goserver"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, o, func(a, ad net.Addr) { ready <- [2]string{a.String(), ad.String()} })
	}()
	var got [2]string
	select {
	case got = <-ready:
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
		case <-time.After(5 * time.Second):
			t.Error("server did not stop within 5 s")
		}
	})
	return got[0], got[1]
}

// differs are the cases of the shared table of malformed requests where
// an engine's own parser answers otherwise than the kit's decoder.
var differs = map[string]map[string]wiretest.Differ{
	"fasthttp": {
		"HTTP/2.0":                   {Status: 200, Why: "fasthttp serves a request line of any HTTP/x.y as HTTP/1.1 (RFC 9112 allows a 505, does not require it)"},
		"space in header name":       {Status: 200, Why: "fasthttp keeps a header line whose name holds a space, which is not a token (RFC 9110 5.1), instead of answering 400"},
		"obsolete folding":           {Status: 200, Why: "fasthttp joins a folded header line, which RFC 9112 5.2 allows instead of a 400"},
		"body over cap":              {Status: 400, Why: "fasthttp refuses a body over its MaxRequestBodySize with 400 \"Error when parsing request\", not 413"},
		"other transfer coding":      {Status: 400, Why: "fasthttp refuses a transfer coding it does not know with 400, not 501"},
		"empty lines only, too many": {Status: 400, Why: "fasthttp reads the empty lines as a malformed request and closes with the rest unread, which resets the answer away"},
	},
	"netpoll": {}, // the kit's own decoder (internal/h1): no difference
}

// TestEndpoints: each engine answers the protocol's four routes as
// docs/protocol.md says, with no X-Loop (no loops) and no X-Queued-Ns (no
// slots).
func TestEndpoints(t *testing.T) {
	for _, e := range Engines {
		t.Run(e, func(t *testing.T) {
			addr, _ := start(t, e)
			wiretest.CheckEndpoints(t, addr, -1)
		})
	}
}

// TestMalformed: the shared table of malformed and refused requests; a
// bystander connection keeps being served throughout.
func TestMalformed(t *testing.T) {
	for _, e := range Engines {
		t.Run(e, func(t *testing.T) {
			addr, _ := start(t, e)
			wiretest.CheckRefusals(t, addr, differs[e])
		})
	}
}

// TestBlockingCallHoldsOnlyItsOwn: a /slow blocking 300 ms holds its own
// connection's goroutine only: /fast on another connection meanwhile is
// answered at once, on every engine.
func TestBlockingCallHoldsOnlyItsOwn(t *testing.T) {
	for _, e := range Engines {
		t.Run(e, func(t *testing.T) {
			addr, _ := start(t, e)
			done := make(chan wiretest.Answer, 4)
			for range 4 {
				c := wiretest.Dial(t, addr)
				go func() { done <- c.MustGet("/slow?block=300ms") }()
			}
			time.Sleep(50 * time.Millisecond)
			if a := wiretest.Dial(t, addr).MustGet("/fast"); a.Status != 200 || a.Elapsed > 200*time.Millisecond {
				t.Errorf("/fast beside 4 blocked calls: %d in %s", a.Status, a.Elapsed)
			}
			for range 4 {
				if a := <-done; a.Status != 200 {
					t.Errorf("/slow: %d", a.Status)
				}
			}
		})
	}
}

// TestStats: /stats counts the requests by route.
func TestStats(t *testing.T) {
	for _, e := range Engines {
		t.Run(e, func(t *testing.T) {
			addr, admin := start(t, e)
			c := wiretest.Dial(t, addr)
			for range 3 {
				c.MustGet("/fast")
			}
			resp, err := http.Get("http://" + admin + "/stats")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var st Stats
			if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
				t.Fatal(err)
			}
			if st.Engine != e || st.Requests[1].Route != "/fast" || st.Requests[1].Requests != 3 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"--engine=netpoll", "--block=20ms"}, true},
		{[]string{"--engine=nethttp"}, false},
		{[]string{"--engine=gnet"}, false},
		{[]string{"--delay=-1ms"}, false},
		{[]string{"extra"}, false},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if (err == nil) != tc.ok {
			t.Errorf("%v: err %v, want ok=%v", tc.args, err, tc.ok)
		}
	}
}

// TestPortInUse: a taken port is one clear line on stderr and exit status 1.
func TestPortInUse(t *testing.T) {
	bin := wiretest.Build(t, ".")
	for _, e := range Engines {
		wiretest.CheckPortInUse(t, bin, "--engine", e)
	}
}

// TestSignalStops: SIGINT and SIGTERM stop the server within 1 s while a
// handler is inside a 5 s block.
func TestSignalStops(t *testing.T) {
	bin := wiretest.Build(t, ".")
	for _, e := range Engines {
		wiretest.CheckSignalStops(t, bin, "--engine", e)
	}
}

// TestTimeouts: each engine closes what the kit's servers close, with the
// same flags.
func TestTimeouts(t *testing.T) {
	for _, e := range Engines {
		t.Run(e, func(t *testing.T) {
			wiretest.CheckTimeouts(t, func(args ...string) string {
				addr, _ := wiretest.StartServer(t, ".", append([]string{"--engine", e}, args...)...)
				return addr
			})
		})
	}
}

// The hardening the loop server passes, on every engine: each case failed
// first on netpoll (a client that never reads, half a request) or
// fasthttp (out of descriptors).

func TestClientNeverReads(t *testing.T) {
	for _, e := range Engines {
		t.Run(e, func(t *testing.T) {
			addr, cmd := wiretest.StartServer(t, ".", "--engine", e)
			if e == "netpoll" { // it reads all input, whatever the handler does (netpoll.go)
				wiretest.CheckClientNeverReadsHeld(t, addr, cmd.Process.Pid)
				return
			}
			wiretest.CheckClientNeverReads(t, addr, cmd.Process.Pid)
		})
	}
}

func TestBigPipelineAnswered(t *testing.T) {
	for _, e := range Engines {
		t.Run(e, func(t *testing.T) {
			addr, _ := wiretest.StartServer(t, ".", "--engine", e)
			wiretest.CheckBigPipelineAnswered(t, addr)
		})
	}
}

func TestPartialRequest(t *testing.T) {
	for _, e := range Engines {
		t.Run(e, func(t *testing.T) {
			addr, cmd := wiretest.StartServer(t, ".", "--engine", e, "--header-timeout", "1s")
			wiretest.CheckPartialRequest(t, addr, cmd.Process.Pid)
		})
	}
}

func TestOutOfDescriptors(t *testing.T) {
	for _, e := range Engines {
		t.Run(e, func(t *testing.T) {
			addr, cmd := wiretest.StartLimited(t, wiretest.Build(t, "."), 1024, "--engine", e)
			wiretest.CheckOutOfDescriptors(t, addr, cmd)
		})
	}
}

// TestEngineOf: every engine --engine takes is made by its own name, and
// none is made that it does not take.
func TestEngineOf(t *testing.T) {
	if len(engineOf) != len(Engines) {
		t.Fatalf("%d engines made, %d taken", len(engineOf), len(Engines))
	}
	for _, e := range Engines {
		if mk := engineOf[e]; mk == nil || !strings.Contains(fmt.Sprintf("%T", mk()), e+"Engine") {
			t.Errorf("--engine %s makes %T", e, mk)
		}
	}
}
