package main

import (
	"context"
	"time"

	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/hist"
	"github.com/bystander-kit/bystander/internal/live"
	"github.com/bystander-kit/bystander/internal/results"
)

// lateAfter is how far behind its due time a probe may be sent and still
// count as on time.
const lateAfter = time.Millisecond

// schedule is what one connection saw of its due probes.
type schedule struct {
	points                      []results.ProbePoint
	corrected, uncorrected, lag *hist.H
	// serverWait is what the server made each answered probe wait, from
	// its own timestamps (see serverWait).
	serverWait            *hist.H
	due, answered, failed int64
	censored, late        int64
}

// serverWait is what the server made one request wait, from its own
// timestamps on the machine's one clock: from the send to X-Handler-Start
// (the request waited to be read and handled), plus how late the
// continuation ran after the delay it was asked for (X-Continuation-Start -
// X-Handler-Start - delay). Neither the prober's lateness in sending nor
// its reading of the answer counts. False without X-Handler-Start.
func serverWait(r *client.Response, sent time.Time, delay time.Duration) (time.Duration, bool) {
	if r.HandlerStart <= 0 {
		return 0, false
	}
	w := time.Duration(r.HandlerStart - sent.UnixNano())
	if r.ContinuationStart > 0 {
		w += max(0, time.Duration(r.ContinuationStart-r.HandlerStart)-delay)
	}
	return max(w, 0), true
}

// probeSchedule probes one connection at t0 + phase + k x interval for
// every due time in [from, end), whatever happened before: a probe that
// could not be sent on time (the previous one had not come back) is sent
// as soon as it can and timed from its due time, which is the bystander's
// real wait and what a prober timing from the send would hide.
//
// Every due probe is accounted for. One answered inside the window counts
// its latency from due (corrected) and from its send (uncorrected); one
// that failed is counted apart; one still unanswered when the window ends
// (in flight, or never sent because those before it were held up) is
// censored: it counts in corrected at its wait so far, end - due, a lower
// bound, so a saturated bystander's percentiles are never those of the
// lucky few that got through.
//
// wait is how it waits for a due time: pace.Until, within a tenth of a
// millisecond, for the /fast bystander's one probe every 50 ms; pace.Sleep,
// within about a millisecond and costing nothing meanwhile, for the
// per-connection prober's twelve every 10 ms, whose verdict is judged from
// the server's own timestamps and does not depend on when a probe left.
func probeSchedule(ctx context.Context, p *probeConn, t0, from, end time.Time, phase, interval, delay time.Duration,
	wait func(context.Context, time.Time) bool) *schedule {
	s := &schedule{corrected: hist.New(), uncorrected: hist.New(), lag: hist.New(), serverWait: hist.New()}
	k := 0
	if first := t0.Add(phase); first.Before(from) {
		k = int((from.Sub(first) + interval - 1) / interval)
	}
	dueAt := func(k int) time.Time { return t0.Add(phase + time.Duration(k)*interval) }
	censor := func(due, sent time.Time) {
		pt := results.ProbePoint{Conn: p.id, Loop: p.loop, DueUs: usSince(t0, due), DoneUs: usSince(t0, end), Censored: true}
		if !sent.IsZero() {
			pt.SentUs = usSince(t0, sent)
		}
		s.points = append(s.points, pt)
		s.corrected.Record(end.Sub(due))
		s.censored++
	}
	for ; dueAt(k).Before(end); k++ {
		due := dueAt(k)
		if ctx.Err() != nil || !wait(ctx, due) {
			return s // interrupted: the result is partial and says so
		}
		s.due++
		sent := time.Now()
		if !sent.Before(end) {
			censor(due, time.Time{})
			continue
		}
		var r client.Response
		err := p.do(&r)
		fin := time.Now()
		if err == client.ErrInterrupted {
			s.due--
			return s
		}
		s.lag.Record(sent.Sub(due))
		if sent.Sub(due) > lateAfter {
			s.late++
		}
		if fin.After(end) {
			censor(due, sent)
			continue
		}
		pt := results.ProbePoint{Conn: p.id, Loop: p.loop, DueUs: usSince(t0, due), SentUs: usSince(t0, sent),
			DoneUs: usSince(t0, fin), Status: r.Status}
		ln := live.Probe{Conn: p.id, Loop: p.loop, DueMs: float64(due.Sub(t0)) / 1e6, Ms: float64(fin.Sub(due)) / 1e6, Failed: err != nil}
		if w, ok := serverWait(&r, sent, delay); ok && err == nil {
			ln.WaitMs = float64(w) / 1e6
		}
		p.live.Write(ln)
		if err != nil {
			pt.Error = string(client.KindOf(err))
			s.failed++
		} else {
			s.answered++
			s.corrected.Record(fin.Sub(due))
			s.uncorrected.Record(fin.Sub(sent))
			if w, ok := serverWait(&r, sent, delay); ok {
				s.serverWait.Record(w)
			}
		}
		s.points = append(s.points, pt)
	}
	return s
}
