package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/bystander-kit/bystander/internal/live"

	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/results"
)

// probeConn is one connection and its error counts; one goroutine owns it.
type probeConn struct {
	live *live.Writer // --live-out, or nil
	id   int
	c    *client.Conn
	loop int // last X-Loop seen, -1 before any
	errs map[client.Kind]int64
}

// dialAll opens every connection before anything is timed. When ctx ends,
// requests in flight are interrupted; the returned stop undoes that.
func dialAll(ctx context.Context, o options) ([]*probeConn, func(), error) {
	t, err := client.ParseTarget(o.target, o.allowRemote)
	if err != nil {
		return nil, nil, fmt.Errorf("prober: %w", err)
	}
	pcs := make([]*probeConn, o.conns)
	for i := range pcs {
		pcs[i] = &probeConn{live: o.live, id: i, c: client.New(t.Addr, t.RequestTarget, o.timeout), loop: -1, errs: map[client.Kind]int64{}}
		if err := pcs[i].c.Dial(); err != nil {
			closeAll(pcs[:i])
			return nil, nil, fmt.Errorf("prober: cannot connect to %s: %w", t.Addr, err)
		}
	}
	stop := context.AfterFunc(ctx, func() {
		for _, p := range pcs {
			p.c.Interrupt()
		}
	})
	return pcs, func() { stop(); closeAll(pcs) }, nil
}

func closeAll(pcs []*probeConn) {
	for _, p := range pcs {
		p.c.Close()
	}
}

// do sends one request, books an error by kind and remembers the loop.
func (p *probeConn) do(r *client.Response) error {
	err := p.c.Do(r)
	if err == nil || client.KindOf(err) == client.BadStatus {
		if r.Loop >= 0 {
			p.loop = int(r.Loop)
		}
	}
	if err != nil && err != client.ErrInterrupted {
		p.errs[client.KindOf(err)]++
	}
	return err
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

// forEach runs fn for every connection on its own goroutine and waits.
func forEach(pcs []*probeConn, fn func(p *probeConn)) {
	var wg sync.WaitGroup
	for _, p := range pcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(p)
		}()
	}
	wg.Wait()
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
		DelayNs: int64(o.delay), StallBlockNs: int64(o.block), StartAtUnixNs: o.startAt.UnixNs(), Args: o.args,
	}
}

func usSince(t0, t time.Time) float64 { return float64(t.Sub(t0)) / 1e3 }
