package experiment

import (
	"time"

	"github.com/bystander-kit/bystander/internal/proc"
	"github.com/bystander-kit/bystander/internal/results"
)

// sample is one reading, at one instant, of what the server, the load
// generator, the prober and the whole machine had used.
type sample struct {
	server, gen, prober proc.Usage
	threads             int
	machine             proc.Machine
}

func takeSample(server, gen, prober int) sample {
	var s sample
	s.server, s.threads, _ = proc.Of(server)
	s.gen, _, _ = proc.Of(gen)
	s.prober, _, _ = proc.Of(prober)
	s.machine, _ = proc.ReadMachine()
	return s
}

// cost is what the server cost per request over the window between two
// samples, with what the generators and the rest of the machine used
// meanwhile (internal/findings decides from it what bounds the row).
// Without the server's process (a --target without pid=), its own figures
// are left out and the cost says so.
func cost(lr *results.Result, s0, s1 sample, cores int, window time.Duration, serverKnown bool) *results.ServerCost {
	l := lr.Load
	reqs := l.ThroughputPerS * window.Seconds()
	coresOf := func(a, b proc.Usage) float64 { return float64(b.CPUNs()-a.CPUNs()) / float64(window) }
	busy := s1.machine.BusySince(s0.machine)
	c := &results.ServerCost{
		Requests: int64(reqs), Threads: s1.threads, PeakRSSBytes: s1.server.MaxRSSBytes,
		MeasuredBlockNs: l.MeanBlockedNs, ThroughputPerS: l.ThroughputPerS,
		ServerCores: coresOf(s0.server, s1.server), GeneratorCores: coresOf(s0.gen, s1.gen), ProberCores: coresOf(s0.prober, s1.prober),
		GeneratorCPUUsPerReq: lr.Generator.CPUUsPerRequest,
		MachineBusy:          busy, MachineCores: busy * float64(cores), Cores: cores,
	}
	if !serverKnown {
		c.ServerNotMeasured, c.ServerCores, c.Threads, c.PeakRSSBytes = true, 0, 0, 0
		return c
	}
	if reqs > 0 {
		c.ServerCPUUsPerRequest = float64(s1.server.CPUNs()-s0.server.CPUNs()) / 1e3 / reqs
		c.CtxSwitchesPerRequest = float64(s1.server.VolCtxSw+s1.server.InvolCtxSw-s0.server.VolCtxSw-s0.server.InvolCtxSw) / reqs
	}
	return c
}
