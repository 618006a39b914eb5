package findings

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/words"
)

// nearCeiling is the share of a ceiling at which it is taken to bind.
const nearCeiling = 0.9

// kitSaturation is the machine's saturation: the kit's own processes
// using this share of its cores make a row CPU-bound.
const kitSaturation = 0.9

// sharedAbove is the share of the machine other processes may use before a
// row is flagged as measured on a shared machine.
const sharedAbove = 0.1

// littleTolerance is how far throughput x mean latency / callers may be
// from 1 on a closed-loop row.
const littleTolerance = 0.01

// blockTolerance is how far a server's measured block (X-Blocked-Ns) may
// be from the block the run asked it for before its row says so: a server
// that ignores ?block= or blocks far longer is not measured on the run's
// call.
const blockTolerance = 0.10

// blockOff says how far measured (ns, the server's X-Blocked-Ns) is from
// the asked block when it is more than blockTolerance off, else "".
func blockOff(asked time.Duration, measuredNs float64) string {
	if asked <= 0 || measuredNs <= 0 {
		return ""
	}
	r := measuredNs/float64(asked) - 1
	if math.Abs(r) <= blockTolerance {
		return ""
	}
	return fmt.Sprintf("the server blocked %s where %s was asked (%+.0f%%)", words.Round(time.Duration(measuredNs)), asked, 100*r)
}

