package findings

import (
	"time"

	"github.com/bystander-kit/bystander/internal/results"
)

// The slip phase: /slow at the highest concurrency while the call the load
// asks for slows in one step (5 ms, then 50 ms from halfway: a database on a
// bad afternoon). Each half is measured on its own, against the ceiling
// that binds it: the workers' (loops, slots, database connections) or,
// where they are fewer, the callers' (a closed load of N callers never has
// more than N requests in flight).

// SlipHalf is one side of the step.
type SlipHalf struct {
	// Block is what the load asked for; Ceiling is Workers / Block.
	Block   time.Duration
	Ceiling float64
	// PerS is the half's answers per second, MeasuredBlock the mean block
	// the server said (ns), Share PerS of Workers / MeasuredBlock, Fast
	// the /fast bystander's median from due (us): one value per
	// repetition.
	PerS, MeasuredBlock, Share, Fast Figure
	// FastProbes is how many /fast probes were due in the half (every
	// repetition); FastCensored how many of them were not answered by the
	// window's end (counted at their wait so far).
	FastProbes, FastCensored int64
}

// SlipTick is one step of the slip's timeline: the median over the
// repetitions of the answers per second in it, and of the slowest /fast
// probe due in it (from due, us; 0 with none due).
type SlipTick struct {
	TMs       int64
	PerS      float64
	FastMaxUs float64
	// FastCensored: a probe due in the step was never answered (its wait
	// is a lower bound).
	FastCensored bool
}

// SlipRow is one server's slip.
type SlipRow struct {
	*Group
	// Workers bound the ceiling on both sides; Binds says which: loops,
	// callers, database connections (prose's Workers says "4 loops").
	Workers       int
	Binds         WorkerKind
	At, TickWidth time.Duration
	Before, After SlipHalf
	// Settling is how long after the step the last answer to a request
	// asked before it came back (ns, per repetition): the after side
	// starts at the first step of the timeline after that.
	Settling Figure
	// AfterFrom is where the after side starts in the window (ns, per
	// repetition); it ends with the window.
	AfterFrom Figure
	Ticks     []SlipTick
	// NotSplit, when not SlipSplit, is why the halves could not be told
	// apart.
	NotSplit SlipNotSplit
}

// SlipNotSplit is why a slip's two sides could not be told apart.
type SlipNotSplit int

// Why a slip was not split, as SlipRowOf meets it.
const (
	SlipSplit      SlipNotSplit = iota
	SlipNoSteps                 // a load result without its steps (loadgen --tick) or the slip's moment
	SlipNotSettled              // the requests asked before the step were still answered at the window's end
)

// Fell is how many times fewer answers per second the slowed call left
// (before / after, the medians), 0 when not known.
func (r SlipRow) Fell() float64 {
	b, a := r.Before.PerS.Median(), r.After.PerS.Median()
	if a <= 0 || b <= 0 {
		return 0
	}
	return b / a
}

// slipBinds is the workers of a slip step's ceiling and what they are: the
// server's (as WorkersOf counts them), or the callers where those are
// fewer or the server sets no bound of its own.
func slipBinds(s results.Step, offloadWorkers int) (int, WorkerKind) {
	w := WorkersOf(s, offloadWorkers)
	if w == 0 || s.Conc < w {
		return s.Conc, WorkerCallers
	}
	sum := ServerSummary{Kind: s.Server.Kind, Workers: s.Server.Workers, SweepWorkers: w, DBConns: s.Server.DBConns, DBBound: DBBinds(s, offloadWorkers)}
	return w, sum.WorkerKind()
}

