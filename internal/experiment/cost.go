package experiment

import (
	"fmt"
	"time"

	"github.com/bystander-kit/bystander/internal/proc"
	"github.com/bystander-kit/bystander/internal/results"
)

// cost is the server's cost per request over window, from two /proc samples.
func cost(lr *results.Result, c0, c1 proc.Usage, threads int, busy float64, window time.Duration) *results.ServerCost {
	l := lr.Load
	reqs := l.ThroughputPerS * window.Seconds()
	c := &results.ServerCost{
		Requests: int64(reqs), Threads: threads, PeakRSSBytes: c1.MaxRSSBytes, MachineBusy: busy,
		MeasuredBlockNs: l.MeanBlockedNs, ThroughputPerS: l.ThroughputPerS,
		ServerCores:          float64(c1.CPUNs()-c0.CPUNs()) / float64(window),
		GeneratorCPUUsPerReq: lr.Generator.CPUUsPerRequest,
	}
	if l.MeasuredNs > 0 {
		c.GeneratorCores = float64(lr.Generator.CPUNs) / float64(l.MeasuredNs)
	}
	if reqs > 0 {
		c.ServerCPUUsPerRequest = float64(c1.CPUNs()-c0.CPUNs()) / 1e3 / reqs
		c.CtxSwitchesPerRequest = float64(c1.VolCtxSw+c1.InvolCtxSw-c0.VolCtxSw-c0.InvolCtxSw) / reqs
	}
	return c
}

// saturated is the machine's busy share above which the CPU bounds.
const saturated = 0.9

// bound says what limits the step's throughput: the workers (loops or
// slots) over the measured block, the callers over it (Little's law: a
// caller sends at most one request per block), or the CPU when the machine
// is saturated, the generator's own when it uses more of it than the server
// (that row is then not the server's figure).
func bound(s Step, lr *results.Result, c *results.ServerCost) *results.Bound {
	l := lr.Load
	block := float64(s.Server.BlockNs)
	measured := l.MeanBlockedNs
	if measured <= 0 {
		measured = block
	}
	workers := s.Server.Workers
	what := fmt.Sprintf("%d loops", workers)
	if s.Server.Kind == "pool" {
		what = fmt.Sprintf("%d slots", workers)
	}
	if s.Variant == "offloaded" {
		workers, what = poolSlots, fmt.Sprintf("%d offload workers", poolSlots)
	}
	b := &results.Bound{
		WorkersCeilingPerS:  float64(workers) / (block / 1e9),
		MeasuredCeilingPerS: float64(workers) / (measured / 1e9),
		CallersCeilingPerS:  float64(s.Conc) / (measured / 1e9),
	}
	ms := time.Duration(measured).Round(10 * time.Microsecond)
	switch {
	case c.MachineBusy >= saturated && c.GeneratorCores >= c.ServerCores:
		b.Kind, b.GeneratorLimited = "generator", true
		b.Text = fmt.Sprintf("the load generator: machine %.0f%% busy, generator %.2f cores against the server's %.2f; not the server's figure",
			100*c.MachineBusy, c.GeneratorCores, c.ServerCores)
	case c.MachineBusy >= saturated:
		b.Kind = "cpu"
		b.Text = fmt.Sprintf("CPU: machine %.0f%% busy, server %.2f cores at %.1f us per request", 100*c.MachineBusy, c.ServerCores, c.ServerCPUUsPerRequest)
	case b.MeasuredCeilingPerS <= b.CallersCeilingPerS:
		b.Kind = "workers"
		b.ShareOfBound = l.ThroughputPerS / b.MeasuredCeilingPerS
		b.Text = fmt.Sprintf("workers: %s / %s measured block = %.0f req/s; at %.0f%% of it", what, ms, b.MeasuredCeilingPerS, 100*b.ShareOfBound)
	default:
		b.Kind = "callers"
		b.ShareOfBound = l.ThroughputPerS / b.CallersCeilingPerS
		b.Text = fmt.Sprintf("offered concurrency: %d callers / %s measured block = %.0f req/s (Little's law); at %.0f%% of it",
			s.Conc, ms, b.CallersCeilingPerS, 100*b.ShareOfBound)
	}
	return b
}
