package main

import (
	"context"
	"fmt"
	"time"

	"github.com/bystander-kit/bystander/internal/live"

	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/request"
	"github.com/bystander-kit/bystander/internal/results"
)

// probeConn is one connection and its error counts, driven by the
// probers' poller.
type probeConn struct {
	live *live.Writer // --live-out, or nil
	id   int
	c    *client.PConn
	loop int // last X-Loop seen, -1 before any
	errs map[client.Kind]int64
}

// probers are every connection on one poller: one goroutine sends every
// probe at its due time (epoll_pwait2's nanosecond timeout) and reads the
// answers that came meanwhile, each timed by the kernel's receive
// timestamp (client.Poller.ReadOnSchedule): one wake-up, a write and a
// read per probe. One goroutine per connection, each with its timer and
// woken again by its answer, cost about 200 us of CPU per probe at twelve
// connections every 10 ms (docs/measurements.md).
type probers struct {
	ctx   context.Context
	total time.Duration // warm-up and window
	poll  *client.Poller
	pcs   []*probeConn
	tally client.Tally // every request's end, placing included
}

// dialAll opens every connection before anything is timed. When ctx ends,
// what the connections are doing is cut short (requests in flight are
// booked interrupted). close undoes it all.
func dialAll(ctx context.Context, o options) (*probers, error) {
	t, err := client.ParseTarget(o.target, o.allowRemote)
	if err != nil {
		return nil, fmt.Errorf("prober: %w", err)
	}
	poll, err := client.NewPoller()
	if err != nil {
		return nil, fmt.Errorf("prober: %w", err)
	}
	ps := &probers{ctx: ctx, total: o.warmup + o.duration, poll: poll}
	// Wake for the probes' due times only; answers are read then, timed
	// by when they reached the socket.
	if err := poll.ReadOnSchedule(o.interval); err != nil {
		poll.Close()
		return nil, fmt.Errorf("prober: %w", err)
	}
	var mix *request.Mix
	if o.spec != nil {
		mix = o.spec.Mix()
	}
	for i := range o.conns {
		ps.pcs = append(ps.pcs, &probeConn{live: o.live, id: i, c: poll.Add(t.Addr, t.RequestTarget, o.timeout), loop: -1, errs: map[client.Kind]int64{}})
		if mix != nil {
			// Each connection its own turn through the requests.
			ps.pcs[i].c.Use(mix.Fork(i))
		}
	}
	if err := poll.Dial(); err != nil {
		poll.Close()
		return nil, fmt.Errorf("prober: cannot connect to %s: %w", t.Addr, err)
	}
	return ps, nil
}

func (ps *probers) close() { ps.poll.Close() }

// finish stamps res's end, partial when the run was cut short. A run that
// got no answer at all (its placing requests included) returns res with an
// error saying what came instead (client.ErrNoAnswer).
func (ps *probers) finish(res *results.Result, start time.Time) (*results.Result, error) {
	end := time.Now()
	reason := interruptedReason(ps.ctx, start, ps.total)
	res.Finish(end, reason)
	if reason == "" {
		if err := ps.tally.NoAnswer(end.Sub(start)); err != nil {
			return res, fmt.Errorf("prober: %w", err)
		}
	}
	return res, nil
}

// A job is what one connection does, on the poller's goroutine: next says
// when its next request is due (now is when the previous one ended), done
// is told how it went (client.Driver's Next and Done).
type job interface {
	next(now time.Time) (time.Time, bool)
	done(due, sent, fin time.Time, r *client.Response, err error)
}

// run drives each connection's job (jobs[i] for connection i) until every
// one is done or ctx ends.
func (ps *probers) run(jobs []job) error {
	return ps.poll.Run(ps.ctx, &jobDriver{pcs: ps.pcs, jobs: jobs, tally: &ps.tally})
}

type jobDriver struct {
	pcs   []*probeConn
	jobs  []job
	tally *client.Tally
}

func (d *jobDriver) Next(c *client.PConn, now time.Time) (time.Time, bool) {
	return d.jobs[c.ID].next(now)
}

func (d *jobDriver) Send(*client.PConn, time.Time) {}

// Done books an error by kind and remembers the loop, then tells the job.
func (d *jobDriver) Done(c *client.PConn, due, sent, fin time.Time, r *client.Response, err error) {
	p := d.pcs[c.ID]
	if err == nil || client.KindOf(err) == client.BadStatus {
		if r.Loop >= 0 {
			p.loop = int(r.Loop)
		}
	}
	if err != nil && err != client.ErrInterrupted {
		p.errs[client.KindOf(err)]++
	}
	d.tally.Add(err)
	d.jobs[c.ID].done(due, sent, fin, r, err)
}

// errorCounts adds up the connections' errors in client.Kinds order.
func errorCounts(pcs []*probeConn) []results.ErrorCount {
	out := make([]results.ErrorCount, 0, len(client.Kinds))
	for _, k := range client.Kinds {
		var n int64
		for _, p := range pcs {
			n += p.errs[k]
		}
		out = append(out, results.ErrorCount{Kind: string(k), Count: n})
	}
	return out
}

func interruptedReason(ctx context.Context, start time.Time, d time.Duration) string {
	if ctx.Err() == nil {
		return ""
	}
	return fmt.Sprintf("interrupted after %.1fs of %s", time.Since(start).Seconds(), d)
}

func params(o options) results.Params {
	return results.Params{
		Target: o.target, Conns: o.conns, DurationNs: int64(o.duration), WarmupNs: int64(o.warmup),
		TimeoutNs: int64(o.timeout), IntervalNs: int64(o.interval),
		DelayNs: int64(o.delay), StallBlock: o.block, StartAtUnixNs: o.startAt.UnixNs(), Args: o.args,
		Request: specString(o.spec),
	}
}

// specString is what a run records of --bystander: "" without it.
func specString(s *request.Spec) string {
	if s == nil {
		return ""
	}
	return s.String()
}

func usSince(t0, t time.Time) float64 { return float64(t.Sub(t0)) / 1e3 }
