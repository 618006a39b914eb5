package findings

import (
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/results"
)

// slipGroup is one slip measurement: 4 s in 100 ms ticks, the step at
// 2 s; before it perBefore answers a tick saying 5 ms, after it the
// answers asked before the step drain until settled, then perAfter a tick
// saying 50 ms. probes are /fast probes (due, wait) in ms of the window.
func slipGroup(s results.Server, conc int, perBefore, perAfter int64, settled time.Duration, probes [][3]float64) *Group {
	return slipGroupAt(s, conc, perBefore, perAfter, 2*time.Second, settled, probes, false)
}

// slipGroupAt is slipGroup with its step at at: the plan's moment, or
// (told) one the load says came before the plan's latest, 3 s.
func slipGroupAt(s results.Server, conc int, perBefore, perAfter int64, at, settled time.Duration, probes [][3]float64, told bool) *Group {
	const width, window = 100 * time.Millisecond, 4 * time.Second
	l := &results.Load{MeasuredNs: int64(window), SettledNs: int64(settled)}
	for i := range int(window / width) {
		from := time.Duration(i) * width
		tk := results.Tick{TMs: from.Milliseconds(), Requests: perBefore, BlockedSamples: perBefore, MeanBlockedNs: 5.2e6}
		switch {
		case from >= settled:
			tk = results.Tick{TMs: from.Milliseconds(), Requests: perAfter, BlockedSamples: perAfter, MeanBlockedNs: 50.3e6}
		case from >= at: // the drain: neither side
			tk = results.Tick{TMs: from.Milliseconds(), Requests: 1000, BlockedSamples: 1000, MeanBlockedNs: 1e6}
		}
		l.Ticks = append(l.Ticks, tk)
	}
	lr := &results.Result{Params: results.Params{TickNs: int64(width)}, Load: l}
	planned := at
	if told {
		lr.Params.SwitchAtNs, planned = int64(at), 3*time.Second
	}
	const warm = 300e3 // us
	pr := &results.Result{Params: results.Params{WarmupNs: 300e6}, Probe: &results.Probe{}}
	for _, p := range probes {
		pr.Probe.Timeline = append(pr.Probe.Timeline, results.ProbePoint{DueUs: warm + p[0]*1e3, DoneUs: warm + (p[0]+p[1])*1e3, Censored: p[2] != 0})
	}
	step := results.Step{ID: "slip-" + s.Name, Phase: "slip", Server: s, Block: 5e6, Endpoint: "/slow", Conc: conc, Duration: window,
		SlipBlock: results.Block(50 * time.Millisecond), SlipAtNs: int64(planned)}
	return &Group{Step: step, Reps: []Rep{{Load: lr, Probe: pr}}, Load: []*results.Result{lr}, Probe: []*results.Result{pr}}
}

// TestSlip: each side of the step measured on its own, against the
// ceiling that binds it: the loops', the callers' where they are fewer
// than the slots, the database connections' behind the slots; the drain
// after the step belongs to neither side, and a /fast probe never
// answered counts at its wait so far.
func TestSlip(t *testing.T) {
	loop := results.Server{Name: "loop-gnet", Kind: "loop", Workers: 4}
	pool := results.Server{Name: "pool", Kind: "pool", Workers: 200}
	dbPool := pool
	dbPool.DBConns = 10
	goroutine := results.Server{Name: "nethttp", Kind: "goroutine"}
	for _, tc := range []struct {
		s                        results.Server
		binds                    string
		ceilings                 [2]float64
		kind                     WorkerKind
		perBefore, perAfter      int64
		wantBefore, wantAfter    float64
		fell                     float64
		probes                   [][3]float64
		fastBefore, fastAfter    float64 // us
		fastCensored, fastProbes int64   // after the step
	}{
		{loop, "4 loops", [2]float64{800, 80}, WorkerLoops, 77, 8, 770, 80, 770.0 / 80,
			[][3]float64{{100, 80, 0}, {500, 90, 0}, {900, 70, 0}, {2100, 400, 0}, {3000, 600, 0}, {3500, 500, 1}, {3900, 100, 1}}, 80e3, 500e3, 2, 3},
		{pool, "64 callers", [2]float64{12800, 1280}, WorkerCallers, 1000, 125, 10000, 1250, 8, nil, 0, 0, 0, 0},
		{dbPool, "10 database connections", [2]float64{2000, 200}, WorkerDBConns, 190, 19, 1900, 190, 10, nil, 0, 0, 0, 0},
		{goroutine, "64 callers", [2]float64{12800, 1280}, WorkerCallers, 1000, 125, 10000, 1250, 8, nil, 0, 0, 0, 0},
	} {
		t.Run(tc.s.Name+"/"+tc.binds, func(t *testing.T) {
			r := SlipRowOf(slipGroup(tc.s, 64, tc.perBefore, tc.perAfter, 2150*time.Millisecond, tc.probes), Params{OffloadWorkers: 200})
			if r.Binds != tc.kind || r.Before.Ceiling != tc.ceilings[0] || r.After.Ceiling != tc.ceilings[1] {
				t.Fatalf("binds %d workers of kind %v, ceilings %v -> %v; want %s, %v", r.Workers, r.Binds, r.Before.Ceiling, r.After.Ceiling, tc.binds, tc.ceilings)
			}
			// The drain (2.0-2.2 s: settled at 2.15 s, the after side from
			// the next tick) is on neither side.
			if r.Before.PerS.Median() != tc.wantBefore || r.After.PerS.Median() != tc.wantAfter || r.Fell() != tc.fell {
				t.Fatalf("before %v after %v fell %v; want %v, %v, %v", r.Before.PerS, r.After.PerS, r.Fell(), tc.wantBefore, tc.wantAfter, tc.fell)
			}
			if r.AfterFrom.Median() != float64(2200*time.Millisecond) || r.Settling.Median() != float64(150*time.Millisecond) {
				t.Fatalf("after side from %v, settling %v", r.AfterFrom, r.Settling)
			}
			if r.Before.MeasuredBlock.Median() != 5.2e6 || r.After.MeasuredBlock.Median() != 50.3e6 {
				t.Fatalf("measured blocks %v, %v", r.Before.MeasuredBlock, r.After.MeasuredBlock)
			}
			wantShare := tc.wantAfter / CeilingPerS(r.Workers, 50300*time.Microsecond)
			if d := r.After.Share.Median() - wantShare; d > 1e-9 || d < -1e-9 {
				t.Fatalf("after share %v, want %v", r.After.Share, wantShare)
			}
			if len(r.Ticks) != 40 || r.Ticks[10].PerS != float64(tc.perBefore)*10 {
				t.Fatalf("%d ticks, the 11th %+v", len(r.Ticks), r.Ticks[10])
			}
			if tc.probes != nil {
				if r.Before.Fast.Median() != tc.fastBefore || r.After.Fast.Median() != tc.fastAfter || r.After.FastCensored != tc.fastCensored || r.After.FastProbes != tc.fastProbes {
					t.Fatalf("/fast before %v after %v, %d of %d censored", r.Before.Fast, r.After.Fast, r.After.FastCensored, r.After.FastProbes)
				}
				// The probe due at 2.1 s is in the drain: on neither side, but
				// drawn in its tick.
				if tk := r.Ticks[21]; tk.FastMaxUs != 400e3 || !r.Ticks[39].FastCensored {
					t.Fatalf("ticks %+v, %+v", tk, r.Ticks[39])
				}
			}
		})
	}
	// A window that ends before the answers asked before the step are in:
	// no after side, and the row says why.
	r := SlipRowOf(slipGroup(loop, 64, 77, 8, 5*time.Second, nil), Params{})
	if r.After.PerS.OK() || r.NotSplit != SlipNotSettled {
		t.Fatalf("after %v, not split %v", r.After.PerS, r.NotSplit)
	}
	// A load without ticks (an older loadgen): not told apart, said.
	g := slipGroup(loop, 64, 77, 8, 2150*time.Millisecond, nil)
	g.Reps[0].Load.Load.Ticks = nil
	if r := SlipRowOf(g, Params{}); r.Before.PerS.OK() || r.NotSplit != SlipNoSteps {
		t.Fatalf("before %v, not split %v", r.Before.PerS, r.NotSplit)
	}
}

