package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bystander-kit/bystander/internal/proc"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/wiretest"
)

// These benchmarks run the real binary as its own process and drive it with
// the kit's raw client, so the server's CPU is its own:
//
//	go test ./loopserver -run '^$' -bench . -benchtime 5s
//
// The figures and how they compare are in docs/measurements.md.

// spawn starts this package's server as its own process.
func spawn(b *testing.B, args ...string) (string, int) {
	addr, cmd := wiretest.StartServer(b, ".", args...)
	return addr, cmd.Process.Pid
}

// BenchmarkSlow16 is the ceiling experiment: 16 keep-alive callers on /slow,
// block 5ms held in nanosleep, 4 loops; the ceiling is 4 / 5 ms = 800 req/s.
func BenchmarkSlow16(b *testing.B) {
	for _, v := range []struct{ name, engine, lock string }{
		{"gnet", "gnet", "true"}, {"evio", "evio", "true"},
		{"gnet-unlocked", "gnet", "false"}, {"evio-unlocked", "evio", "false"},
	} {
		b.Run(v.name, func(b *testing.B) {
			addr, _ := spawn(b, "--engine", v.engine, "--lock-threads="+v.lock, "--block", "5ms", "--block-mode", "syscall")
			res := wiretest.Load(addr, "/slow", 16, b.N)
			if res.Failed > 0 {
				b.Fatalf("%d failed requests", res.Failed)
			}
			rps, mean := res.RPS(), res.MeanBlockedNs
			b.ReportMetric(rps, "req/s")
			b.ReportMetric(100*rps/800, "%nominal_ceiling")
			if mean > 0 {
				b.ReportMetric(100*rps/(4/(mean/1e9)), "%measured_ceiling")
				b.ReportMetric(mean/1e6, "ms_mean_block")
			}
		})
	}
}

// BenchmarkFastCPU measures the server's CPU per /fast request at 64
// keep-alive connections for every engine of the loop server and Go's
// other servers (net/http, fasthttp, netpoll) and, where Debian's nginx is
// installed, nginx on the same load with one worker (the reference the loop
// server's target was set against: nginx 1.22 with one worker measured 10.0 us
// per request, gnet 10.7-11.4, on this kind of 2-core machine) and with 4
// workers (the same shape as 4 loops), beside gnet with its loops not
// locked and gnet without the observers (no heartbeat, no detector). The
// servers take turns, b.N requests each per round over 5 rounds, each first
// in its turn, and the medians are reported, with the loop servers'
// per-round ratios to nginx with 4 workers (median [min-max] with -v),
// so the ratio is measured side by side on a noisy machine:
//
//	go test ./loopserver -run '^$' -bench FastCPU -benchtime 100000x
func BenchmarkFastCPU(b *testing.B) {
	ts := startFastTargets(b)
	b.ResetTimer()
	for round := range 5 {
		// Each server first in its turn: the one after a warm-up or a
		// neighbour's burst is not always the same.
		for i := range ts {
			t := ts[(i+round)%len(ts)]
			gen := proc.Self()
			t.us = append(t.us, wiretest.ServerCPUPerRequest(b, t.addr, t.pid, "/fast", 64, b.N))
			t.gen = append(t.gen, float64(proc.Self().CPUNs()-gen.CPUNs())/1e3/float64(b.N))
		}
	}
	b.StopTimer()
	for _, t := range ts {
		b.ReportMetric(results.Median(t.us), t.name+"_cpu_us/req")
		b.Logf("%s: server CPU us/req per round %.1f; client %.1f", t.name, t.us, results.Median(t.gen))
	}
	reportVsNginx(b, ts)
	// The same comparison with Debian's wrk as the client (the load the
	// reference figures above were taken with): the client's pattern changes how many
	// ready connections each loop wake-up finds, so it changes the ratio.
	wrk, err := exec.LookPath("wrk")
	if err != nil || len(ts) < 3 || b.N < 1000 { // not on the benchmark's probing run
		return
	}
	fastUnderWrk(b, wrk, ts)
}

// fastTarget is one of BenchmarkFastCPU's servers: its CPU per request
// each round (us), and the client's (gen).
type fastTarget struct {
	name, addr string
	pid        int
	us, gen    []float64
}

// startFastTargets starts BenchmarkFastCPU's servers, each as its own
// process: every engine of the loop server, nginx with 1 and 4 workers
// where installed, gnet unlocked and unwatched, and Go's other servers.
func startFastTargets(b *testing.B) []*fastTarget {
	var ts []*fastTarget
	for _, eng := range engines {
		addr, pid := spawn(b, "--engine", eng)
		ts = append(ts, &fastTarget{name: eng, addr: addr, pid: pid})
	}
	if addr, pid, ok := wiretest.Nginx(b, 1); ok {
		ts = append(ts, &fastTarget{name: "nginx", addr: addr, pid: pid})
	}
	if addr, pid, ok := wiretest.Nginx(b, 4); ok {
		ts = append(ts, &fastTarget{name: "nginx4w", addr: addr, pid: pid})
	}
	// The loops not locked to their threads, for comparison.
	addr, pid := spawn(b, "--engine", "gnet", "--lock-threads=false")
	ts = append(ts, &fastTarget{name: "gnet-unlocked", addr: addr, pid: pid})
	// Without the observers (the heartbeat and the blocked-loop detector,
	// on as the experiment runs it): their share of the cost.
	addr, pid = spawn(b, "--engine", "gnet", "--lag-interval", "0", "--block-warn", "0")
	ts = append(ts, &fastTarget{name: "gnet-unwatched", addr: addr, pid: pid})
	// Go's other servers: net/http (the pool server without its pool),
	// fasthttp and netpoll (goserver).
	for _, o := range []struct {
		name, dir string
		args      []string
	}{{"nethttp", "../poolserver", []string{"--slots", "0"}}, {"fasthttp", "../goserver", []string{"--engine", "fasthttp"}},
		{"netpoll", "../goserver", []string{"--engine", "netpoll"}}} {
		addr, cmd := wiretest.StartServer(b, o.dir, o.args...)
		ts = append(ts, &fastTarget{name: o.name, addr: addr, pid: cmd.Process.Pid})
	}
	return ts
}

