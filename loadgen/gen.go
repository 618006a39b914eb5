package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/hist"
	"github.com/bystander-kit/bystander/internal/live"
	"github.com/bystander-kit/bystander/internal/pace"
	"github.com/bystander-kit/bystander/internal/proc"
	"github.com/bystander-kit/bystander/internal/request"
	"github.com/bystander-kit/bystander/internal/results"
)

const maxLoops = 256

// worker is one connection and what it measured; only its goroutine
// touches it until the run ends.
type worker struct {
	id        int
	c         *client.PConn
	k         int            // open model: the index of its next request
	backoff   client.Backoff // closed model: the pause after a failed answer
	switched  bool
	old       bool      // the request in flight went to the first target
	lastOld   time.Time // the last answer to a request sent before the switch
	lat       *hist.H   // corrected in the open model
	uncorr    *hist.H   // open model only
	requests  int64     // measured
	warm      int64
	errs      [8]int64
	loops     [maxLoops]int64
	blocked   int64
	blockedN  int64
	queued    int64
	queuedN   int64
	behind    int64
	lastError error
}

// clock is the run's timeline; from switchNs on (Unix ns; when switchTo
// is set) requests go to switchTo. A told switch (--switch-when) moves
// switchNs earlier once, while the run goes on.
type clock struct {
	start, measure, end time.Time
	switchNs            *atomic.Int64
	switchTo            string
}

// series counts answers in steps of width over the measured window (by
// when each completed), shared by the workers: the per-second series and,
// when asked (--tick), a finer one with the block the server said.
type series struct {
	width           time.Duration
	reqs, errs      []atomic.Int64
	blocked, blockN []atomic.Int64
	// all counts every answered request, warm-up included, for --live-out.
	all atomic.Int64
}

// newSeries covers a window of d in steps of width (nil for no width).
func newSeries(width, d time.Duration) *series {
	if width <= 0 {
		return nil
	}
	n := int(d/width) + 1
	return &series{width: width, reqs: make([]atomic.Int64, n), errs: make([]atomic.Int64, n),
		blocked: make([]atomic.Int64, n), blockN: make([]atomic.Int64, n)}
}

// add books one answer that completed at since into the window; blockedNs
// is the block it said (-1: none).
func (s *series) add(since time.Duration, ok bool, blockedNs int64) {
	if s == nil {
		return
	}
	i := int(since / s.width)
	if i < 0 || i >= len(s.reqs) {
		return
	}
	if !ok {
		s.errs[i].Add(1)
		return
	}
	s.reqs[i].Add(1)
	if blockedNs >= 0 {
		s.blocked[i].Add(blockedNs)
		s.blockN[i].Add(1)
	}
}

func kindIndex(k client.Kind) int {
	for i, kk := range client.Kinds {
		if kk == k {
			return i
		}
	}
	return len(client.Kinds) - 1
}

