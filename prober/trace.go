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

// runTrace takes /async requests apart, as a trace viewer would, with one
// clock (client and server run on the same machine and stamp the wall
// clock, so every span and the total are read from it):
//
//	accepted               send -> X-Handler-Start
//	continuation lateness  X-Continuation-Start - X-Handler-Start - delay
//	return                 X-Continuation-Start -> answer received
//
// accepted + delay + lateness + return is the total by construction: the
// trace tells where the time went, not how long it was (the probers time
// that with the monotonic clock).
func runTrace(ctx context.Context, o options) (*results.Result, error) {
	pcs, done, err := dialAll(ctx, o)
	if err != nil {
		return nil, err
	}
	defer done()
	start := time.Now()
	from := start.Add(o.warmup)
	end := from.Add(o.duration)
	res := results.New("prober", "trace", start, params(o))
	cpu0 := proc.Self()
	var mu sync.Mutex
	var samples []results.TraceSample
	acc, late, ret, tot := hist.New(), hist.New(), hist.New(), hist.New()
	var missing int64
	forEach(pcs, func(p *probeConn) {
		var mine []results.TraceSample
		a, l, rt, t := hist.New(), hist.New(), hist.New(), hist.New()
		var miss int64
		for k := 0; ctx.Err() == nil; k++ {
			if o.interval > 0 && !pace.Until(ctx, start.Add(time.Duration(k)*o.interval)) {
				break
			}
			sent := time.Now()
			if !sent.Before(end) {
				break
			}
			var r client.Response
			err := p.do(&r)
			fin := time.Now()
			if err == client.ErrInterrupted {
				break
			}
			if err != nil || sent.Before(from) {
				continue
			}
			if r.HandlerStart < 0 || r.ContinuationStart < 0 {
				miss++ // not an /async of the protocol: no spans to draw
				continue
			}
			s := results.TraceSample{
				Conn: p.id, Loop: p.loop, SentUs: usSince(start, sent),
				AcceptedUs: float64(r.HandlerStart-sent.UnixNano()) / 1e3,
				LatenessUs: float64(r.ContinuationStart-r.HandlerStart-int64(o.delay)) / 1e3,
				ReturnUs:   float64(fin.UnixNano()-r.ContinuationStart) / 1e3,
				ServerUs:   float64(r.ContinuationStart-r.HandlerStart) / 1e3,
				TotalUs:    float64(fin.UnixNano()-sent.UnixNano()) / 1e3,
			}
			if r.QueuedNs >= 0 {
				s.QueuedUs = float64(r.QueuedNs) / 1e3
			}
			mine = append(mine, s)
			a.Record(time.Duration(s.AcceptedUs * 1e3))
			l.Record(time.Duration(s.LatenessUs * 1e3))
			rt.Record(time.Duration(s.ReturnUs * 1e3))
			t.Record(time.Duration(s.TotalUs * 1e3))
		}
		mu.Lock()
		defer mu.Unlock()
		samples = append(samples, mine...)
		acc.Merge(a)
		late.Merge(l)
		ret.Merge(rt)
		tot.Merge(t)
		missing += miss
	})
	sort.Slice(samples, func(a, b int) bool { return samples[a].SentUs < samples[b].SentUs })
	tr := &results.Trace{Accepted: acc.Summary(), Lateness: late.Summary(), Return: ret.Summary(), Total: tot.Summary()}
	if len(samples) > results.MaxSeriesPoints {
		tr.SamplesDropped = int64(len(samples) - results.MaxSeriesPoints)
		samples = samples[:results.MaxSeriesPoints]
	}
	tr.Samples = samples
	if tr.Samples == nil {
		tr.Samples = []results.TraceSample{}
	}
	res.Trace = tr
	res.Errors = errorCounts(pcs)
	if missing > 0 {
		res.Errors = append(res.Errors, results.ErrorCount{Kind: "missing_timing_headers", Count: missing})
	}
	cpu := proc.Self().CPUNs() - cpu0.CPUNs()
	n := tot.Count()
	res.Generator = results.Cost{CPUNs: cpu, Requests: n}
	if n > 0 {
		res.Generator.CPUUsPerRequest = float64(cpu) / 1e3 / float64(n)
	}
	res.Finish(time.Now(), interruptedReason(ctx, start, o.warmup+o.duration))
	return res, nil
}
