package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/bystander-kit/bystander/internal/hist"
	"github.com/bystander-kit/bystander/internal/proc"
	"github.com/bystander-kit/bystander/internal/ready"
	"github.com/bystander-kit/bystander/internal/results"
)

// runInterval probes each connection at t0 + warm-up + phase + k x
// interval over the window, the phase spreading the connections evenly
// over one interval (see probeSchedule). Nothing is sent during the
// warm-up, so with the load's --start-at and --warmup the window is the
// load's measured window.
func runInterval(ctx context.Context, o options) (*results.Result, error) {
	ps, err := dialAll(ctx, o)
	if err != nil {
		return nil, err
	}
	defer ps.close()
	pcs := ps.pcs
	if o.readyFile != "" {
		if err := ready.Write(o.readyFile, ready.File{Conns: len(pcs), Line: fmt.Sprintf("prober: ready: %d connection(s) open", len(pcs))}); err != nil {
			return nil, fmt.Errorf("prober: --ready-file: %w", err)
		}
	}
	start, _ := o.startAt.Begin(ctx)
	from := start.Add(o.warmup)
	end := from.Add(o.duration)
	res := results.New("prober", "interval", start, params(o))
	res.StartLateNs = int64(o.startAt.Late(start))
	cpu0 := proc.Self()

	corrected, uncorrected, lag := hist.New(), hist.New(), hist.New()
	pr := &results.Probe{WindowNs: int64(o.duration), Timeline: []results.ProbePoint{}}
	scheds := make([]*schedule, len(pcs))
	jobs := make([]job, len(pcs))
	for i, p := range pcs {
		phase := time.Duration(int64(o.interval) * int64(p.id) / int64(o.conns))
		scheds[i] = newSchedule(p, start, from, end, phase, o.interval, 0)
		jobs[i] = scheds[i]
	}
	if err := ps.run(jobs); err != nil {
		return nil, err
	}
	for _, s := range scheds {
		corrected.Merge(s.corrected)
		uncorrected.Merge(s.uncorrected)
		lag.Merge(s.lag)
		pr.Timeline = append(pr.Timeline, s.points...)
		pr.Due += s.due
		pr.Completed += s.answered
		pr.Failed += s.failed
		pr.Censored += s.censored
		pr.Late += s.late
	}
	cpu := proc.Self().CPUNs() - cpu0.CPUNs()
	sort.SliceStable(pr.Timeline, func(a, b int) bool { return pr.Timeline[a].DueUs < pr.Timeline[b].DueUs })
	pr.Corrected, pr.Uncorrected, pr.SendLag = corrected.Summary(), uncorrected.Summary(), lag.Summary()
	for _, p := range pcs {
		pr.Conns = append(pr.Conns, results.ConnLoop{Conn: p.id, Loop: p.loop})
	}
	res.Probe = pr
	res.Errors = errorCounts(pcs)
	sent := pr.Completed + pr.Failed
	res.Generator = results.CostOf(cpu, sent)
	return ps.finish(res, start)
}
