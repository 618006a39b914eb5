package main

import (
	"fmt"
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
		cmd := exec.Command(wrk, "-t2", fmt.Sprintf("-c%d", conns), "-d4s", url)
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
