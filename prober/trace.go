package main

import (
	"context"
	"sort"
	"time"

	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/hist"
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
	ps, err := dialAll(ctx, o)
	if err != nil {
		return nil, err
	}
	defer ps.close()
	pcs := ps.pcs
	start := time.Now()
	from := start.Add(o.warmup)
	end := from.Add(o.duration)
	res := results.New("prober", "trace", start, params(o))
	cpu0 := proc.Self()
	tjs := make([]*tracing, len(pcs))
	jobs := make([]job, len(pcs))
	redials := new(client.Redials)
	for i, p := range pcs {
		tjs[i] = &tracing{p: p, o: o, start: start, from: from, end: end, redials: redials,
			acc: hist.New(), late: hist.New(), ret: hist.New(), tot: hist.New()}
		jobs[i] = tjs[i]
	}
	if err := ps.run(jobs); err != nil {
		return nil, err
	}
	var samples []results.TraceSample
	acc, late, ret, tot := hist.New(), hist.New(), hist.New(), hist.New()
	var missing int64
	for _, tj := range tjs {
		samples = append(samples, tj.samples...)
		acc.Merge(tj.acc)
		late.Merge(tj.late)
		ret.Merge(tj.ret)
		tot.Merge(tj.tot)
		missing += tj.missing
	}
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
	res.Generator = results.CostOf(cpu, tot.Count())
	return ps.finish(res, start)
}

// tracing is one connection's traced requests (a job): back to back, or
// every --interval from the start, until the window's end; back to back, a
// failed answer holds the next request for the connection's pause
// (client.Backoff).
type tracing struct {
	p                   *probeConn
	o                   options
	start, from, end    time.Time
	k                   int
	samples             []results.TraceSample
	acc, late, ret, tot *hist.H
	missing             int64
	backoff             client.Backoff
	redials             *client.Redials // shared by every connection's tracing
}

func (tj *tracing) next(now time.Time) (time.Time, bool) {
	due := now
	if tj.o.interval > 0 {
		due = tj.start.Add(time.Duration(tj.k) * tj.o.interval)
		tj.k++
	} else {
		due = tj.backoff.Due(now)
		if tj.backoff.Paused() {
			due = tj.redials.Due(due)
		}
	}
	leaves := due
	if now.After(due) {
		leaves = now
	}
	return due, leaves.Before(tj.end)
}

func (tj *tracing) done(_, sent, fin time.Time, r *client.Response, err error) {
	tj.backoff.After(r, err, fin)
	if err != nil || sent.Before(tj.from) {
		return
	}
	if r.HandlerStart < 0 || r.ContinuationStart < 0 {
		tj.missing++ // not an /async of the protocol: no spans to draw
		return
	}
	p, o := tj.p, tj.o
	s := results.TraceSample{
		Conn: p.id, Loop: p.loop, SentUs: usSince(tj.start, sent),
		AcceptedUs: float64(r.HandlerStart-sent.UnixNano()) / 1e3,
		LatenessUs: float64(r.ContinuationStart-r.HandlerStart-int64(o.delay)) / 1e3,
		ReturnUs:   float64(fin.UnixNano()-r.ContinuationStart) / 1e3,
		ServerUs:   float64(r.ContinuationStart-r.HandlerStart) / 1e3,
		TotalUs:    float64(fin.UnixNano()-sent.UnixNano()) / 1e3,
	}
	if r.QueuedNs >= 0 {
		s.QueuedUs = float64(r.QueuedNs) / 1e3
	}
	tj.samples = append(tj.samples, s)
	tj.acc.Record(time.Duration(s.AcceptedUs * 1e3))
	tj.late.Record(time.Duration(s.LatenessUs * 1e3))
	tj.ret.Record(time.Duration(s.ReturnUs * 1e3))
	tj.tot.Record(time.Duration(s.TotalUs * 1e3))
}
