package findings

import (
	"math"
	"time"

	"github.com/bystander-kit/bystander/internal/results"
)

// nearCeiling is the share of a ceiling at which it is taken to bind.
const nearCeiling = 0.9

// kitSaturation is the machine's saturation: the kit's own processes
// using this share of its cores make a row CPU-bound.
const kitSaturation = 0.9

// SharedAbove is the share of the machine other processes may use before a
// row is flagged as measured on a shared machine.
const SharedAbove = 0.1

// littleTolerance is how far throughput x mean latency / callers may be
// from 1 on a closed-loop row.
const littleTolerance = 0.01

// blockTolerance is how far a server's measured block (X-Blocked-Ns) may
// be from the block the run asked it for before its row says so: a server
// that ignores ?block= or blocks far longer is not measured on the run's
// call.
const blockTolerance = 0.10

// BlockOff is how far measured (ns, the server's X-Blocked-Ns) is from
// the asked block, as a share (+0.12: 12 % longer), and whether that is
// more than blockTolerance off, which a row then says.
func BlockOff(asked time.Duration, measuredNs float64) (float64, bool) {
	if asked <= 0 || measuredNs <= 0 {
		return 0, false
	}
	r := measuredNs/float64(asked) - 1
	return r, math.Abs(r) > blockTolerance
}

// Bound says what limits one measurement's throughput, decided from the
// measured ceilings and the measured use of the machine: its kind, the
// rule that decided it (Case) and the figures it was decided on, which
// internal/prose says.
type Bound struct {
	// Kind: workers (workers / measured block), callers (callers / measured
	// block, Little's law), cpu (the kit's processes use the machine),
	// generator (the load generator uses more of it than the server: not
	// the server's figure), none (no ceiling near).
	Kind string
	// Case is the rule that decided Kind; Cause, for none, what likely
	// held the measurement instead.
	Case           BoundCase
	Cause          NoneCause
	NominalCeiling float64 // workers / requested block, req/s
	WorkersCeiling float64 // workers / measured block
	CallersCeiling float64 // callers / measured block
	MeasuredBlock  time.Duration
	// BlockMeasured is false when the server did not say how long it
	// blocked (no X-Blocked-Ns): the ceilings then use the requested block.
	BlockMeasured bool
	// Asked is the block the step asked for; BlockedNs the servers' mean
	// X-Blocked-Ns (0: not said); SlipBlock a slip's second call.
	Asked, SlipBlock time.Duration
	BlockedNs        float64
	Share            float64 // throughput / the binding ceiling (the lowest for none)
	// Lowest is the lowest ceiling, the callers' when LowestCallers.
	Lowest        float64
	LowestCallers bool
	// Workers is what can block for the step, as WorkersCeiling counts
	// them; NoWorkers when a --target's are not known. AsIsWorkers, for a
	// server measured as it is, the workers it behaves as, rounded.
	Workers     CanBlock
	NoWorkers   bool
	AsIsWorkers int
	// LoopsUsed, when not 0, is how many loops had callers, fewer than the
	// server's: WorkersCeiling counts only those.
	LoopsUsed int
	Conc      int // the callers
	// Little is throughput x mean latency / callers on a closed-loop row
	// (0 elsewhere); LittleOK when within littleTolerance of 1.
	Little   float64
	LittleOK bool
	// MeanLatency is a load request's mean latency.
	MeanLatency time.Duration
	// KitCores is what the server, the generator and the prober used;
	// OtherCores what the rest of the machine did, over the window; Cores
	// the machine's, MachineCores what it used, GeneratorCores the
	// generator's and the prober's, ServerCores the server's (its CPU per
	// request ServerCPUUs), not measured without its pid.
	KitCores, OtherCores        float64
	Cores, MachineCores         float64
	GeneratorCores, ServerCores float64
	ServerCPUUs                 float64
	ServerNotMeasured           bool
	Shared                      bool
	Flagged                     bool // generator-bound
}

// BoundCase is the rule that decided a bound.
type BoundCase int

// The rules, as BoundOf and asIsBound apply them, and a slip's window.
const (
	BoundCPUMachine    BoundCase = iota + 1 // the machine full, the server's own share not measured
	BoundGenerator                          // the generators use more than the server: not its figure
	BoundCPUKit                             // the kit's processes use the machine
	BoundWorkers                            // near workers / measured block
	BoundCallers                            // near callers / measured block (Little's law)
	BoundNone                               // no ceiling near
	BoundSlip                               // two calls in one window: no one ceiling
	BoundAsIsGenerator                      // as it is: the generators use more than the server
	BoundAsIsCPU                            // as it is: the machine full
	BoundAsIsNoCall                         // as it is: the call's own time not measured
	BoundAsIsWorkers                        // as it is: near the workers it behaves as
	BoundAsIsCallers                        // as it is: near callers / the call's time
	BoundAsIsNone                           // as it is: no ceiling near
)