// run drives the target and returns the result, partial when ctx ended
// first. progress, if not nil, is called about once a second. A run that
// got no answer at all returns its result and an error (client.ErrNoAnswer)
// saying what came instead.
func run(ctx context.Context, o options, progress func(elapsed, total time.Duration, requests int64)) (*results.Result, error) {
	t, err := client.ParseTarget(o.target, o.allowRemote)
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	mode := "closed"
	if o.rate > 0 {
		mode = "open"
	}
	ps, drivers, ws, err := deal(o, t)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, p := range ps {
			p.Close()
		}
	}()
	// Dial every connection before the clock starts, so the warm-up is
	// about the server, not the handshakes; a refused target stops here.
	for _, p := range ps {
		if err := p.Dial(); err != nil {
			return nil, fmt.Errorf("loadgen: cannot connect to %s: %w", t.Addr, err)
		}
	}
	start, _ := o.startAt.Begin(ctx) // interrupted while waiting: the run below ends at once, partial
	ck := clock{start: start, measure: start.Add(o.warmup), end: start.Add(o.warmup + o.duration)}
	if o.switchTo != "" {
		to, _ := client.ParseTarget(o.switchTo, o.allowRemote) // checked with the flags
		ck.switchNs, ck.switchTo = new(atomic.Int64), to.RequestTarget
		ck.switchNs.Store(ck.measure.Add(o.switchAt).UnixNano())
	}
	secs := newSeries(time.Second, o.duration)
	ticks := newSeries(o.tick, o.duration)
	res := results.New("loadgen", mode, start, results.Params{
		Target: o.target, Conns: o.conc, DurationNs: int64(o.duration), WarmupNs: int64(o.warmup),
		TimeoutNs: int64(o.timeout), RatePerS: o.rate, StartAtUnixNs: o.startAt.UnixNs(), Args: o.args,
		SwitchTo: o.switchTo, SwitchAtNs: int64(o.switchAt), TickNs: int64(o.tick), Request: specString(o.spec),
	})
	res.StartLateNs = int64(o.startAt.Late(start))

	runCtx, cancel := context.WithDeadline(ctx, ck.end)
	defer cancel()

	var wg sync.WaitGroup
	runErrs := make([]error, len(ps))
	for i, p := range ps {
		d := drivers[i]
		d.ck, d.secs, d.ticks = ck, secs, ticks
		wg.Add(1)
		go func() {
			defer wg.Done()
			// ctx, not runCtx: past the window's end the requests in flight
			// are still answered (and not counted); Ctrl-C cuts them.
			runErrs[i] = p.Run(ctx, d)
		}()
	}
	cpu0 := o.alongside(runCtx, ck, secs, progress)
	wg.Wait()
	cpuEnd := proc.Self()
	end := time.Now()
	if err := errors.Join(runErrs...); err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	var tally client.Tally
	for _, d := range drivers {
		tally.Merge(&d.tally)
	}
	reason := ""
	if ctx.Err() != nil {
		reason = fmt.Sprintf("interrupted after %.1fs of %s warm-up + %s", end.Sub(start).Seconds(), o.warmup, o.duration)
	}
	measureEnd := ck.end
	if end.Before(measureEnd) {
		measureEnd = end
	}
	measured := measureEnd.Sub(ck.measure)
	if measured < 0 {
		measured = 0
	}
	collect(res, ws, secs, ticks, measured, o.rate > 0)
	if o.switchTo != "" {
		settled(res, ws, ck)
	}
	if c0 := cpu0.Load(); c0 != nil {
		res.Generator = results.CostOf(cpuEnd.CPUNs()-c0.CPUNs(), res.Load.Requests)
	}
	if progress != nil {
		progress(measured, o.duration, res.Load.Requests)
	}
	o.live.Write(live.Load{Ms: end.Sub(ck.start).Milliseconds(), Answered: secs.all.Load(), End: true})
	res.Finish(end, reason)
	if reason == "" {
		if err := tally.NoAnswer(end.Sub(start)); err != nil {
			return res, fmt.Errorf("loadgen: %w", err)
		}
	}
	return res, nil
}

// deal makes the pollers (--threads), each one goroutine's, and deals the
// connections over them, each a worker; nothing is dialled yet.
func deal(o options, t client.Target) ([]*client.Poller, []*driver, []*worker, error) {
	ps := make([]*client.Poller, min(o.threads, o.conc))
	drivers := make([]*driver, len(ps))
	redials := new(client.Redials)
	for i := range ps {
		p, err := client.NewPoller()
		if err != nil {
			for _, p := range ps[:i] {
				p.Close()
			}
			return nil, nil, nil, fmt.Errorf("loadgen: %w", err)
		}
		ps[i], drivers[i] = p, &driver{rate: o.rate, conns: o.conc, redials: redials}
	}
	var mix *request.Mix
	if o.spec != nil {
		mix = o.spec.Mix()
	}
	ws := make([]*worker, o.conc)
	for i := range ws {
		d := drivers[i%len(ps)]
		ws[i] = &worker{id: i, c: ps[i%len(ps)].Add(t.Addr, t.RequestTarget, o.timeout), lat: hist.New()}
		if o.spec != nil {
			// Each connection its own turn through the requests, starting
			// at its number: connections started together do not all send
			// the same one.
			ws[i].c.Use(mix.Fork(i))
		}
		if o.rate > 0 {
			ws[i].uncorr = hist.New()
		}
		d.ws = append(d.ws, ws[i])
	}
	return ps, drivers, ws, nil
}

