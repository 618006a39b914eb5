package main

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/bystander-kit/bystander/internal/proc"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/wiretest"
)

// These benchmarks run the real binary as its own process and drive it with
// the kit's raw client (figures and their reading: docs/measurements.md):
//
//	go test ./poolserver -run '^$' -bench . -benchtime 40000x

// spawn starts this package's server as its own process.
func spawn(b *testing.B, args ...string) (string, int) {
	addr, cmd := wiretest.StartServer(b, ".", args...)
	return addr, cmd.Process.Pid
}

// BenchmarkSlow drives /slow (5 ms, time.Sleep) on 200 slots with 64 and 128
// keep-alive callers and says which bound holds: the slots (200 / block),
// the callers (callers / block, Little's law) or the CPU of this 2-core
// machine, shared by server and client.
func BenchmarkSlow(b *testing.B) {
	for _, tc := range []struct {
		callers int
		mode    string
	}{{64, "sleep"}, {128, "sleep"}, {64, "syscall"}, {128, "syscall"}} {
		callers := tc.callers
		b.Run(fmt.Sprintf("callers=%d/%s", callers, tc.mode), func(b *testing.B) {
			addr, pid := spawn(b, "--slots", "200", "--block", "5ms", "--block-mode", tc.mode)
			wiretest.Load(addr, "/slow", callers, 2*callers) // warm up: dial every connection
			srv0, err := wiretest.TreeCPU(pid)
			if err != nil {
				b.Fatal(err)
			}
			gen0 := proc.Self().CPUNs()
			m0, _ := proc.ReadMachine()
			b.ResetTimer()
			res := wiretest.Load(addr, "/slow", callers, b.N)
			b.StopTimer()
			if res.Failed > 0 {
				b.Fatalf("%d failed requests", res.Failed)
			}
			srv1, _ := wiretest.TreeCPU(pid)
			m1, _ := proc.ReadMachine()
			machineBusy := m1.BusySince(m0)
			serverUs := float64(srv1-srv0) / 1e3 / float64(b.N)
			clientUs := float64(proc.Self().CPUNs()-gen0) / 1e3 / float64(b.N)
			block := res.MeanBlockedNs / 1e9
			slotsCeil := 200 / block
			callersCeil := float64(callers) / block
			cpuCeil := float64(runtime.NumCPU()) * 1e6 / (serverUs + clientUs)
			rps := res.RPS()
			b.ReportMetric(rps, "req/s")
			b.ReportMetric(100*rps/(float64(min(callers, 200))/0.005), "%nominal_ceiling")
			b.ReportMetric(serverUs, "server_cpu_us/req")
			b.ReportMetric(clientUs, "client_cpu_us/req")
			b.ReportMetric(res.MeanBlockedNs/1e6, "ms_mean_block")
			// The CPU bounds when the machine is saturated; otherwise the
			// lower of the two ceilings does.
			bound, limit := "callers (Little's law)", callersCeil
			if slotsCeil < limit {
				bound, limit = "slots", slotsCeil
			}
			switch {
			case machineBusy >= 0.9:
				bound, limit = "CPU (machine saturated)", cpuCeil
			case rps < 0.75*limit:
				// No ceiling is near and the CPU is not saturated: what is
				// left is latency added to each request beyond the block.
				bound = "no ceiling: per-request latency beyond the block (scheduling), nearest ceiling " + bound
			}
			b.ReportMetric(100*machineBusy, "%machine_busy")
			if b.N < 1000 {
				return // the benchmark's first probing run: too short to read
			}
			b.Logf("callers %d: %.0f req/s; ceilings: slots %.0f, callers %.0f, CPU %.0f (%d cores / %.1f us per request, server %.1f + client %.1f); machine %.0f%% busy: bound by %s, at %.0f%% of it",
				callers, rps, slotsCeil, callersCeil, cpuCeil, runtime.NumCPU(), serverUs+clientUs, serverUs, clientUs, 100*machineBusy, bound, 100*rps/limit)
		})
	}
}

// BenchmarkPoolOverhead compares the server's CPU per /fast request with the
// pool (200 slots) and without it (--slots 0), same binary, same load, in
// turns over 5 rounds; medians are reported.
func BenchmarkPoolOverhead(b *testing.B) {
	type target struct {
		name string
		addr string
		pid  int
		us   []float64
	}
	var ts []*target
	for _, slots := range []string{"200", "0"} {
		addr, pid := spawn(b, "--slots", slots)
		ts = append(ts, &target{name: "slots=" + slots, addr: addr, pid: pid})
	}
	b.ResetTimer()
	for range 5 {
		for _, t := range ts {
			t.us = append(t.us, wiretest.ServerCPUPerRequest(b, t.addr, t.pid, "/fast", 64, b.N))
		}
	}
	b.StopTimer()
	for _, t := range ts {
		b.Logf("%s: server CPU us/req per round %.1f", t.name, t.us)
	}
	pool, bare := results.Median(ts[0].us), results.Median(ts[1].us)
	b.ReportMetric(pool, "pool_cpu_us/req")
	b.ReportMetric(bare, "nopool_cpu_us/req")
	b.ReportMetric(pool/bare, "pool/nopool")
}