// reportVsNginx reports every server's median against nginx with one
// worker, and the loop servers' per-round ratios to nginx with 4 workers.
func reportVsNginx(b *testing.B, ts []*fastTarget) {
	us := map[string]float64{}
	for _, t := range ts {
		us[t.name] = results.Median(t.us)
	}
	if us["nginx"] > 0 { // every server against nginx with one worker
		for _, t := range ts {
			if t.name != "nginx" {
				b.ReportMetric(us[t.name]/us["nginx"], t.name+"/nginx")
			}
		}
	}
	var w4 *fastTarget
	for _, t := range ts {
		if t.name == "nginx4w" {
			w4 = t
		}
	}
	if w4 != nil { // the loop servers against nginx of their shape, round by round
		for _, t := range ts {
			if !slices.Contains(engines, t.name) && !strings.HasPrefix(t.name, "gnet-") {
				continue
			}
			var r []float64
			for i := range t.us {
				r = append(r, t.us[i]/w4.us[i])
			}
			b.ReportMetric(results.Median(r), t.name+"/nginx4w")
			b.Logf("%s / nginx with 4 workers per round %.2f: median %.2f [%.2f-%.2f]", t.name, r, results.Median(r), slices.Min(r), slices.Max(r))
		}
	}
}

// fastUnderWrk reports each server's CPU per /fast request under wrk (64
// connections, 3 s, 3 rounds), and gnet's against nginx's.
func fastUnderWrk(b *testing.B, wrk string, ts []*fastTarget) {
	wrkUs := map[string][]float64{}
	for range 3 {
		for _, t := range ts {
			before, _ := wiretest.TreeCPU(t.pid)
			out, err := exec.Command(wrk, "-t2", "-c64", "-d3s", "http://"+t.addr+"/fast").Output()
			if err != nil {
				b.Fatalf("wrk: %v", err)
			}
			after, _ := wiretest.TreeCPU(t.pid)
			var n float64
			if m := regexp.MustCompile(`([0-9]+) requests in`).FindSubmatch(out); m != nil {
				n, _ = strconv.ParseFloat(string(m[1]), 64)
			}
			if n > 0 {
				wrkUs[t.name] = append(wrkUs[t.name], float64(after-before)/1e3/n)
			}
		}
	}
	for _, t := range ts {
		b.Logf("%s under wrk: server CPU us/req per round %.1f", t.name, wrkUs[t.name])
		b.ReportMetric(results.Median(wrkUs[t.name]), t.name+"_wrk_cpu_us/req")
	}
	b.ReportMetric(results.Median(wrkUs["gnet"])/results.Median(wrkUs["nginx"]), "gnet/nginx_wrk")
	b.ReportMetric(results.Median(wrkUs["gnet-unlocked"])/results.Median(wrkUs["nginx"]), "gnet-unlocked/nginx_wrk")
}

// BenchmarkFastCPUBefore sets this loop server's CPU per /fast request
// beside an earlier build's, on every engine, the two taking turns over 7
// rounds (64 keep-alive connections, b.N requests each), so a change to the
// hot path is judged side by side on a noisy machine. It reports each
// build's median and the median of the per-round ratios (after / before):
//
//	git worktree add /tmp/before REV && (cd /tmp/before && go build -o bin/ ./loopserver)
//	BYSTANDER_BEFORE=/tmp/before/bin/loopserver go test ./loopserver -run '^$' -bench FastCPUBefore -benchtime 100000x
func BenchmarkFastCPUBefore(b *testing.B) {
	before := os.Getenv("BYSTANDER_BEFORE")
	if before == "" {
		b.Skip("BYSTANDER_BEFORE names no earlier loopserver to compare with")
	}
	if b.N < 1000 { // the benchmark's probing run: too few requests to read a CPU figure from
		return
	}
	for _, eng := range engines {
		b.Run(eng, func(b *testing.B) {
			addr := wiretest.FreeAddr(b)
			old := wiretest.Start(b, before, "--engine", eng, "--addr", addr, "--admin", "")
			newAddr, newPID := spawn(b, "--engine", eng)
			var was, now, ratio []float64
			b.ResetTimer()
			for range 7 {
				w := wiretest.ServerCPUPerRequest(b, addr, old.Process.Pid, "/fast", 64, b.N)
				n := wiretest.ServerCPUPerRequest(b, newAddr, newPID, "/fast", 64, b.N)
				was, now, ratio = append(was, w), append(now, n), append(ratio, n/w)
			}
			b.StopTimer()
			b.ReportMetric(results.Median(was), "before_cpu_us/req")
			b.ReportMetric(results.Median(now), "after_cpu_us/req")
			b.ReportMetric(results.Median(ratio), "after/before")
			b.Logf("%s: before %.1f, after %.1f us/req per round", eng, was, now)
		})
	}
}
