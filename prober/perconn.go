package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/hist"
	"github.com/bystander-kit/bystander/internal/proc"
	"github.com/bystander-kit/bystander/internal/ready"
	"github.com/bystander-kit/bystander/internal/results"
)

// runPerConn opens the connections, learns each one's loop and the
// unblocked baseline with a few requests, says it is ready (so blockers
// start after the connections are placed: a connection dealt to a blocked
// loop is not even opened), then probes every connection on its own fixed
// schedule (see probeSchedule) for the warm-up and the window. A fixed
// schedule makes the sample uniform in time: probing back-to-back would be
// a closed loop that mostly samples the moments a loop is free.
func runPerConn(ctx context.Context, o options, stdout io.Writer) (*results.Result, error) {
	pcs, done, err := dialAll(ctx, o)
	if err != nil {
		return nil, err
	}
	defer done()
	base := hist.New()
	for _, p := range pcs {
		for i := range baselineRequests {
			var r client.Response
			t := time.Now()
			if err := p.do(&r); err != nil {
				return nil, fmt.Errorf("prober: connection %d: placing request %d failed, so its loop or the baseline is unknown: %w", p.id, i+1, err)
			}
			if i > 0 { // the first may pay for the connection's setup
				base.Record(time.Since(t))
			}
		}
	}
	spread := map[int]int64{}
	for _, p := range pcs {
		spread[p.loop]++
	}
	var sp []results.LoopCount
	for l, n := range spread {
		sp = append(sp, results.LoopCount{Loop: l, Count: n})
	}
	sort.Slice(sp, func(a, b int) bool { return sp[a].Loop < sp[b].Loop })
	var parts []string
	for _, c := range sp {
		parts = append(parts, fmt.Sprintf("loop %d: %d", c.Loop, c.Count))
	}
	baseline := time.Duration(base.Summary().P50Us * 1e3)
	threshold, rule := o.stallThreshold, fmt.Sprintf("p50 from due above %s (--stall-threshold)", o.stallThreshold)
	if threshold == 0 {
		threshold, rule = findings.StallThreshold(baseline, o.block)
	}
	line := fmt.Sprintf("prober: ready: %d connections placed (%s); baseline %s, stalled above %s", len(pcs), strings.Join(parts, ", "),
		baseline.Round(time.Microsecond), threshold.Round(time.Microsecond))
	fmt.Fprintln(stdout, line)
	if o.readyFile != "" {
		f := ready.File{Conns: len(pcs), Spread: strings.Join(parts, ", "), BaselineUs: float64(baseline) / 1e3, Line: line}
		if err := ready.Write(o.readyFile, f); err != nil {
			return nil, fmt.Errorf("prober: --ready-file: %w", err)
		}
	}

	start := time.Now()
	from := start.Add(o.warmup)
	end := from.Add(o.duration)
	res := results.New("prober", "perconn", start, params(o))
	cpu0 := proc.Self()
	scheds := make([]*schedule, len(pcs))
	forEach(pcs, func(p *probeConn) {
		phase := time.Duration(int64(o.interval) * int64(p.id) / int64(len(pcs)))
		scheds[p.id] = probeSchedule(ctx, p, start, from, end, phase, o.interval)
	})
	pc := &results.PerConn{IntervalNs: int64(o.interval), BaselineUs: float64(baseline) / 1e3, StallThresholdNs: int64(threshold),
		StallRule: rule, Spread: sp}
	var sent int64
	for _, p := range pcs {
		s := scheds[p.id]
		lat := s.corrected.Summary()
		stalled := findings.Stalled(s.answered, time.Duration(lat.P50Us*1e3), threshold)
		pc.Conns = append(pc.Conns, results.ConnStat{Conn: p.id, Loop: p.loop, Due: s.due, Samples: s.answered, Censored: s.censored,
			Errors: s.failed, Latency: lat, FromSend: s.uncorrected.Summary(), Stalled: stalled})
		if stalled {
			pc.Stalled++
		}
		sent += s.answered + s.failed
	}
	res.PerConn = pc
	res.Errors = errorCounts(pcs)
	cpu := proc.Self().CPUNs() - cpu0.CPUNs()
	res.Generator = results.Cost{CPUNs: cpu, Requests: sent}
	if sent > 0 {
		res.Generator.CPUUsPerRequest = float64(cpu) / 1e3 / float64(sent)
	}
	res.Finish(time.Now(), interruptedReason(ctx, start, o.warmup+o.duration))
	return res, nil
}

// baselineRequests is how many requests each connection makes while it
// is placed: the first learns its loop, the rest the unblocked baseline.
const baselineRequests = 6