// alongside starts what runs beside the load until runCtx ends: the
// measured window's CPU start (returned, nil until the window begins), the
// watch for a told switch, the stage's live throughput and the progress.
func (o options) alongside(runCtx context.Context, ck clock, secs *series, progress func(elapsed, total time.Duration, requests int64)) *atomic.Pointer[proc.Usage] {
	cpu0 := new(atomic.Pointer[proc.Usage])
	go func() {
		if pace.Until(runCtx, ck.measure) {
			u := proc.Self()
			cpu0.Store(&u)
		}
	}()
	if o.switchWhen != "" {
		go watchSwitch(runCtx, o.switchWhen, ck, max(o.tick, 100*time.Millisecond))
	}
	if o.live != nil {
		// The stage's live throughput: answered requests so far, 4 times a
		// second, from the clock's start.
		go pace.Every(runCtx.Done(), 250*time.Millisecond, func(now time.Time) {
			o.live.Write(live.Load{Ms: now.Sub(ck.start).Milliseconds(), Answered: secs.all.Load()})
		})
	}
	if progress != nil {
		go pace.Every(runCtx.Done(), time.Second, func(now time.Time) {
			var n int64
			for i := range secs.reqs {
				n += secs.reqs[i].Load()
			}
			progress(now.Sub(ck.measure).Truncate(100*time.Millisecond), o.duration, n)
		})
	}
	return cpu0
}

// settled records, after a switch, when the last request sent before it
// was answered, and when the switch came.
func settled(res *results.Result, ws []*worker, ck clock) {
	var last time.Time
	for _, w := range ws {
		if w.lastOld.After(last) {
			last = w.lastOld
		}
	}
	res.Load.SettledNs = int64(max(last.Sub(ck.measure), 0))
	res.Params.SwitchAtNs = ck.switchNs.Load() - ck.measure.UnixNano() // a told switch: when it came
}

// specString is what a run records of --load: "" without it.
func specString(s *request.Spec) string {
	if s == nil {
		return ""
	}
	return s.String()
}

// watchSwitch moves the switch to now once the file path exists (looked
// for every 10 ms), never before the window's first step (one) has begun
// nor after the moment --switch-at set.
func watchSwitch(ctx context.Context, path string, ck clock, first time.Duration) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := os.Stat(path); err != nil {
				continue
			}
			// Now, when the file was seen, not when the tick fell due: a
			// tick read late would date the switch before the file was made.
			at := max(time.Now().UnixNano(), ck.measure.Add(first).UnixNano())
			if cur := ck.switchNs.Load(); at < cur {
				ck.switchNs.CompareAndSwap(cur, at)
			}
			return
		}
	}
}

// driver schedules and books one poller's connections (client.Driver);
// ws is indexed by the connections' IDs in that poller.
type driver struct {
	ws          []*worker
	ck          clock
	secs, ticks *series
	rate        float64 // open model; 0: closed
	conns       int
	tally       client.Tally    // every request's end, the window's or not
	redials     *client.Redials // shared by every poller's driver
}

// Next: closed, the next request leaves at once (after a failed answer,
// once the connection's pause is over and at most 100 such a second over
// all connections: client.Backoff, client.Redials); open, request k of connection id is due at
// start + (k*conns + id) / rate, late if the previous answer was late,
// never skipped: the lateness is what the corrected latency shows.
func (d *driver) Next(c *client.PConn, now time.Time) (time.Time, bool) {
	w := d.ws[c.ID]
	if d.rate > 0 {
		due := d.ck.start.Add(time.Duration((float64(w.k*d.conns+w.id) / d.rate) * float64(time.Second)))
		w.k++
		return due, due.Before(d.ck.end)
	}
	due := w.backoff.Due(now)
	if w.backoff.Paused() {
		due = d.redials.Due(due)
	}
	return due, due.Before(d.ck.end)
}

// Send moves the connection to the second target once the switch came.
func (d *driver) Send(c *client.PConn, now time.Time) {
	w, ck := d.ws[c.ID], d.ck
	if ck.switchTo != "" && !w.switched && now.UnixNano() >= ck.switchNs.Load() {
		c.Retarget(ck.switchTo)
		w.switched = true
	}
	w.old = ck.switchTo != "" && !w.switched
}

// Done books one request: sent is when it left, due when it should have
// (the same in the closed model).
func (d *driver) Done(c *client.PConn, due, sent, done time.Time, r *client.Response, err error) {
	w, ck, secs, ticks := d.ws[c.ID], d.ck, d.secs, d.ticks
	if errors.Is(err, client.ErrInterrupted) {
		return // the run was cut short: neither an answer nor a failure
	}
	d.tally.Add(err)
	w.backoff.After(r, err, done)
	if w.old {
		w.lastOld = done
	}
	if err == nil && !done.After(ck.end) {
		secs.all.Add(1)
	}
	// A request counts where it completes: every answer that arrives inside
	// the measured window is one, also the one sent during the warm-up, so
	// throughput is completions per second of the window, not the fewer
	// requests that both began and ended inside it.
	if done.Before(ck.measure) {
		if err == nil {
			w.warm++
		}
		return
	}
	if done.After(ck.end) {
		return // after the window, answered or cut by its end
	}
	since := done.Sub(ck.measure)
	if err != nil {
		w.errs[kindIndex(client.KindOf(err))]++
		w.lastError = err
		secs.add(since, false, -1)
		ticks.add(since, false, -1)
		return
	}
	w.requests++
	secs.add(since, true, -1)
	ticks.add(since, true, r.BlockedNs)
	w.lat.Record(done.Sub(due))
	if w.uncorr != nil {
		w.uncorr.Record(done.Sub(sent))
		if sent.Sub(due) > time.Millisecond {
			w.behind++
		}
	}
	if r.Loop >= 0 && r.Loop < maxLoops {
		w.loops[r.Loop]++
	}
	if r.BlockedNs >= 0 {
		w.blocked += r.BlockedNs
		w.blockedN++
	}
	if r.QueuedNs >= 0 {
		w.queued += r.QueuedNs
		w.queuedN++
	}
}

