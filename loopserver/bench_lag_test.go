package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/lag"
	"github.com/bystander-kit/bystander/internal/protocol"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/wiretest"
)

// BenchmarkLagCost is what the heartbeat costs: server CPU per /fast
// request at 64 keep-alive connections with --lag-interval 1ms and 0 (the
// detector on in both), side by side, 9 alternating rounds, medians, and
// what the heartbeat costs a server with nothing to do (both idle at once):
//
//	go test ./loopserver -run '^$' -bench LagCost -benchtime 100000x
func BenchmarkLagCost(b *testing.B) {
	for _, eng := range engines {
		b.Run(eng, func(b *testing.B) { onAgainstOff(b, eng, "--lag-interval", "1ms") })
	}
}

// BenchmarkDetectorCost is what the blocked-loop detector (loopwatch on
// every loop: Enter and Exit around each request, and its looks on the
// heartbeat's ticks) costs: --block-warn 1ms against 0, the heartbeat on
// in both, measured as BenchmarkLagCost measures it:
//
//	go test ./loopserver -run '^$' -bench DetectorCost -benchtime 100000x
func BenchmarkDetectorCost(b *testing.B) {
	for _, eng := range engines {
		b.Run(eng, func(b *testing.B) { onAgainstOff(b, eng, "--block-warn", "1ms") })
	}
}

// onAgainstOff runs two loop servers of engine eng, flag at on and at 0,
// and reports the server CPU per /fast request of each (9 alternating
// rounds of b.N requests at 64 connections, medians) and what the flag
// costs a server with nothing to do (both idle for 5 s at once).
func onAgainstOff(b *testing.B, eng, flag, on string) {
	type variant struct {
		addr string
		pid  int
		us   []float64
	}
	var vs []*variant
	for _, v := range []string{on, "0"} {
		addr, pid := spawn(b, "--engine", eng, flag, v)
		vs = append(vs, &variant{addr: addr, pid: pid})
	}
	var idle [2]int64
	for i, v := range vs {
		idle[i], _ = wiretest.TreeCPU(v.pid)
	}
	time.Sleep(5 * time.Second)
	for i, v := range vs {
		after, _ := wiretest.TreeCPU(v.pid)
		idle[i] = after - idle[i]
	}
	b.ReportMetric(float64(idle[0]-idle[1])/5e9*100, "idle_%core")
	b.ResetTimer()
	for range 9 {
		for _, v := range vs {
			v.us = append(v.us, wiretest.ServerCPUPerRequest(b, v.addr, v.pid, "/fast", 64, b.N))
		}
	}
	b.StopTimer()
	onUs, offUs := results.Median(vs[0].us), results.Median(vs[1].us)
	b.ReportMetric(onUs, "on_cpu_us/req")
	b.ReportMetric(offUs, "off_cpu_us/req")
	b.ReportMetric(100*(onUs/offUs-1), "%cost")
	b.Logf("server CPU us/req per round: %s %s %.2f, 0 %.2f; idle for 5s: %s against %s of CPU",
		flag, on, vs[0].us, vs[1].us, time.Duration(idle[0]), time.Duration(idle[1]))
}

// BenchmarkLagResolution is what the heartbeat sees, at 1ms and 500us:
// each loop's lag p99 after 3s idle, then, with a 5 ms /slow on loop 0
// every 200 ms (20 blocks, at most one per two 100 ms windows of the /lag
// stream), the held loop's largest lag in each block (a block of B shows as
// B - interval to B: the beat was handed up to an interval after it began), the other loops' largest lag in any window, and how long
// after a block began the detector saw it:
//
//	go test ./loopserver -run '^$' -bench LagResolution -benchtime 1x
func BenchmarkLagResolution(b *testing.B) {
	for _, eng := range engines {
		for _, iv := range []string{"1ms", "500us"} {
			b.Run(eng+"/"+iv, func(b *testing.B) {
				// One measurement of fixed length, whatever b.N is.
				lagResolution(b, eng, iv)
			})
		}
	}
}

func lagResolution(b *testing.B, eng, iv string) {
	addr, admin := wiretest.FreeAddr(b), wiretest.FreeAddr(b)
	wiretest.Start(b, wiretest.Build(b, "."), "--addr", addr, "--admin", admin, "--engine", eng, "--block-mode", "syscall", "--lag-interval", iv)
	time.Sleep(3 * time.Second)
	var idle Stats
	getJSON(b, "http://"+admin+"/stats", &idle)
	var idleP99 []float64
	for _, l := range idle.Loops {
		idleP99 = append(idleP99, float64(l.LagP99Ns)/1e6)
	}
	conns := map[int64]*wiretest.Conn{}
	for len(conns) < 4 {
		c := wiretest.Dial(b, addr)
		conns[c.MustGet("/fast").Int(protocol.HeaderLoop)] = c
	}
	evs := make(chan []lag.Event, 1)
	go func() {
		resp, err := http.Get("http://" + admin + "/lag?for=4500ms")
		if err != nil {
			evs <- nil
			return
		}
		defer resp.Body.Close()
		var out []lag.Event
		dec := json.NewDecoder(resp.Body)
		for dec.More() {
			var ev lag.Event
			if dec.Decode(&ev) != nil {
				break
			}
			out = append(out, ev)
		}
		evs <- out
	}()
	time.Sleep(200 * time.Millisecond)
	for range 20 {
		conns[0].MustGet("/slow?block=5ms")
		time.Sleep(200 * time.Millisecond)
	}
	var st Stats
	getJSON(b, "http://"+admin+"/stats", &st)
	// A block may straddle two windows (the first shows the beat's wait so
	// far, the second all of it): consecutive windows of loop 0 with a lag
	// over 1 ms are one block, whose lag is their largest.
	var held, others []float64
	run := 0.0
	for _, ev := range <-evs {
		for _, le := range ev.Loops {
			lagMs := float64(le.LagMaxNs) / 1e6
			switch {
			case le.Loop != 0:
				others = append(others, lagMs)
			case lagMs > 1:
				run = max(run, lagMs)
			case run > 0:
				held = append(held, run)
				run = 0
			}
		}
	}
	if run > 0 {
		held = append(held, run)
	}
	slices.Sort(held)
	slices.Sort(others)
	if len(held) == 0 || len(others) == 0 {
		b.Fatalf("no windows: held %v others %d", held, len(others))
	}
	b.ReportMetric(results.Median(idleP99), "idle_lag_p99_ms")
	b.ReportMetric(held[0], "held_lag_min_ms")
	b.ReportMetric(results.Median(held), "held_lag_p50_ms")
	b.ReportMetric(others[len(others)*99/100], "others_window_max_p99_ms")
	b.ReportMetric(float64(st.Detection.P50Ns)/1e6, "detect_p50_ms")
	b.ReportMetric(float64(st.Detection.MaxNs)/1e6, "detect_max_ms")
	b.Logf("idle p99 per loop %.3f ms; held loop: %d blocks in /slow, window max lag %.2f ms; others' window max p50 %.3f p99 %.3f max %.3f ms; detection %+v",
		idleP99, st.Loops[0].BlocksByRoute["/slow"], held, results.Median(others), others[len(others)*99/100], others[len(others)-1], st.Detection)
}

func getJSON(b *testing.B, url string, v any) {
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		b.Fatal(err)
	}
}