// AsIs says whether the rule is one of a server measured as it is.
func (c BoundCase) AsIs() bool { return c >= BoundAsIsGenerator }

// NoneCause is what likely held a measurement no ceiling bounds.
type NoneCause int

// The causes, in the order they are judged.
const (
	CauseShared     NoneCause = iota + 1 // other processes used the machine
	CauseTurnaround                      // the callers spent time between requests (Little's law under 1)
	CauseOwnTime                         // a request took longer than the block: queueing, handing over
	CauseOwnCost                         // the client's turnaround or the server's own cost
)

// CanBlock is what can block for a step: its loops, slots or offload
// workers, or the database connections behind them when those are fewer.
type CanBlock struct {
	Kind    string // the server's kind
	Offload bool   // /offload: the pool it offloads to
	N       int    // the loops, slots or offload workers
	DBConns int    // its database connections when they bind, else 0
	// Dealt, for a loop server whose callers were dealt to fewer loops
	// than it has, is how many each had.
	Dealt []results.LoopCount
}

// WorkersOf is how many workers can make the step's blocking call at
// once: the server's loops or slots, or for /offload the pool it offloads
// to (the kit's: offloadWorkers; a --target's: its offload=, 0 unknown).
// Behind a database pool (--block-mode postgres) it is the pool's
// connections when they are fewer: a pool of 200 slots in front of 10
// connections is a pool of 10 for the blocking call.
func WorkersOf(s results.Step, offloadWorkers int) int {
	if DBBinds(s, offloadWorkers) {
		return s.Server.DBConns
	}
	return workersAhead(s, offloadWorkers)
}

// workersAhead are the workers in front of the database: the loops or
// slots, or /offload's pool.
func workersAhead(s results.Step, offloadWorkers int) int {
	switch {
	case s.Endpoint != "/offload":
		return s.Server.Workers
	case s.Server.External:
		return s.Server.OffloadWorkers
	}
	return offloadWorkers
}

// DBBinds says whether the step's database connections are fewer than the
// workers in front of them (or those are unbounded: a goroutine per
// request), so that they bound the blocking call.
func DBBinds(s results.Step, offloadWorkers int) bool {
	w := workersAhead(s, offloadWorkers)
	return s.Server.DBConns > 0 && (s.Server.DBConns < w || (w == 0 && s.Server.Kind == "goroutine"))
}

// StepCeiling is the workers a step's blocking call can run on and their
// ceiling, workers / the asked block, in req/s (0 when not known).
func StepCeiling(s results.Step, offloadWorkers int) (int, float64) {
	w := WorkersOf(s, offloadWorkers)
	return w, CeilingPerS(w, s.Block.D())
}

// useOf sets b's use of the machine, from the measurement's cost c on a
// machine of cores: the kit's cores and the others', whether the machine
// was shared, and Little's law on a closed load.
func (b *Bound) useOf(s results.Step, lr *results.Result, c *results.ServerCost, cores float64) {
	b.KitCores = c.ServerCores + c.GeneratorCores + c.ProberCores + c.DBCores
	b.OtherCores = math.Max(0, c.MachineCores-b.KitCores)
	b.Cores, b.MachineCores, b.GeneratorCores, b.ServerCores = cores, c.MachineCores, c.GeneratorCores+c.ProberCores, c.ServerCores
	b.ServerCPUUs, b.ServerNotMeasured = c.ServerCPUUsPerRequest, c.ServerNotMeasured
	b.MeanLatency = time.Duration(lr.Load.Latency.MeanUs * 1e3)
	// Without the server's own CPU, the others include the server: a busy
	// machine is not evidence of another tenant.
	b.Shared = cores > 0 && b.OtherCores >= SharedAbove*cores && !c.ServerNotMeasured
	if l := lr.Load; lr.Mode == "closed" && s.Conc > 0 && l.Latency.Count > 0 {
		b.Little = l.InFlight() / float64(s.Conc)
		b.LittleOK = math.Abs(b.Little-1) <= littleTolerance
	}
}

