package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/hist"
	"github.com/bystander-kit/bystander/internal/proc"
	"github.com/bystander-kit/bystander/internal/ready"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/stall"
)

// runPerConn opens the connections, learns each one's loop and a baseline
// with a few requests on every connection at once, says it is ready (so
// blockers start after the connections are placed: a connection dealt to a
// blocked loop is not even opened), then probes every connection on its
// own fixed schedule (see probeSchedule) for the warm-up and the window. A
// fixed schedule makes the sample uniform in time: probing back-to-back
// would be a closed loop that mostly samples the moments a loop is free.
//
// It records what it saw; which connections stalled is the stall
// package's verdict, printed here and computed again wherever it is shown.
func runPerConn(ctx context.Context, o options, stdout io.Writer) (*results.Result, error) {
	ps, err := dialAll(ctx, o)
	if err != nil {
		return nil, err
	}
	defer ps.close()
	pcs := ps.pcs
	base, err := place(ps)
	if err != nil {
		return nil, err
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
	sum := base.Summary()
	baseline, quickest := time.Duration(sum.P50Us*1e3), time.Duration(sum.MinUs*1e3)
	line := fmt.Sprintf("prober: ready: %d connections placed (%s); %s", len(pcs), strings.Join(parts, ", "), stall.BaselineText(baseline, quickest))
	fmt.Fprintln(stdout, line)
	if o.readyFile != "" {
		f := ready.File{Conns: len(pcs), Spread: strings.Join(parts, ", "), BaselineUs: float64(baseline) / 1e3, Line: line}
		if err := ready.Write(o.readyFile, f); err != nil {
			return nil, fmt.Errorf("prober: --ready-file: %w", err)
		}
	}

	// Placed: the clock starts now, or at --start-at (the load's), which
	// the placing must come before.
	start, _ := o.startAt.Begin(ctx)
	from := start.Add(o.warmup)
	end := from.Add(o.duration)
	res := results.New("prober", "perconn", start, params(o))
	res.StartLateNs = int64(o.startAt.Late(start))
	cpu0 := proc.Self()
	scheds := make([]*schedule, len(pcs))
	jobs := make([]job, len(pcs))
	for i, p := range pcs {
		phase := time.Duration(int64(o.interval) * int64(p.id) / int64(len(pcs)))
		scheds[i] = newSchedule(p, start, from, end, phase, o.interval, o.delay)
		jobs[i] = scheds[i]
	}
	if err := ps.run(jobs); err != nil {
		return nil, err
	}
	pc := &results.PerConn{IntervalNs: int64(o.interval), DelayNs: int64(o.delay), BaselineUs: float64(baseline) / 1e3,
		QuickestPlacingUs: float64(quickest) / 1e3, PlacedConcurrently: true, Spread: sp}
	var sent int64
	for _, p := range pcs {
		s := scheds[p.id]
		pc.Conns = append(pc.Conns, results.ConnStat{Conn: p.id, Loop: p.loop, Due: s.due, Samples: s.answered, Censored: s.censored,
			Errors: s.failed, Latency: s.corrected.Summary(), FromSend: s.uncorrected.Summary(), ServerWait: s.serverWait.Summary(),
			SendLate: s.lag.Summary()})
		sent += s.answered + s.failed
	}
	res.PerConn = pc
	res.Errors = errorCounts(pcs)
	cpu := proc.Self().CPUNs() - cpu0.CPUNs()
	res.Generator = results.CostOf(cpu, sent)
	return ps.finish(res, start)
}

// baselineRequests is how many requests each connection makes while it
// is placed: the first learns its loop, the rest the baseline.
const baselineRequests = 6

// place sends the placing requests on every connection at once, so that a
// server already loaded (a loop held by someone else's calls) costs the
// placing one wait, not one per request; it returns the latencies of all
// but each connection's first (which may pay for the connection's setup).
func place(ps *probers) (*hist.H, error) {
	pls := make([]*placing, len(ps.pcs))
	jobs := make([]job, len(ps.pcs))
	for i, p := range ps.pcs {
		pls[i] = &placing{p: p, h: hist.New()}
		jobs[i] = pls[i]
	}
	if err := ps.run(jobs); err != nil {
		return nil, err
	}
	all := hist.New()
	for _, pl := range pls {
		if pl.err != nil {
			return nil, pl.err
		}
		all.Merge(pl.h)
	}
	return all, nil
}

// placing is one connection's placing requests, back to back (a job).
type placing struct {
	p   *probeConn
	n   int // requests answered
	h   *hist.H
	err error
}

func (pl *placing) next(now time.Time) (time.Time, bool) {
	return now, pl.err == nil && pl.n < baselineRequests
}

func (pl *placing) done(_, sent, fin time.Time, _ *client.Response, err error) {
	if err != nil {
		pl.err = fmt.Errorf("prober: connection %d: placing request %d failed, so its loop is unknown: %w", pl.p.id, pl.n+1, err)
		return
	}
	if pl.n > 0 {
		pl.h.Record(fin.Sub(sent))
	}
	pl.n++
}