// SlipRowOf reads a slip group: its halves from loadgen's ticks and the
// /fast prober's timeline, split at the step's moment.
func SlipRowOf(g *Group, p Params) SlipRow {
	s := g.Step
	r := SlipRow{Group: g, At: time.Duration(s.SlipAtNs)}
	r.Workers, r.Binds = slipBinds(s, p.OffloadWorkers)
	r.Before = SlipHalf{Block: s.Block.D()}
	r.After = SlipHalf{Block: s.SlipBlock.D()}
	for _, h := range []*SlipHalf{&r.Before, &r.After} {
		h.Ceiling = CeilingPerS(r.Workers, h.Block)
	}
	var tl slipTimeline
	first := true
	for _, rep := range g.Reps {
		if rep.Load == nil || rep.Load.Load == nil {
			continue
		}
		width := time.Duration(rep.Load.Params.TickNs)
		// The step came when the load says it did: on stage, when the
		// presenter's key came (--switch-when), else where the plan set it.
		at := time.Duration(s.SlipAtNs)
		if sw := rep.Load.Params.SwitchAtNs; sw > 0 {
			at = time.Duration(sw)
		}
		if width <= 0 || len(rep.Load.Load.Ticks) == 0 || at <= 0 {
			r.NotSplit = SlipNoSteps
			continue
		}
		if first {
			r.At, first = at, false
		}
		r.TickWidth = width
		rates, fast, censored := r.addRep(rep, at, width)
		tl.add(rates, fast, censored, int((at-r.At)/width))
	}
	r.Ticks = tl.ticks(r.TickWidth)
	return r
}

// addRep adds one repetition's sides to r, its step at at in ticks of
// width, and returns its timeline: answers per second in each tick, the
// slowest /fast wait begun in each, and whether one of those was censored.
func (r *SlipRow) addRep(rep Rep, at, width time.Duration) (rates, ticksFast []float64, ticksCensored []bool) {
	l := rep.Load.Load
	measured := time.Duration(l.MeasuredNs)
	// The after side: every answer in it one to a request asked after
	// the step (those asked before, queued, take a while to drain).
	settled := max(time.Duration(l.SettledNs), at)
	r.Settling = append(r.Settling, float64(settled-at))
	afterFrom := (settled + width - 1) / width * width
	r.AfterFrom = append(r.AfterFrom, float64(afterFrom))
	var n [2]int64
	var blocked, blockN [2]float64
	for _, tk := range l.Ticks {
		from := time.Duration(tk.TMs) * time.Millisecond
		span := min(width, measured-from)
		if span <= 0 {
			continue
		}
		rates = append(rates, float64(tk.Requests)/span.Seconds())
		side := sideAt(from, at, afterFrom)
		if side < 0 {
			continue
		}
		n[side] += tk.Requests
		blocked[side] += tk.MeanBlockedNs * float64(tk.BlockedSamples)
		blockN[side] += float64(tk.BlockedSamples)
	}
	spans := [2]time.Duration{min(at, measured), measured - afterFrom}
	var fast [2][]float64
	if rep.Probe != nil && rep.Probe.Probe != nil {
		fast, ticksFast, ticksCensored = r.addProbe(rep.Probe, at, afterFrom, width, measured, len(l.Ticks))
	}
	if spans[1] <= 0 {
		r.NotSplit = SlipNotSettled
	}
	for side, h := range []*SlipHalf{&r.Before, &r.After} {
		if spans[side] <= 0 {
			continue
		}
		h.PerS = append(h.PerS, float64(n[side])/spans[side].Seconds())
		if blockN[side] > 0 {
			mb := blocked[side] / blockN[side]
			h.MeasuredBlock = append(h.MeasuredBlock, mb)
			h.Share = append(h.Share, shareOf(float64(n[side])/spans[side].Seconds(), CeilingPerS(r.Workers, time.Duration(mb))))
		}
		if len(fast[side]) > 0 {
			h.Fast = append(h.Fast, results.Median(fast[side]))
		}
	}
	return rates, ticksFast, ticksCensored
}