// BoundOf decides what bounds a measurement from its load result and the
// server's cost; offloadWorkers is the pool /offload blocks on.
func BoundOf(s results.Step, lr *results.Result, c *results.ServerCost, offloadWorkers int) *Bound {
	if lr == nil || lr.Load == nil || c == nil {
		return nil
	}
	l := lr.Load
	nominal := s.Block.D()
	b := &Bound{MeasuredBlock: nominal, Asked: nominal, Conc: s.Conc}
	if l.BlockedSamples > 0 && l.MeanBlockedNs > 0 {
		b.MeasuredBlock, b.BlockMeasured, b.BlockedNs = time.Duration(l.MeanBlockedNs), true, l.MeanBlockedNs
	}
	workers := b.workersOf(s, l, offloadWorkers)
	b.WorkersCeiling = CeilingPerS(workers, b.MeasuredBlock)
	b.CallersCeiling = CeilingPerS(s.Conc, b.MeasuredBlock)
	cores := float64(c.Cores)
	if cores <= 0 {
		cores = float64(lr.Env.NumCPU)
	}
	b.useOf(s, lr, c, cores)
	b.Lowest = b.WorkersCeiling
	if b.CallersCeiling < b.Lowest || b.Lowest == 0 {
		b.Lowest, b.LowestCallers = b.CallersCeiling, true
	}
	switch {
	case c.ServerNotMeasured && cores > 0 && c.MachineCores >= kitSaturation*cores:
		b.Kind, b.Case = "cpu", BoundCPUMachine
	case cores > 0 && b.KitCores >= kitSaturation*cores && c.GeneratorCores+c.ProberCores >= c.ServerCores:
		b.Kind, b.Case, b.Flagged = "generator", BoundGenerator, true
	case cores > 0 && b.KitCores >= kitSaturation*cores:
		b.Kind, b.Case = "cpu", BoundCPUKit
	case b.Lowest > 0 && l.ThroughputPerS >= nearCeiling*b.Lowest && !b.LowestCallers:
		b.Kind, b.Case, b.Share = "workers", BoundWorkers, l.ThroughputPerS/b.WorkersCeiling
	case b.Lowest > 0 && l.ThroughputPerS >= nearCeiling*b.Lowest:
		b.Kind, b.Case, b.Share = "callers", BoundCallers, l.ThroughputPerS/b.CallersCeiling
	default:
		b.Kind, b.Case = "none", BoundNone
		if b.Lowest > 0 {
			b.Share = l.ThroughputPerS / b.Lowest
		}
		b.Cause = b.noneCause()
	}
	return b
}

// workersOf is how many can block for s, with what they are (b.Workers):
// its loops, slots or offload workers; a loop server's loops no caller
// was dealt to do not count.
func (b *Bound) workersOf(s results.Step, l *results.Load, offloadWorkers int) int {
	workers := s.Server.Workers
	if s.Endpoint == "/offload" {
		workers = workersAhead(s, offloadWorkers)
	}
	b.Workers = CanBlock{Kind: s.Server.Kind, Offload: s.Endpoint == "/offload", N: workers}
	if DBBinds(s, offloadWorkers) {
		b.Workers.DBConns = s.Server.DBConns
		b.NominalCeiling = CeilingPerS(s.Server.DBConns, s.Block.D())
		return s.Server.DBConns
	}
	// A goroutine server has none to know: its classification says what
	// holds it.
	b.NoWorkers = workers == 0 && s.Server.Kind != "goroutine"
	b.NominalCeiling = CeilingPerS(workers, s.Block.D())
	// A blocking call holds the loop it runs on: a loop no caller was dealt
	// to adds nothing, so the loops that can block are those with callers.
	if s.Server.Kind == "loop" && s.Endpoint != "/offload" && len(l.ConnsPerLoop) > 0 && len(l.ConnsPerLoop) < workers {
		b.Workers.Dealt = l.ConnsPerLoop
		b.LoopsUsed = len(l.ConnsPerLoop)
		workers = b.LoopsUsed
	}
	return workers
}

// noneCause is what likely held a measurement that no ceiling bounds.
func (b *Bound) noneCause() NoneCause {
	switch {
	case b.Shared:
		return CauseShared
	case b.Little > 0 && !b.LittleOK && b.Little < 1:
		return CauseTurnaround
	case b.MeanLatency > b.MeasuredBlock:
		return CauseOwnTime
	}
	return CauseOwnCost
}

