package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/wiretest"
)

// BenchmarkVersusWrk runs loadgen and Debian's wrk side by side, in turns,
// each as its own process, and compares:
//
//   - the generator's CPU per request on the same nginx target (one worker,
//     one thread each: wrk -t1 against loadgen's one poller goroutine,
//     /fast, 64 keep-alive connections, closed loop), from the child
//     process's rusage, over 7 rounds: the medians, and the median of the
//     per-round ratios with their range;
//
//   - throughput on the loop server's /slow (5 ms, nanosleep) at 16
//     connections, over 3 rounds: a generator that measures the ceiling
//     must reach what wrk reaches.
//
//     go test ./loadgen -run '^$' -bench VersusWrk -benchtime 1x
func BenchmarkVersusWrk(b *testing.B) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Skip("wrk is not installed (apt-get install wrk)")
	}
	nginx, _, ok := wiretest.Nginx(b, 1)
	if !ok {
		b.Skip("nginx is not installed (apt-get install nginx-light)")
	}
	addr, _ := wiretest.StartServer(b, "../loopserver", "--block-mode", "syscall")
	lg := wiretest.Build(b, ".")
	dir := b.TempDir()
	type run struct{ rps, cpuUs float64 }
	wrkRun := func(url string, conns int) run {
		cmd := exec.Command(wrk, "-t1", fmt.Sprintf("-c%d", conns), "-d4s", url)
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("wrk: %v %s", err, out)
		}
		rps := parseFloat(b, `Requests/sec:\s+([0-9.]+)`, out)
		total := parseFloat(b, `([0-9]+) requests in`, out)
		cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		return run{rps, float64(cpu.Microseconds()) / total}
	}
	lgRun := func(url string, conns int) run {
		out := filepath.Join(dir, "r.json")
		cmd := exec.Command(lg, "--target", url, "--conc", strconv.Itoa(conns), "--duration", "4s", "--warmup", "0s", "--quiet", "--out", out)
		if o, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("loadgen: %v %s", err, o)
		}
		r, err := results.Read(out)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range r.Errors {
			if e.Count > 0 {
				b.Fatalf("loadgen: %d failed requests (%s)", e.Count, e.Kind)
			}
		}
		cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		total := float64(r.Load.Requests + r.Load.WarmupRequests)
		return run{r.Load.ThroughputPerS, float64(cpu.Microseconds()) / total}
	}
	var wFast, lFast, ratio, wRate, lRate []float64
	for range 7 {
		w, l := wrkRun("http://"+nginx+"/fast", 64), lgRun("http://"+nginx+"/fast", 64)
		wFast, lFast, ratio = append(wFast, w.cpuUs), append(lFast, l.cpuUs), append(ratio, l.cpuUs/w.cpuUs)
		wRate, lRate = append(wRate, w.rps), append(lRate, l.rps)
	}
	var wSlow, lSlow []float64
	for range 3 {
		wSlow = append(wSlow, wrkRun("http://"+addr+"/slow", 16).rps)
		lSlow = append(lSlow, lgRun("http://"+addr+"/slow", 16).rps)
	}
	b.Logf("nginx /fast, generator CPU us/req at 64 conns: wrk %.2f, loadgen %.2f", wFast, lFast)
	b.Logf("loadgen/wrk per round: %.3f", ratio)
	b.Logf("nginx /fast req/s: wrk %.0f, loadgen %.0f", wRate, lRate)
	b.Logf("loop server /slow req/s at 16 conns: wrk %.1f, loadgen %.1f", wSlow, lSlow)
	ws, ls, wf, lf := results.Median(wSlow), results.Median(lSlow), results.Median(wFast), results.Median(lFast)
	b.ReportMetric(wf, "wrk_fast_cpu_us/req")
	b.ReportMetric(lf, "loadgen_fast_cpu_us/req")
	b.ReportMetric(results.Median(ratio), "cpu_loadgen/wrk")
	b.ReportMetric(slices.Min(ratio), "cpu_loadgen/wrk_min")
	b.ReportMetric(slices.Max(ratio), "cpu_loadgen/wrk_max")
	b.ReportMetric(ws, "wrk_slow_req/s")
	b.ReportMetric(ls, "loadgen_slow_req/s")
	b.ReportMetric(ls/ws, "slow_loadgen/wrk")
}

func parseFloat(b *testing.B, pattern string, out []byte) float64 {
	m := regexp.MustCompile(pattern).FindSubmatch(out)
	if m == nil {
		b.Fatalf("no %q in wrk's output:\n%s", pattern, out)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// BenchmarkBeforeAfter is loadgen's CPU per request beside an earlier
// build of itself (BYSTANDER_BEFORE), on one loop server (/fast, 64
// keep-alive connections, closed loop, 3 s after a 500 ms warm-up), in
// turns over 9 rounds, each first in every other round: each one's CPU
// per request from its process's rusage (every answer, the warm-up's
// included), their medians, and the median of the per-round ratios with
// their range. What a change to the client costs the kit's own
// measurements, within the noise of a shared machine or not:
//
//	mkdir /tmp/before && git archive REV | tar -x -C /tmp/before && (cd /tmp/before && go build -o bin/ ./loadgen)
//	BYSTANDER_BEFORE=/tmp/before/bin/loadgen go test ./loadgen -run '^$' -bench BeforeAfter -benchtime 1x
func BenchmarkBeforeAfter(b *testing.B) {
	before := os.Getenv("BYSTANDER_BEFORE")
	if before == "" {
		b.Skip("BYSTANDER_BEFORE names no earlier loadgen")
	}
	now := wiretest.Build(b, ".")
	addr, _ := wiretest.StartServer(b, "../loopserver")
	dir := b.TempDir()
	cpuPerReq := func(bin string) float64 {
		out := filepath.Join(dir, "r.json")
		cmd := exec.Command(bin, "--target", "http://"+addr+"/fast", "--conc", "64", "--duration", "3s", "--warmup", "500ms", "--quiet", "--out", out)
		if o, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v %s", bin, err, o)
		}
		r, err := results.Read(out)
		if err != nil {
			b.Fatal(err)
		}
		if n := results.TotalErrors(r.Errors); n > 0 {
			b.Fatalf("%s: %d failed requests", bin, n)
		}
		cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		return float64(cpu.Microseconds()) / float64(r.Load.Requests+r.Load.WarmupRequests)
	}
	var nows, befores, ratio []float64
	b.ResetTimer()
	for round := range 9 {
		var n, o float64
		if round%2 == 0 {
			n, o = cpuPerReq(now), cpuPerReq(before)
		} else {
			o, n = cpuPerReq(before), cpuPerReq(now)
		}
		nows, befores, ratio = append(nows, n), append(befores, o), append(ratio, n/o)
	}
	b.StopTimer()
	b.Logf("loop server /fast, CPU us/req at 64 conns: now %.2f, before %.2f", nows, befores)
	b.Logf("now/before per round: %.3f", ratio)
	b.ReportMetric(results.Median(nows), "now_cpu_us/req")
	b.ReportMetric(results.Median(befores), "before_cpu_us/req")
	b.ReportMetric(results.Median(ratio), "now/before")
	b.ReportMetric(slices.Min(ratio), "now/before_min")
	b.ReportMetric(slices.Max(ratio), "now/before_max")
}
