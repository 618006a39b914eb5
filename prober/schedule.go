package main

import (
	"time"

	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/hist"
	"github.com/bystander-kit/bystander/internal/live"
	"github.com/bystander-kit/bystander/internal/results"
)

// lateAfter is how far behind its due time a probe may be sent and still
// count as on time.
const lateAfter = time.Millisecond

// schedule probes one connection at t0 + phase + k x interval (a job) and
// keeps what it saw of its due probes.
type schedule struct {
	p                           *probeConn
	t0, from, end               time.Time
	phase, interval             time.Duration
	delay                       time.Duration
	k                           int
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

// newSchedule probes p at t0 + phase + k x interval for every due time in
// [from, end), whatever happened before: a probe that could not be sent on
// time (the previous one had not come back) is sent as soon as it can and
// timed from its due time, which is the bystander's real wait and what a
// prober timing from the send would hide.
//
// Every due probe is accounted for. One answered inside the window counts
// its latency from due (corrected) and from its send (uncorrected); one
// that failed is counted apart; one still unanswered when the window ends
// (in flight, or never sent because those before it were held up) is
// censored: it counts in corrected at its wait so far, end - due, a lower
// bound, so a saturated bystander's percentiles are never those of the
// lucky few that got through. A probe leaves at its due time, a few tens
// of microseconds late on an idle machine (the poller's wait is in
// nanoseconds); the per-connection verdict is judged from the server's own
// timestamps in any case and does not depend on when a probe left.
func newSchedule(p *probeConn, t0, from, end time.Time, phase, interval, delay time.Duration) *schedule {
	s := &schedule{p: p, t0: t0, from: from, end: end, phase: phase, interval: interval, delay: delay,
		corrected: hist.New(), uncorrected: hist.New(), lag: hist.New(), serverWait: hist.New()}
	if first := t0.Add(phase); first.Before(from) {
		s.k = int((from.Sub(first) + interval - 1) / interval)
	}
	return s
}

func (s *schedule) dueAt(k int) time.Time { return s.t0.Add(s.phase + time.Duration(k)*s.interval) }

func (s *schedule) censor(due, sent time.Time) {
	pt := results.ProbePoint{Conn: s.p.id, Loop: s.p.loop, DueUs: usSince(s.t0, due), DoneUs: usSince(s.t0, s.end), Censored: true}
	if !sent.IsZero() {
		pt.SentUs = usSince(s.t0, sent)
	}
	s.points = append(s.points, pt)
	s.corrected.Record(s.end.Sub(due))
	s.censored++
}

// next is the next due time; the ones the window's end overtook while a
// probe was out are censored unsent.
func (s *schedule) next(now time.Time) (time.Time, bool) {
	for ; s.dueAt(s.k).Before(s.end); s.k++ {
		due := s.dueAt(s.k)
		if !now.Before(s.end) && !now.Before(due) {
			s.due++
			s.censor(due, time.Time{})
			continue
		}
		s.k++
		return due, true
	}
	return time.Time{}, false
}

func (s *schedule) done(due, sent, fin time.Time, r *client.Response, err error) {
	if err == client.ErrInterrupted {
		return // cut short: the result is partial and says so
	}
	s.due++
	s.lag.Record(sent.Sub(due))
	if sent.Sub(due) > lateAfter {
		s.late++
	}
	if fin.After(s.end) {
		s.censor(due, sent)
		return
	}
	p := s.p
	pt := results.ProbePoint{Conn: p.id, Loop: p.loop, DueUs: usSince(s.t0, due), SentUs: usSince(s.t0, sent),
		DoneUs: usSince(s.t0, fin), Status: r.Status}
	ln := live.Probe{Conn: p.id, Loop: p.loop, DueMs: float64(due.Sub(s.t0)) / 1e6, Ms: float64(fin.Sub(due)) / 1e6, Failed: err != nil}
	w, ok := serverWait(r, sent, s.delay)
	if ok && err == nil {
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
		if ok {
			s.serverWait.Record(w)
		}
	}
	s.points = append(s.points, pt)
}
