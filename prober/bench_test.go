package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/wiretest"
)

// BenchmarkFootprint is what the stall phase's observers cost the machine:
// the per-connection prober (12 connections, each probed every 10 ms,
// 1,200 probes a second, against the loop server's /async) and the loop
// server's lag heartbeat (each of its 4 loops handed a beat every 1 ms).
// Over 5 rounds, side by side:
//
//   - the prober's own CPU over its window (its result's figure), as a
//     share of the machine (all its cores) and per probe; with
//     BYSTANDER_BEFORE naming an earlier prober binary, that one's beside
//     it, on the same server in the same rounds, and the ratio;
//
//   - the heartbeat: the server's CPU while probed with --lag-interval 1ms
//     less the same with --lag-interval 0 (two servers, probed in turns,
//     each first in every other round), as a share of the machine.
//
//     git worktree add /tmp/before REV && (cd /tmp/before && go build -o bin/ ./prober)
//     BYSTANDER_BEFORE=/tmp/before/bin/prober go test ./prober -run '^$' -bench Footprint -benchtime 1x
func BenchmarkFootprint(b *testing.B) {
	now := wiretest.Build(b, ".")
	before := os.Getenv("BYSTANDER_BEFORE")
	on, onPID := startLoop(b, "--lag-interval", "1ms")
	off, offPID := startLoop(b, "--lag-interval", "0")
	cores := float64(runtime.NumCPU())
	dir := b.TempDir()
	const window = 3500 * time.Millisecond // warm-up 500 ms + 3 s
	// probe runs one prober against addr and returns its CPU share of the
	// machine over its window, its CPU per probe, and the server's share
	// over the prober's whole run.
	probe := func(bin, addr string, serverPID int) (share, perProbe, server float64) {
		out := filepath.Join(dir, "p.json")
		s0, _ := wiretest.TreeCPU(serverPID)
		t0 := time.Now()
		cmd := exec.Command(bin, "--mode", "perconn", "--target", "http://"+addr+"/async", "--conns", "12",
			"--interval", "10ms", "--warmup", "500ms", "--duration", "3s", "--out", out)
		if o, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", bin, err, o)
		}
		s1, _ := wiretest.TreeCPU(serverPID)
		wall := time.Since(t0)
		r, err := results.Read(out)
		if err != nil {
			b.Fatal(err)
		}
		g := r.Generator
		return 100 * float64(g.CPUNs) / float64(window) / cores, g.CPUUsPerRequest, 100 * float64(s1-s0) / float64(wall) / cores
	}
	var share, per, old, oldPer, ratio, beat []float64
	b.ResetTimer()
	for round := range 5 {
		var s, p, srvOn, srvOff float64
		if round%2 == 0 { // each server probed first in turn
			s, p, srvOn = probe(now, on, onPID)
			_, _, srvOff = probe(now, off, offPID)
		} else {
			_, _, srvOff = probe(now, off, offPID)
			s, p, srvOn = probe(now, on, onPID)
		}
		share, per = append(share, s), append(per, p)
		beat = append(beat, srvOn-srvOff)
		if before != "" {
			s0, p0, _ := probe(before, on, onPID)
			old, oldPer, ratio = append(old, s0), append(oldPer, p0), append(ratio, s/s0)
		}
	}
	b.StopTimer()
	b.Logf("prober %%machine per round %.2f (us/probe %.1f); heartbeat %%machine %.2f", share, per, beat)
	b.ReportMetric(results.Median(share), "prober_%machine")
	b.ReportMetric(results.Median(per), "prober_cpu_us/probe")
	b.ReportMetric(results.Median(beat), "heartbeat_%machine")
	if before != "" {
		b.Logf("before: prober %%machine per round %.2f (us/probe %.1f); now/before %.3f", old, oldPer, ratio)
		b.ReportMetric(results.Median(old), "before_prober_%machine")
		b.ReportMetric(results.Median(oldPer), "before_cpu_us/probe")
		b.ReportMetric(results.Median(ratio), "prober_now/before")
	}
}

// startLoop starts the kit's loop server (4 gnet loops, as the experiment
// runs it) with extra flags and returns its address and PID.
func startLoop(b *testing.B, args ...string) (string, int) {
	addr, cmd := wiretest.StartServer(b, "../loopserver", args...)
	return addr, cmd.Process.Pid
}
