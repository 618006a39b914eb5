package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/proc"
	"github.com/bystander-kit/bystander/internal/wiretest"
)

// These benchmarks run the real binary as its own process and drive it with
// the kit's raw client, so the server's CPU is its own:
//
//	go test ./loopserver -run '^$' -bench . -benchtime 5s
//
// The figures and how they compare are in docs/measurements.md.

// spawn starts a loop server process and waits until it listens.
func spawn(b *testing.B, args ...string) (addr string, pid int) {
	b.Helper()
	addr = wiretest.FreeAddr(b)
	cmd := wiretest.Start(b, wiretest.Build(b, "."), append([]string{"--addr", addr, "--admin", ""}, args...)...)
	return addr, cmd.Process.Pid
}

// drive runs b.N requests for target over conns keep-alive connections and
// returns the mean X-Blocked-Ns seen (0 if none).
func drive(b *testing.B, addr, target string, conns int) (meanBlockedNs float64) {
	b.Helper()
	var blockedSum, blockedN, failed atomic.Int64
	b.SetParallelism((conns + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.RunParallel(func(pb *testing.PB) {
		c := client.New(addr, target, 10*time.Second)
		defer c.Close()
		var r client.Response
		for pb.Next() {
			if err := c.Do(&r); err != nil {
				failed.Add(1)
				continue
			}
			if r.BlockedNs > 0 {
				blockedSum.Add(r.BlockedNs)
				blockedN.Add(1)
			}
		}
	})
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d failed requests", n)
	}
	if blockedN.Load() == 0 {
		return 0
	}
	return float64(blockedSum.Load()) / float64(blockedN.Load())
}

// BenchmarkSlow16 is the ceiling experiment: 16 keep-alive callers on /slow,
// block 5ms held in nanosleep, 4 loops; the ceiling is 4 / 5 ms = 800 req/s.
func BenchmarkSlow16(b *testing.B) {
	for _, eng := range engines {
		b.Run(eng, func(b *testing.B) {
			addr, _ := spawn(b, "--engine", eng, "--block", "5ms", "--block-mode", "syscall")
			start := time.Now()
			mean := drive(b, addr, "/slow", 16)
			rps := float64(b.N) / time.Since(start).Seconds()
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
// keep-alive connections for both engines and, where Debian's nginx is
// installed, nginx on the same load with one worker (the reference of
// ../shared/ENGINES.md) and with 4 workers (the same shape as 4 loops). The servers take turns,
// b.N requests each per round over 5 rounds, and the medians are reported,
// so the ratio is measured side by side on a noisy machine:
//
//	go test ./loopserver -run '^$' -bench FastCPU -benchtime 100000x
func BenchmarkFastCPU(b *testing.B) {
	type target struct {
		name, addr string
		pid        int
		us, gen    []float64
	}
	var ts []*target
	for _, eng := range engines {
		addr, pid := spawn(b, "--engine", eng)
		ts = append(ts, &target{name: eng, addr: addr, pid: pid})
	}
	if addr, pid, ok := spawnNginx(b, 1); ok {
		ts = append(ts, &target{name: "nginx", addr: addr, pid: pid})
	}
	if addr, pid, ok := spawnNginx(b, 4); ok {
		ts = append(ts, &target{name: "nginx4w", addr: addr, pid: pid})
	}
	b.ResetTimer()
	for range 5 {
		for _, t := range ts {
			before, err := treeCPU(t.pid)
			if err != nil {
				b.Fatal(err)
			}
			gen := proc.Self()
			load(b, t.addr, "/fast", 64, b.N)
			after, err := treeCPU(t.pid)
			if err != nil {
				b.Fatal(err)
			}
			t.us = append(t.us, float64(after-before)/1e3/float64(b.N))
			t.gen = append(t.gen, float64(proc.Self().CPUNs()-gen.CPUNs())/1e3/float64(b.N))
		}
	}
	b.StopTimer()
	for _, t := range ts {
		b.ReportMetric(median(t.us), t.name+"_cpu_us/req")
		b.Logf("%s: server CPU us/req per round %.1f; client %.1f", t.name, t.us, median(t.gen))
	}
	if len(ts) == 4 {
		b.ReportMetric(median(ts[0].us)/median(ts[2].us), "gnet/nginx")
		b.ReportMetric(median(ts[0].us)/median(ts[3].us), "gnet/nginx4w")
		b.ReportMetric(median(ts[1].us)/median(ts[2].us), "evio/nginx")
	}
}

// load sends n requests over conns connections, closed loop.
func load(b *testing.B, addr, target string, conns, n int) {
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := client.New(addr, target, 10*time.Second)
			defer c.Close()
			var r client.Response
			for left.Add(-1) >= 0 {
				if err := c.Do(&r); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func spawnNginx(b *testing.B, workers int) (string, int, bool) {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		for _, p := range []string{"/usr/sbin/nginx"} {
			if _, e := os.Stat(p); e == nil {
				bin, err = p, nil
			}
		}
	}
	if err != nil {
		b.Log("nginx is not installed (apt-get install nginx-light): measured without it")
		return "", 0, false
	}
	dir := b.TempDir()
	addr := wiretest.FreeAddr(b)
	conf := fmt.Sprintf(`daemon off; master_process %[3]s; worker_processes %[4]d; pid %[1]s/nginx.pid;
error_log %[1]s/error.log; events { worker_connections 1024; }
http { access_log off; keepalive_requests 1000000;
  client_body_temp_path %[1]s; proxy_temp_path %[1]s; fastcgi_temp_path %[1]s; uwsgi_temp_path %[1]s; scgi_temp_path %[1]s;
  server { listen %[2]s; location /fast { default_type text/plain; return 200 "fast\n"; } } }
`, dir, addr, map[bool]string{true: "off", false: "on"}[workers == 1], workers)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if i > 100 {
			b.Fatalf("nginx did not listen on %s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return addr, cmd.Process.Pid, true
}

// treeCPU is the CPU ns of pid and its children (nginx's workers).
func treeCPU(pid int) (int64, error) {
	u, _, err := proc.Of(pid)
	if err != nil {
		return 0, err
	}
	total := u.CPUNs()
	kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	for _, f := range strings.Fields(string(kids)) {
		var k int
		fmt.Sscan(f, &k)
		if c, err := treeCPU(k); err == nil {
			total += c
		}
	}
	return total, nil
}
