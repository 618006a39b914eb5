package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/hist"
	"github.com/bystander-kit/bystander/internal/pace"
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
	pcs, done, err := dialAll(ctx, o)
	if err != nil {
		return nil, err
	}
	defer done()
	base, err := place(pcs)
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

	start := time.Now()
	from := start.Add(o.warmup)
	end := from.Add(o.duration)
	res := results.New("prober", "perconn", start, params(o))
	cpu0 := proc.Self()
	scheds := make([]*schedule, len(pcs))
	forEach(pcs, func(p *probeConn) {
		phase := time.Duration(int64(o.interval) * int64(p.id) / int64(len(pcs)))
		scheds[p.id] = probeSchedule(ctx, p, start, from, end, phase, o.interval, o.delay, pace.Sleep)
	})
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
	res.Generator = results.Cost{CPUNs: cpu, Requests: sent}
	if sent > 0 {
		res.Generator.CPUUsPerRequest = float64(cpu) / 1e3 / float64(sent)
	}
	res.Finish(time.Now(), interruptedReason(ctx, start, o.warmup+o.duration))
	return res, nil
}

// baselineRequests is how many requests each connection makes while it
// is placed: the first learns its loop, the rest the baseline.
const baselineRequests = 6

// place sends the placing requests on every connection at once, so that a
// server already loaded (a loop held by someone else's calls) costs the
// placing one wait, not one per request; it returns the latencies of all
// but each connection's first (which may pay for the connection's setup).
func place(pcs []*probeConn) (*hist.H, error) {
	hs := make([]*hist.H, len(pcs))
	errs := make([]error, len(pcs))
	var wg sync.WaitGroup
	for i, p := range pcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hs[i] = hist.New()
			for n := range baselineRequests {
				var r client.Response
				t := time.Now()
				if err := p.do(&r); err != nil {
					errs[i] = fmt.Errorf("prober: connection %d: placing request %d failed, so its loop is unknown: %w", p.id, n+1, err)
					return
				}
				if n > 0 {
					hs[i].Record(time.Since(t))
				}
			}
		}()
	}
	wg.Wait()
	all := hist.New()
	for i := range pcs {
		if errs[i] != nil {
			return nil, errs[i]
		}
		all.Merge(hs[i])
	}
	return all, nil
}