// addProbe counts one repetition's /fast probes on each side of the step
// and returns their waits (us) by side, and by the load's ticks (of ticks)
// the slowest wait begun in each and whether one was censored.
func (r *SlipRow) addProbe(pr *results.Result, at, afterFrom, width, measured time.Duration, ticks int) (fast [2][]float64, ticksFast []float64, ticksCensored []bool) {
	warm := float64(pr.Params.WarmupNs) / 1e3
	for _, pt := range pr.Probe.Timeline {
		due := time.Duration((pt.DueUs - warm) * 1e3)
		if due < 0 || due >= measured || pt.Error != "" {
			continue
		}
		wait := max(pt.DoneUs-pt.DueUs, 0)
		if side := sideAt(due, at, afterFrom); side >= 0 {
			fast[side] = append(fast[side], wait)
			r.sideOf(side).FastProbes++
			if pt.Censored {
				r.sideOf(side).FastCensored++
			}
		}
		// Drawn in its step of the load's timeline, none past it
		// (the files, perhaps a stranger's, say the widths).
		i := int(due / width)
		if i >= ticks {
			continue
		}
		for len(ticksFast) <= i {
			ticksFast = append(ticksFast, 0)
			ticksCensored = append(ticksCensored, false)
		}
		ticksFast[i] = max(ticksFast[i], wait)
		ticksCensored[i] = ticksCensored[i] || pt.Censored
	}
	return fast, ticksFast, ticksCensored
}

// slipTimeline gathers the repetitions' timelines of a slip: per
// repetition, answers per second and the slowest /fast wait in each tick,
// and its ticks before the first's step (the timelines meet at their
// steps); censored is any repetition's censored wait in a tick.
type slipTimeline struct {
	perTick, fastTick [][]float64
	censored          []bool
	shift             []int
}

func (tl *slipTimeline) add(rates, fast []float64, censored []bool, shift int) {
	tl.perTick = append(tl.perTick, rates)
	tl.fastTick = append(tl.fastTick, fast)
	tl.shift = append(tl.shift, shift)
	if tl.censored == nil {
		tl.censored = censored
		return
	}
	for i, c := range censored {
		if i < len(tl.censored) {
			tl.censored[i] = tl.censored[i] || c
		}
	}
}

// ticks is the timeline: the first repetition's, each other's moved so
// that its step falls where the first's does (on stage a key decides when).
func (tl *slipTimeline) ticks(width time.Duration) []SlipTick {
	var out []SlipTick
	for i := 0; ; i++ {
		var rates, fast []float64
		more := false
		for k, rs := range tl.perTick {
			j := i + tl.shift[k]
			more = more || j+1 < len(rs)
			if j >= 0 && j < len(rs) {
				rates = append(rates, rs[j])
			}
			if fs := tl.fastTick[k]; j >= 0 && j < len(fs) {
				fast = append(fast, fs[j])
			}
		}
		if len(rates) == 0 {
			if more {
				continue
			}
			break
		}
		t := SlipTick{TMs: int64(i) * width.Milliseconds(), PerS: results.Median(rates)}
		if len(fast) > 0 {
			t.FastMaxUs = results.Median(fast)
		}
		t.FastCensored = i < len(tl.censored) && tl.censored[i]
		out = append(out, t)
	}
	return out
}

// sideAt is the side of the step a moment of the window is on: 0 before
// at, 1 from afterFrom on, -1 while the step settles.
func sideAt(t, at, afterFrom time.Duration) int {
	switch {
	case t < at:
		return 0
	case t >= afterFrom:
		return 1
	}
	return -1
}

func (r *SlipRow) sideOf(side int) *SlipHalf {
	if side == 0 {
		return &r.Before
	}
	return &r.After
}

// CeilingFell is how many times lower the ceiling that binds is after the
// step (the asked blocks' ratio).
func (r SlipRow) CeilingFell() float64 {
	if r.After.Ceiling <= 0 {
		return 0
	}
	return r.Before.Ceiling / r.After.Ceiling
}
