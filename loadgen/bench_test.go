package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/wiretest"
)

// BenchmarkVersusWrk runs loadgen and Debian's wrk side by side, in turns,
// against the same loop server, each as its own process, and compares:
//
//   - throughput on /slow (5 ms, nanosleep) at 16 connections;
//
//   - the generator's CPU per request on /fast at 64 connections, from the
//     child process's rusage.
//
//     go test ./loadgen -run '^$' -bench VersusWrk -benchtime 1x
func BenchmarkVersusWrk(b *testing.B) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Skip("wrk is not installed (apt-get install wrk)")
	}
	addr, _ := wiretest.StartServer(b, "../loopserver", "--block-mode", "syscall")
	lg := wiretest.Build(b, ".")
	dir := b.TempDir()
	type run struct{ rps, cpuUs float64 }
	wrkRun := func(path string, conns int) run {
		cmd := exec.Command(wrk, "-t2", fmt.Sprintf("-c%d", conns), "-d4s", "http://"+addr+path)
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("wrk: %v %s", err, out)
		}
		rps := parseFloat(b, `Requests/sec:\s+([0-9.]+)`, out)
		total := parseFloat(b, `([0-9]+) requests in`, out)
		cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		return run{rps, float64(cpu.Microseconds()) / total}
	}
	lgRun := func(path string, conns int) run {
		out := filepath.Join(dir, "r.json")
		cmd := exec.Command(lg, "--target", "http://"+addr+path, "--conc", strconv.Itoa(conns), "--duration", "4s", "--warmup", "0s", "--quiet", "--out", out)
		if o, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("loadgen: %v %s", err, o)
		}
		r, err := results.Read(out)
		if err != nil {
			b.Fatal(err)
		}
		cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		total := float64(r.Load.Requests + r.Load.WarmupRequests)
		return run{r.Load.ThroughputPerS, float64(cpu.Microseconds()) / total}
	}
	var wSlow, lSlow, wFast, lFast []float64
	for range 3 {
		wSlow = append(wSlow, wrkRun("/slow", 16).rps)
		lSlow = append(lSlow, lgRun("/slow", 16).rps)
		wFast = append(wFast, wrkRun("/fast", 64).cpuUs)
		lFast = append(lFast, lgRun("/fast", 64).cpuUs)
	}
	b.Logf("/slow req/s at 16 conns: wrk %.1f, loadgen %.1f", wSlow, lSlow)
	b.Logf("/fast generator CPU us/req at 64 conns: wrk %.2f, loadgen %.2f", wFast, lFast)
	ws, ls, wf, lf := results.Median(wSlow), results.Median(lSlow), results.Median(wFast), results.Median(lFast)
	b.ReportMetric(ws, "wrk_slow_req/s")
	b.ReportMetric(ls, "loadgen_slow_req/s")
	b.ReportMetric(ls/ws, "slow_loadgen/wrk")
	b.ReportMetric(wf, "wrk_fast_cpu_us/req")
	b.ReportMetric(lf, "loadgen_fast_cpu_us/req")
	b.ReportMetric(lf/wf, "cpu_loadgen/wrk")
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
