package wiretest

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/proc"
	"github.com/bystander-kit/bystander/internal/results"
)

// LoadResult is what Load measured.
type LoadResult struct {
	Requests      int
	Failed        int
	Elapsed       time.Duration
	MeanBlockedNs float64 // mean X-Blocked-Ns, 0 if none
}

// RPS is requests per second.
func (r LoadResult) RPS() float64 { return float64(r.Requests) / r.Elapsed.Seconds() }

// Load sends n GET target requests to addr over conns keep-alive
// connections, closed loop, with the kit's raw client; for benchmarks.
func Load(addr, target string, conns, n int) LoadResult {
	var left, failed, blockedSum, blockedN atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	start := time.Now()
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := client.New(addr, target, 30*time.Second)
			defer c.Close()
			var r client.Response
			for left.Add(-1) >= 0 {
				if err := c.Do(&r); err != nil {
					failed.Add(1)
					continue
				}
				if r.BlockedNs > 0 {
					blockedSum.Add(r.BlockedNs)
					blockedN.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	res := LoadResult{Requests: n, Failed: int(failed.Load()), Elapsed: time.Since(start)}
	if blockedN.Load() > 0 {
		res.MeanBlockedNs = float64(blockedSum.Load()) / float64(blockedN.Load())
	}
	return res
}

// TreeCPU is the CPU ns used so far by pid and its child processes.
func TreeCPU(pid int) (int64, error) {
	u, _, err := proc.Of(pid)
	if err != nil {
		return 0, err
	}
	total := u.CPUNs()
	kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	for _, f := range strings.Fields(string(kids)) {
		var k int
		if _, err := fmt.Sscan(f, &k); err != nil {
			continue
		}
		if c, err := TreeCPU(k); err == nil {
			total += c
		}
	}
	return total, nil
}

// ServerCPUPerRequest is one round of a side-by-side CPU comparison: n
// GET target requests over conns keep-alive connections to the server at
// addr (process pid, its children counted), and the server CPU each cost,
// in microseconds. Any failed request fails the benchmark.
func ServerCPUPerRequest(tb testing.TB, addr string, pid int, target string, conns, n int) float64 {
	tb.Helper()
	before, err := TreeCPU(pid)
	if err != nil {
		tb.Fatal(err)
	}
	if res := Load(addr, target, conns, n); res.Failed > 0 {
		tb.Fatalf("%s%s: %d of %d requests failed", addr, target, res.Failed, n)
	}
	after, err := TreeCPU(pid)
	if err != nil {
		tb.Fatal(err)
	}
	return results.UsPerRequest(after-before, float64(n))
}
