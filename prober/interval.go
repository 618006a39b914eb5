package main

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/hist"
	"github.com/bystander-kit/bystander/internal/pace"
	"github.com/bystander-kit/bystander/internal/proc"
	"github.com/bystander-kit/bystander/internal/results"
)

// lateAfter is how far behind its due time a probe may be sent and still
// count as on time.
const lateAfter = time.Millisecond

// runInterval probes each connection at t0 + phase + k x interval, the
// phase spreading the connections evenly over one interval. A probe that
// could not be sent on time (the previous one had not come back) is sent
// as soon as it can and timed from its due time: that is the bystander's
// real wait, which a prober timing from the send would hide.
func runInterval(ctx context.Context, o options) (*results.Result, error) {
	pcs, done, err := dialAll(ctx, o)
	if err != nil {
		return nil, err
	}
	defer done()
	start := time.Now()
	end := start.Add(o.duration)
	res := results.New("prober", "interval", start, params(o))
	cpu0 := proc.Self()

	var mu sync.Mutex
	corrected, uncorrected, lag := hist.New(), hist.New(), hist.New()
	var timeline []results.ProbePoint
	var completed, late, skipped, dropped int64
	forEach(pcs, func(p *probeConn) {
		phase := time.Duration(int64(o.interval) * int64(p.id) / int64(o.conns))
		c, u, l := hist.New(), hist.New(), hist.New()
		var points []results.ProbePoint
		var n, lt int64
		k := 0
		for ; ; k++ {
			due := start.Add(phase + time.Duration(k)*o.interval)
			// A due time still ahead of the end, but the end has passed
			// while the previous probe was out: the run is over, the rest
			// are skipped.
			if !due.Before(end) || ctx.Err() != nil || !time.Now().Before(end) {
				break
			}
			if !pace.Until(ctx, due) {
				break
			}
			sent := time.Now()
			var r client.Response
			err := p.do(&r)
			fin := time.Now()
			if err == client.ErrInterrupted {
				break
			}
			pt := results.ProbePoint{Conn: p.id, Loop: p.loop, DueUs: usSince(start, due), SentUs: usSince(start, sent),
				DoneUs: usSince(start, fin), Status: r.Status}
			if err != nil {
				pt.Error = string(client.KindOf(err))
			}
			points = append(points, pt)
			if sent.Sub(due) > lateAfter {
				lt++
			}
			l.Record(sent.Sub(due))
			if err == nil {
				n++
				c.Record(fin.Sub(due))
				u.Record(fin.Sub(sent))
			}
		}
		// Due times before the end that were never sent.
		var missed int64
		for due := start.Add(phase + time.Duration(k)*o.interval); due.Before(end); due = due.Add(o.interval) {
			missed++
		}
		mu.Lock()
		defer mu.Unlock()
		corrected.Merge(c)
		uncorrected.Merge(u)
		lag.Merge(l)
		timeline = append(timeline, points...)
		completed += n
		late += lt
		skipped += missed
	})
	cpu := proc.Self().CPUNs() - cpu0.CPUNs()
	sort.Slice(timeline, func(a, b int) bool { return timeline[a].DueUs < timeline[b].DueUs })
	if len(timeline) > results.MaxSeriesPoints {
		dropped = int64(len(timeline) - results.MaxSeriesPoints)
		timeline = timeline[:results.MaxSeriesPoints]
	}
	pr := &results.Probe{
		Completed: completed, Late: late, Skipped: skipped,
		Corrected: corrected.Summary(), Uncorrected: uncorrected.Summary(), SendLag: lag.Summary(),
		Timeline: timeline, TimelineDropped: dropped,
	}
	for _, p := range pcs {
		pr.Conns = append(pr.Conns, results.ConnLoop{Conn: p.id, Loop: p.loop})
	}
	if pr.Timeline == nil {
		pr.Timeline = []results.ProbePoint{}
	}
	res.Probe = pr
	res.Errors = errorCounts(pcs)
	res.Generator = results.Cost{CPUNs: cpu, Requests: completed}
	if completed > 0 {
		res.Generator.CPUUsPerRequest = float64(cpu) / 1e3 / float64(completed)
	}
	res.Finish(time.Now(), interruptedReason(ctx, start, o.duration))
	return res, nil
}