// Bystander is what the /fast interval prober saw during a load, over the
// load's measured window.
type Bystander struct {
	// From each probe's due time, censored probes counted at their wait
	// when the window ended (a lower bound), in us.
	P50, P95, P99 Figure
	// From each answered probe's send, in us: the figure a prober that does
	// not correct for coordinated omission reports.
	SendP50, SendP95, SendP99       Figure
	Due, Answered, Failed, Censored Figure
	AnswersPerS, DuePerS            Figure
	// Saturated when any repetition was (see probeSaturated), in
	// SaturatedReps of its repetitions (one per Due).
	Saturated     bool
	SaturatedReps int
	Timeline      []results.ProbePoint // the first repetition's, every probe
	// Misaligned, when not 0, is how far from the load's the prober's
	// clock started in the first repetition where that was more than
	// MaxWindowOffset.
	Misaligned time.Duration
	WindowNs   int64
	Interval   time.Duration
}

// probeSaturated says whether a prober's answers fell behind its due probes:
// fewer than Near of the probes due in the window were answered or failed,
// so the probes queue behind each other for as long as the run lasts.
func probeSaturated(p *results.Probe) bool {
	return p != nil && p.Due > 0 && float64(p.Completed+p.Failed) < nearCeiling*float64(p.Due)
}

func bystanderOf(probes []*results.Result) Bystander {
	var b Bystander
	for _, r := range probes {
		p := r.Probe
		if p == nil {
			continue
		}
		if b.Timeline == nil {
			b.Timeline, b.WindowNs, b.Interval = p.Timeline, p.WindowNs, time.Duration(r.Params.IntervalNs)
		}
		b.Due = append(b.Due, float64(p.Due))
		b.Answered = append(b.Answered, float64(p.Completed))
		b.Failed = append(b.Failed, float64(p.Failed))
		b.Censored = append(b.Censored, float64(p.Censored))
		if p.WindowNs > 0 {
			w := time.Duration(p.WindowNs).Seconds()
			b.AnswersPerS = append(b.AnswersPerS, float64(p.Completed)/w)
			b.DuePerS = append(b.DuePerS, float64(p.Due)/w)
		}
		if probeSaturated(p) {
			b.Saturated = true
			b.SaturatedReps++
		}
		if p.Corrected.Count > 0 {
			b.P50 = append(b.P50, p.Corrected.P50Us)
			b.P95 = append(b.P95, p.Corrected.P95Us)
			b.P99 = append(b.P99, p.Corrected.P99Us)
		}
		if p.Uncorrected.Count > 0 {
			b.SendP50 = append(b.SendP50, p.Uncorrected.P50Us)
			b.SendP95 = append(b.SendP95, p.Uncorrected.P95Us)
			b.SendP99 = append(b.SendP99, p.Uncorrected.P99Us)
		}
	}
	return b
}

// LoadRow is a step that loads an endpoint (sweep, offload, cliff), over
// its repetitions.
type LoadRow struct {
	*Group
	Throughput    Figure // req/s
	MeasuredBlock Figure // ns, where the server said
	// Bounds has one entry per repetition with a cost.
	Bounds []*Bound
	Fast   Bystander
}

// SweepRow is a sweep step, with the nominal ceiling of its server.
type SweepRow struct {
	LoadRow
	NominalCeiling float64
}

// CeilingShare is each rep's throughput as a share of the nominal ceiling
// (nil when the ceiling is not known): the one place it is computed.
func (r SweepRow) CeilingShare() Figure {
	if r.NominalCeiling <= 0 {
		return nil
	}
	var out Figure
	for _, t := range r.Throughput {
		out = append(out, shareOf(t, r.NominalCeiling))
	}
	return out
}

// shareOf is perS as a share of ceiling (0 when either is not known).
func shareOf(perS, ceiling float64) float64 {
	if perS <= 0 || ceiling <= 0 {
		return 0
	}
	return perS / ceiling
}

// Bound is the first repetition's bound (nil without one).
func (r LoadRow) Bound() *Bound {
	if len(r.Bounds) == 0 {
		return nil
	}
	return r.Bounds[0]
}

// BoundShare is each repetition's share of the ceiling that binds it, in %.
func (r LoadRow) BoundShare() Figure {
	var f Figure
	for _, b := range r.Bounds {
		if b.Share > 0 && b.Kind != "none" {
			f = append(f, 100*b.Share)
		}
	}
	return f
}

// Kind is the first repetition's bound kind, "-" without one.
func (r LoadRow) Kind() string {
	if b := r.Bound(); b != nil {
		return b.Kind
	}
	return "-"
}

