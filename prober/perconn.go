package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/hist"
	"github.com/bystander-kit/bystander/internal/pace"
	"github.com/bystander-kit/bystander/internal/proc"
	"github.com/bystander-kit/bystander/internal/results"
)

// runPerConn opens the connections, learns each one's loop with one
// request, says it is ready (so blockers start after the connections are
// placed: a connection dealt to a blocked loop is not even opened), then
// times every connection on its own for the warm-up and the duration.
func runPerConn(ctx context.Context, o options, stdout io.Writer) (*results.Result, error) {
	pcs, done, err := dialAll(ctx, o)
	if err != nil {
		return nil, err
	}
	defer done()
	for _, p := range pcs {
		var r client.Response
		if err := p.do(&r); err != nil {
			return nil, fmt.Errorf("prober: connection %d: the first request failed, so its loop is unknown: %w", p.id, err)
		}
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
	line := fmt.Sprintf("prober: ready: %d connections placed (%s)", len(pcs), strings.Join(parts, ", "))
	fmt.Fprintln(stdout, line)
	if o.readyFile != "" {
		if err := writeReady(o.readyFile, line); err != nil {
			return nil, err
		}
	}

	start := time.Now()
	from := start.Add(o.warmup)
	end := from.Add(o.duration)
	res := results.New("prober", "perconn", start, params(o))
	cpu0 := proc.Self()
	hs := make([]*hist.H, len(pcs))
	forEach(pcs, func(p *probeConn) {
		h := hist.New()
		hs[p.id] = h
		for k := 0; ctx.Err() == nil; k++ {
			due := time.Now()
			if o.interval > 0 {
				due = start.Add(time.Duration(k) * o.interval)
				if !pace.Until(ctx, due) {
					return
				}
			}
			if !due.Before(end) {
				return
			}
			var r client.Response
			err := p.do(&r)
			fin := time.Now()
			if err == client.ErrInterrupted {
				return
			}
			if err == nil && !due.Before(from) {
				h.Record(fin.Sub(due))
			}
		}
	})
	pc := &results.PerConn{StallThresholdNs: int64(o.stallThreshold), Spread: sp}
	var samples int64
	for _, p := range pcs {
		s := hs[p.id].Summary()
		stalled := s.Count > 0 && s.P50Us*1e3 > float64(o.stallThreshold)
		var errs int64
		for _, n := range p.errs {
			errs += n
		}
		pc.Conns = append(pc.Conns, results.ConnStat{Conn: p.id, Loop: p.loop, Samples: s.Count, Errors: errs,
			P50Us: s.P50Us, P95Us: s.P95Us, MaxUs: s.MaxUs, Stalled: stalled})
		if stalled {
			pc.Stalled++
		}
		samples += s.Count
	}
	res.PerConn = pc
	res.Errors = errorCounts(pcs)
	cpu := proc.Self().CPUNs() - cpu0.CPUNs()
	res.Generator = results.Cost{CPUNs: cpu, Requests: samples}
	if samples > 0 {
		res.Generator.CPUUsPerRequest = float64(cpu) / 1e3 / float64(samples)
	}
	res.Finish(time.Now(), interruptedReason(ctx, start, o.warmup+o.duration))
	return res, nil
}

// writeReady writes the ready line through a rename, so a watcher never
// reads half of it.
func writeReady(path, line string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ready-*")
	if err != nil {
		return fmt.Errorf("prober: --ready-file: %w", err)
	}
	_, werr := tmp.WriteString(line + "\n")
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("prober: --ready-file: %w", werr)
	}
	return nil
}