func collect(res *results.Result, ws []*worker, secs, ticks *series, measured time.Duration, open bool) {
	lat := hist.New()
	var uncorr *hist.H
	if open {
		uncorr = hist.New()
	}
	l := &results.Load{MeasuredNs: int64(measured)}
	var errs [8]int64
	var loops [maxLoops]int64
	var connsPerLoop [maxLoops]int64
	var blocked, blockedN, queued, queuedN int64
	for _, w := range ws {
		lat.Merge(w.lat)
		if open {
			uncorr.Merge(w.uncorr)
		}
		l.Requests += w.requests
		l.WarmupRequests += w.warm
		l.Dials += int64(w.c.Dials)
		l.BehindSchedule += w.behind
		for i, n := range w.errs {
			errs[i] += n
		}
		// The connection's loop: where most of its answers came from (it
		// keeps one unless it was redialled).
		best := -1
		for i, n := range w.loops {
			loops[i] += n
			if n > 0 && (best < 0 || n > w.loops[best]) {
				best = i
			}
		}
		if best >= 0 {
			connsPerLoop[best]++
		}
		blocked, blockedN = blocked+w.blocked, blockedN+w.blockedN
		queued, queuedN = queued+w.queued, queuedN+w.queuedN
	}
	l.Latency = lat.Summary()
	if open {
		s := uncorr.Summary()
		l.LatencyUncorrected = &s
	}
	if measured > 0 {
		l.ThroughputPerS = float64(l.Requests) / measured.Seconds()
	}
	for i, k := range client.Kinds {
		res.Errors = append(res.Errors, results.ErrorCount{Kind: string(k), Count: errs[i]})
	}
	l.RequestsPerLoop = []results.LoopCount{}
	for i, n := range loops {
		if n > 0 {
			l.RequestsPerLoop = append(l.RequestsPerLoop, results.LoopCount{Loop: i, Count: n})
		}
	}
	l.ConnsPerLoop = []results.LoopCount{}
	for i, n := range connsPerLoop {
		if n > 0 {
			l.ConnsPerLoop = append(l.ConnsPerLoop, results.LoopCount{Loop: i, Count: n})
		}
	}
	if blockedN > 0 {
		l.MeanBlockedNs = float64(blocked) / float64(blockedN)
		l.BlockedSamples = blockedN
	}
	if queuedN > 0 {
		l.MeanQueuedNs = float64(queued) / float64(queuedN)
	}
	full := int(measured / time.Second)
	if measured%time.Second != 0 {
		full++
	}
	l.PerSecond = []results.Second{}
	for i := 0; i < len(secs.reqs) && i < full && i < results.MaxSeriesPoints; i++ {
		l.PerSecond = append(l.PerSecond, results.Second{TS: i, Requests: secs.reqs[i].Load(), Errors: secs.errs[i].Load()})
	}
	if ticks != nil {
		// Every step the window reached, the last one perhaps shorter.
		l.Ticks = []results.Tick{}
		for i := 0; i < len(ticks.reqs) && time.Duration(i)*ticks.width < measured && i < results.MaxSeriesPoints; i++ {
			t := results.Tick{TMs: (time.Duration(i) * ticks.width).Milliseconds(), Requests: ticks.reqs[i].Load(), Errors: ticks.errs[i].Load(),
				BlockedSamples: ticks.blockN[i].Load()}
			if t.BlockedSamples > 0 {
				t.MeanBlockedNs = float64(ticks.blocked[i].Load()) / float64(t.BlockedSamples)
			}
			l.Ticks = append(l.Ticks, t)
		}
	}
	res.Load = l
}