func loadRow(g *Group, p Params) LoadRow {
	r := LoadRow{Group: g, Fast: bystanderOf(g.Probe)}
	r.Throughput = vals(g.Load, func(x *results.Result) (float64, bool) {
		if x.Load == nil {
			return 0, false
		}
		return x.Load.ThroughputPerS, true
	})
	r.MeasuredBlock = vals(g.Load, func(x *results.Result) (float64, bool) {
		if x.Load == nil || x.Load.BlockedSamples == 0 {
			return 0, false
		}
		return x.Load.MeanBlockedNs, true
	})
	for _, rep := range g.Reps {
		if b := BoundOf(rep.M.Step, rep.Load, rep.Cost, p.OffloadWorkers); b != nil {
			r.Bounds = append(r.Bounds, b)
		}
		if rep.Load != nil && rep.Probe != nil && r.Fast.Misaligned == 0 {
			if d := time.Duration(rep.Probe.StartUnixNs - rep.Load.StartUnixNs); d > MaxWindowOffset || d < -MaxWindowOffset {
				r.Fast.Misaligned = d
			}
		}
	}
	return r
}

// MaxWindowOffset is how far apart the load's and the bystander's clocks
// may start (both are told when, with --start-at) before a row says so.
const MaxWindowOffset = 10 * time.Millisecond

// ProcNotRead ends a measurement's note that one of its tools started its
// clock late (past MaxWindowOffset), so /proc was not read over its window.
const ProcNotRead = "; /proc not read for it"

// CostRow is one measurement's cost and bound.
type CostRow struct {
	ID, Server string
	Repeat     int
	Cost       *results.ServerCost
	Bound      *Bound
}

// CostOf is a measurement's per-request cost: derived from what its
// processes and the machine used (Use, a v6 run) over the load's figures,
// or as a v3-v5 run stored it. Nil without a load or a reading of /proc.
// Without the server's process (a --target without pid=) its own figures
// are left out and the cost says so.
func CostOf(m results.Measurement, lr *results.Result) *results.ServerCost {
	if m.Use == nil {
		return m.Cost
	}
	if lr == nil || lr.Load == nil || m.Use.WindowNs <= 0 {
		return nil
	}
	u, l := m.Use, lr.Load
	reqs := l.ThroughputPerS * time.Duration(u.WindowNs).Seconds()
	coresOf := func(p *results.ProcUse) float64 {
		if p == nil {
			return 0
		}
		return u.InWindow(p.CPUNs)
	}
	c := &results.ServerCost{Requests: int64(reqs), MeasuredBlockNs: l.MeanBlockedNs, ThroughputPerS: l.ThroughputPerS,
		ServerCores: coresOf(u.Server), GeneratorCores: coresOf(u.Generator), ProberCores: coresOf(u.Prober) + coresOf(u.Conns),
		GeneratorCPUUsPerReq: lr.Generator.CPUUsPerRequest, MachineBusy: u.MachineBusy, MachineCores: u.MachineBusy * float64(u.Cores), Cores: u.Cores}
	if u.DB != nil {
		c.DBCores = coresOf(u.DB)
		c.DBCPUUsPerRequest = results.UsPerRequest(u.DB.CPUNs, reqs)
	}
	if u.Server == nil {
		c.ServerNotMeasured = true
		return c
	}
	c.Threads, c.PeakRSSBytes = u.Server.Threads, u.Server.PeakRSSBytes
	c.ServerCPUUsPerRequest = results.UsPerRequest(u.Server.CPUNs, reqs)
	if reqs > 0 {
		c.CtxSwitchesPerRequest = float64(u.Server.VolCtxSw+u.Server.InvolCtxSw) / reqs
	}
	return c
}

func costRows(gs []*Group, p Params, asIs []AsIs) []CostRow {
	var out []CostRow
	for _, g := range gs {
		if g.Step.Phase == "stall" {
			continue // its load is the blockers: what the server did is not theirs per request
		}
		var a *AsIs
		for i := range asIs {
			if asIs[i].Server == g.Step.Server.Name && g.Step.Server.AsIs() {
				a = &asIs[i]
			}
		}
		for _, rep := range g.Reps {
			if rep.Cost == nil {
				continue
			}
			b := BoundOf(rep.M.Step, rep.Load, rep.Cost, p.OffloadWorkers)
			if a != nil {
				b = asIsBound(rep.M.Step, rep.Load, rep.Cost, a)
			}
			if g.Step.Phase == "slip" {
				// Two calls in one window: no one ceiling bounds it.
				b = &Bound{Case: BoundSlip, Asked: g.Step.Block.D(), SlipBlock: g.Step.SlipBlock.D()}
			}
			out = append(out, CostRow{ID: rep.M.ID, Server: rep.M.Server.Name, Repeat: rep.M.Repeat, Cost: rep.Cost, Bound: b})
		}
	}
	return out
}