// TestSlipHostileTicks: a stranger's run directory may say a 1 ns tick and
// a /fast probe due an hour into the window; the timeline keeps to the
// load's own steps, so nothing grows with what the files claim.
func TestSlipHostileTicks(t *testing.T) {
	loop := results.Server{Name: "loop-gnet", Kind: "loop", Workers: 4}
	g := slipGroup(loop, 64, 77, 8, 2150*time.Millisecond, [][3]float64{{100, 80, 0}})
	g.Reps[0].Load.Params.TickNs = 1
	g.Reps[0].Load.Load.MeasuredNs = int64(time.Hour)
	g.Reps[0].Probe.Probe.Timeline = append(g.Reps[0].Probe.Probe.Timeline, results.ProbePoint{DueUs: 3e9, DoneUs: 3e9 + 1e3})
	r := SlipRowOf(g, Params{})
	if len(r.Ticks) != len(g.Reps[0].Load.Load.Ticks) {
		t.Fatalf("%d ticks on the timeline, the load has %d", len(r.Ticks), len(g.Reps[0].Load.Load.Ticks))
	}
}

// TestSlipTold: on stage the step comes at the presenter's key, before the
// plan's latest moment; each side is read from when the load says it
// came, and repetitions told at other moments meet at their steps on the
// timeline.
func TestSlipTold(t *testing.T) {
	loop := results.Server{Name: "loop-gnet", Kind: "loop", Workers: 4}
	g := slipGroupAt(loop, 64, 77, 8, 1200*time.Millisecond, 1350*time.Millisecond, nil, true)
	r := SlipRowOf(g, Params{})
	if r.At != 1200*time.Millisecond || r.Before.PerS.Median() != 770 || r.After.PerS.Median() != 80 {
		t.Fatalf("told at 1.2 s: at %s, before %v, after %v req/s; want 1.2s, 770 and 80", r.At, r.Before.PerS, r.After.PerS)
	}
	// A second repetition told at 1.6 s: its step meets the first's.
	g2 := slipGroupAt(loop, 64, 77, 8, 1600*time.Millisecond, 1750*time.Millisecond, nil, true)
	g.Reps = append(g.Reps, g2.Reps...)
	r = SlipRowOf(g, Params{})
	if len(r.Ticks) < 20 {
		t.Fatalf("%d ticks", len(r.Ticks))
	}
	for i, tk := range r.Ticks {
		switch {
		case tk.TMs < 1200 && tk.PerS != 770:
			t.Errorf("tick %d ms, before both steps: %.0f req/s, want 770", tk.TMs, tk.PerS)
		case tk.TMs >= 1400 && tk.TMs < 2400 && tk.PerS != 80:
			t.Errorf("tick %d ms, after both steps settled: %.0f req/s, want 80 (the second repetition not moved to meet the first?)", tk.TMs, tk.PerS)
		}
		if tk.TMs != int64(i)*100 {
			t.Fatalf("tick %d at %d ms", i, tk.TMs)
		}
	}
}