// Bound says what limits one measurement's throughput, decided from the
// measured ceilings and the measured use of the machine.
type Bound struct {
	// Kind: workers (workers / measured block), callers (callers / measured
	// block, Little's law), cpu (the kit's processes use the machine),
	// generator (the load generator uses more of it than the server: not
	// the server's figure), none (no ceiling near).
	Kind           string
	NominalCeiling float64 // workers / requested block, req/s
	WorkersCeiling float64 // workers / measured block
	CallersCeiling float64 // callers / measured block
	MeasuredBlock  time.Duration
	// BlockMeasured is false when the server did not say how long it
	// blocked (no X-Blocked-Ns): the ceilings then use the requested block.
	BlockMeasured bool
	Share         float64 // throughput / the binding ceiling (the lowest for none)
	// LoopsUsed, when not 0, is how many loops had callers, fewer than the
	// server's: WorkersCeiling counts only those.
	LoopsUsed int
	// Little is throughput x mean latency / callers on a closed-loop row
	// (0 elsewhere); LittleOK when within littleTolerance of 1.
	Little   float64
	LittleOK bool
	// KitCores is what the server, the generator and the prober used;
	// OtherCores what the rest of the machine did, over the window.
	KitCores, OtherCores float64
	Shared               bool
	Flagged              bool // generator-bound
	Text                 string
	Notes                []string
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

// StepCeilingText is a step's ceiling in words, as the pages label it:
// "4 loops / 5ms = 800 req/s", or "" when its workers are not known.
func StepCeilingText(s results.Step, offloadWorkers int) string {
	w, c := StepCeiling(s, offloadWorkers)
	return ServerSummary{Kind: s.Server.Kind, Workers: s.Server.Workers, SweepWorkers: w, DBConns: s.Server.DBConns, DBBound: DBBinds(s, offloadWorkers),
		Block: s.Block.D(), NominalCeiling: c}.CeilingText()
}

// useOf sets b's use of the machine, from the measurement's cost c on a
// machine of cores: the kit's cores and the others', whether the machine
// was shared, and Little's law on a closed load.
func (b *Bound) useOf(s results.Step, lr *results.Result, c *results.ServerCost, cores float64) {
	b.KitCores = c.ServerCores + c.GeneratorCores + c.ProberCores + c.DBCores
	b.OtherCores = math.Max(0, c.MachineCores-b.KitCores)
	// Without the server's own CPU, the others include the server: a busy
	// machine is not evidence of another tenant.
	b.Shared = cores > 0 && b.OtherCores >= sharedAbove*cores && !c.ServerNotMeasured
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
	b := &Bound{MeasuredBlock: nominal}
	if l.BlockedSamples > 0 && l.MeanBlockedNs > 0 {
		b.MeasuredBlock, b.BlockMeasured = time.Duration(l.MeanBlockedNs), true
	}
	workers, what := b.workersOf(s, l, offloadWorkers)
	b.WorkersCeiling = CeilingPerS(workers, b.MeasuredBlock)
	b.CallersCeiling = CeilingPerS(s.Conc, b.MeasuredBlock)
	blockWord := "measured block"
	if !b.BlockMeasured {
		blockWord = "requested block (the server did not say how long it blocked)"
	}
	ms := b.MeasuredBlock.Round(10 * time.Microsecond)
	cores := float64(c.Cores)
	if cores <= 0 {
		cores = float64(lr.Env.NumCPU)
	}
	b.useOf(s, lr, c, cores)
	lowest, lowName := b.WorkersCeiling, "workers"
	if b.CallersCeiling < lowest || lowest == 0 {
		lowest, lowName = b.CallersCeiling, "callers"
	}
	switch {
	case c.ServerNotMeasured && cores > 0 && c.MachineCores >= kitSaturation*cores:
		b.Kind = "cpu"
		b.Text = fmt.Sprintf("CPU: the machine uses %.2f of %.0f cores, the generators %.2f (the server's own share is not measured: no pid=)",
			c.MachineCores, cores, c.GeneratorCores+c.ProberCores)
	case cores > 0 && b.KitCores >= kitSaturation*cores && c.GeneratorCores+c.ProberCores >= c.ServerCores:
		b.Kind, b.Flagged = "generator", true
		b.Text = fmt.Sprintf("the load generator: the kit's processes use %.2f of %.0f cores, the generators %.2f against the server's %.2f; not the server's figure",
			b.KitCores, cores, c.GeneratorCores+c.ProberCores, c.ServerCores)
	case cores > 0 && b.KitCores >= kitSaturation*cores:
		b.Kind = "cpu"
		b.Text = fmt.Sprintf("CPU: the kit's processes use %.2f of %.0f cores, the server %.2f at %.1f us per request", b.KitCores, cores, c.ServerCores, c.ServerCPUUsPerRequest)
	case lowest > 0 && l.ThroughputPerS >= nearCeiling*lowest && lowName == "workers":
		b.Kind, b.Share = "workers", l.ThroughputPerS/b.WorkersCeiling
		b.Text = fmt.Sprintf("workers: %s / %s %s = %.0f req/s; at %.0f%% of it", what, ms, blockWord, b.WorkersCeiling, 100*b.Share)
	case lowest > 0 && l.ThroughputPerS >= nearCeiling*lowest:
		b.Kind, b.Share = "callers", l.ThroughputPerS/b.CallersCeiling
		b.Text = fmt.Sprintf("offered concurrency: %d callers / %s %s = %.0f req/s (Little's law); at %.0f%% of it", s.Conc, ms, blockWord, b.CallersCeiling, 100*b.Share)
	default:
		b.Kind = "none"
		if lowest > 0 {
			b.Share = l.ThroughputPerS / lowest
		}
		cause := b.noneCause(l, c, cores, ms)
		b.Text = fmt.Sprintf("no ceiling near: %.0f%% of the lowest (%s, %.0f req/s); likely %s", 100*b.Share, lowName, lowest, cause)
	}
	b.addNotes(nominal, l, cores)
	return b
}

// workersOf is what can block for s: its loops, slots or offload workers,
// in number and in words; a loop server's loops no caller was dealt to
// do not count.
func (b *Bound) workersOf(s results.Step, l *results.Load, offloadWorkers int) (int, string) {
	workers, what := s.Server.Workers, fmt.Sprintf("%d loops", s.Server.Workers)
	if workers == 1 {
		what = "1 loop"
	}
	if s.Server.Kind == "pool" {
		what = fmt.Sprintf("%d slots", workers)
	}
	if s.Endpoint == "/offload" {
		workers = workersAhead(s, offloadWorkers)
		what = fmt.Sprintf("%d offload workers", workers)
	}
	if DBBinds(s, offloadWorkers) {
		behind := what
		if s.Server.Kind == "goroutine" {
			behind = "a goroutine per request"
		}
		workers, what = s.Server.DBConns, fmt.Sprintf("its %d database connections (behind %s)", s.Server.DBConns, behind)
		b.NominalCeiling = CeilingPerS(workers, s.Block.D())
		return workers, what
	}
	if workers == 0 && s.Server.Kind != "goroutine" { // a goroutine server has none to know: its classification says what holds it
		b.Notes = append(b.Notes, "workers not known (a --target without loops=, workers= or offload=): no workers ceiling")
	}
	b.NominalCeiling = CeilingPerS(workers, s.Block.D())
	// A blocking call holds the loop it runs on: a loop no caller was dealt
	// to adds nothing, so the loops that can block are those with callers.
	if s.Server.Kind == "loop" && s.Endpoint != "/offload" && len(l.ConnsPerLoop) > 0 && len(l.ConnsPerLoop) < workers {
		var spread []string
		for _, c := range l.ConnsPerLoop {
			spread = append(spread, fmt.Sprintf("loop %d: %d", c.Loop, c.Count))
		}
		b.LoopsUsed = len(l.ConnsPerLoop)
		workers, what = b.LoopsUsed, fmt.Sprintf("the %d of %d loops the callers were dealt to (%s)", b.LoopsUsed, s.Server.Workers, strings.Join(spread, ", "))
	}
	return workers, what
}

// noneCause says what likely held a measurement that no ceiling bounds.
func (b *Bound) noneCause(l *results.Load, c *results.ServerCost, cores float64, ms time.Duration) string {
	mean := time.Duration(l.Latency.MeanUs * 1e3)
	cpu := fmt.Sprintf("%.1f us CPU per request", c.ServerCPUUsPerRequest)
	if c.ServerNotMeasured {
		cpu = "the server's CPU not measured: no pid="
	}
	switch {
	case b.Shared:
		return fmt.Sprintf("other processes using %.2f of the machine's %.0f cores", b.OtherCores, cores)
	case b.Little > 0 && !b.LittleOK && b.Little < 1:
		return fmt.Sprintf("the client's turnaround: the callers spent %.0f%% of the window between requests", 100*(1-b.Little))
	case mean > b.MeasuredBlock:
		return fmt.Sprintf("the server's own time: a request took %s on average against the %s block, the rest queueing and handing over (%s)",
			mean.Round(10*time.Microsecond), ms, cpu)
	default:
		return fmt.Sprintf("the client's turnaround or the server's own cost (%s)", cpu)
	}
}

// addNotes adds what a reader of the bound must know beside it.
func (b *Bound) addNotes(nominal time.Duration, l *results.Load, cores float64) {
	if off := blockOff(nominal, l.MeanBlockedNs); b.BlockMeasured && off != "" {
		b.Notes = append(b.Notes, off)
	}
	if b.Shared {
		b.Notes = append(b.Notes, fmt.Sprintf("machine shared: %.0f%% used by other processes", 100*b.OtherCores/cores))
	}
	if b.Little > 0 && !b.LittleOK {
		if b.Little < 1 {
			b.Notes = append(b.Notes, fmt.Sprintf("Little's law off by %.1f%%: throughput x mean latency / callers = %.3f, so the callers spent that share of the window between requests",
				100*(1-b.Little), b.Little))
		} else {
			b.Notes = append(b.Notes, fmt.Sprintf("Little's law off by %.1f%%: throughput x mean latency / callers = %.3f, more requests in flight than callers: the window's counts and latencies disagree",
				100*(b.Little-1), b.Little))
		}
	}
}

// Line is the bound's text with its notes, for a table cell.
func (b *Bound) Line() string {
	if b == nil {
		return "-"
	}
	s := b.Text
	for _, n := range b.Notes {
		s += "; " + n
	}
	return s
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
	// Saturated when any repetition was (see Saturated); SaturatedWhy says
	// so in words with the rates.
	Saturated    bool
	SaturatedWhy string
	Timeline     []results.ProbePoint // the first repetition's, every probe
	// Misaligned, when not empty, says that in some repetition the
	// prober's clock started more than MaxWindowOffset from the load's.
	Misaligned string
	WindowNs   int64
	Interval   time.Duration

	censoredAny                       bool
	repetitions, saturatedRepetitions int
}

// saturatedText is how a saturated bystander is reported in words.
const saturatedText = "the bystander's queue grows without bound: its latency is set by the run's length"

// probeSaturated says whether a prober's answers fell behind its due probes:
// fewer than Near of the probes due in the window were answered or failed,
// so the probes queue behind each other for as long as the run lasts.
func probeSaturated(p *results.Probe) bool {
	return p != nil && p.Due > 0 && float64(p.Completed+p.Failed) < nearCeiling*float64(p.Due)
}

// CensoredText says what the censored probes mean, or "" with none.
func (b Bystander) CensoredText() string {
	if !b.censoredAny {
		return ""
	}
	return fmt.Sprintf("%.0f of %.0f due probes were unanswered when the window ended and count at their wait so far: the percentiles from due are lower bounds",
		b.Censored.Median(), b.Due.Median())
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
		b.repetitions++
		b.Due = append(b.Due, float64(p.Due))
		b.Answered = append(b.Answered, float64(p.Completed))
		b.Failed = append(b.Failed, float64(p.Failed))
		b.Censored = append(b.Censored, float64(p.Censored))
		if p.Censored > 0 {
			b.censoredAny = true
		}
		if p.WindowNs > 0 {
			w := time.Duration(p.WindowNs).Seconds()
			b.AnswersPerS = append(b.AnswersPerS, float64(p.Completed)/w)
			b.DuePerS = append(b.DuePerS, float64(p.Due)/w)
		}
		if probeSaturated(p) {
			b.Saturated = true
			b.saturatedRepetitions++
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
	if b.Saturated {
		b.SaturatedWhy = fmt.Sprintf("%s (%.1f answers per second against %.1f probes due, in %d of %d repetitions)",
			saturatedText, b.AnswersPerS.Median(), b.DuePerS.Median(), b.saturatedRepetitions, b.repetitions)
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

// BlockedText is the row's measured block (the median of the servers'
// X-Blocked-Ns), with how far it is from the asked block when more than
// blockTolerance; "not said" when the server sent none.
func (r LoadRow) BlockedText() string {
	if !r.MeasuredBlock.OK() {
		return "not said"
	}
	m := r.MeasuredBlock.Median()
	s := words.Round(time.Duration(m)).String()
	asked := r.Step.Block.D()
	if blockOff(asked, m) != "" {
		s += fmt.Sprintf(" (%+.0f%% of the %s asked)", 100*(m/float64(asked)-1), asked)
	}
	return s
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
		if rep.Load != nil && rep.Probe != nil && r.Fast.Misaligned == "" {
			if d := time.Duration(rep.Probe.StartUnixNs - rep.Load.StartUnixNs); d > MaxWindowOffset || d < -MaxWindowOffset {
				r.Fast.Misaligned = fmt.Sprintf("the bystander's window began %s from the load's (one of them started late): its figures cover a slightly different stretch", d.Round(time.Millisecond))
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
				b = &Bound{Text: fmt.Sprintf("two calls, %s then %s: each side against its own ceiling in the slip's figures",
					g.Step.Block.D(), g.Step.SlipBlock.D())}
			}
			out = append(out, CostRow{ID: rep.M.ID, Server: rep.M.Server.Name, Repeat: rep.M.Repeat, Cost: rep.Cost, Bound: b})
		}
	}
	return out
}
