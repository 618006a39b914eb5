package findings

import (
	"time"
)

// The published Netty-vs-Tomcat experiment this kit reproduces: Netty with
// 4 event loops, Tomcat with 200 threads, on its authors' machine. Its
// figures, as published, each with the conditions it states; a run's
// figure is set beside one only where the run measured the same thing
// (the server's kind and workers, the block), and every condition that
// differs is said.
const (
	PublishedLoops   = 4
	PublishedThreads = 200
	// PublishedMachine is all the publication says of where it ran.
	PublishedMachine = "the authors' machine (its cores not stated)"
)

// PublishedRow is one published figure beside this run's: which figure
// of the publication, and the run's figure of the same thing, which
// internal/prose says.
type PublishedRow struct {
	What   string // the figure: "/slow, 5ms block, on 4 event loops"
	Server string // this run's server
	// Published is the figure as the publication states it ("549 req/s");
	// PubPerS and PubCeiling its throughput and its own ceiling, req/s (0:
	// not a throughput, or none); PubCallers its callers (0: not stated).
	Published           string
	PubPerS, PubCeiling float64
	PubCallers          int
	// This is which figure of the run's it is; Conc its callers (0: not a
	// load); DBPool the run's database connections (0: Thread.sleep, as
	// published).
	This   ThisFigure
	Conc   int
	DBPool int
	// The run's figure, by This: PerS and Ceiling (a throughput and its
	// ceiling, 0 when not known), Fast and Saturated (a bystander's
	// percentile, us), Stalled of Conns, Lo-Hi a range of stalled waits
	// with Others the others' (us, when OthersKnown), Span a trace span;
	// NotOK the measurement not measured or not read.
	PerS, Ceiling  float64
	Fast           float64
	Saturated      bool
	Stalled, Conns float64
	Lo, Hi, Others float64
	OthersKnown    bool
	Span           Span
	NotOK          *Group
}

// ThisFigure is which figure of the run's a published row holds.
type ThisFigure int

// The run's figures set beside the publication's.
const (
	ThisNotOK   ThisFigure = iota + 1 // not measured, or not read
	ThisPerS                          // a throughput
	ThisFast                          // a bystander's percentile
	ThisStalled                       // stalled of the connections
	ThisWaits                         // the range of stalled waits
	ThisSpan                          // a trace span's p50 to p99
)

// published is one figure of the publication and how this run matches it.
type published struct {
	what    string
	kind    string        // loop or pool
	block   time.Duration // the blocking call it was measured with
	callers int           // 0: not stated
	value   string
	ceiling float64 // its own ceiling, req/s; 0 when it has none
	perS    float64 // the figure in req/s when it is a throughput
	phase   string
	conc    int // the run's row at this many callers (0: the highest)
	k       int // stall: loops blocked
	variant string
}

// The rows the headline sets beside its figures.
const (
	PublishedSweep     = "/slow throughput, 5ms block"
	PublishedSweepFast = "/fast p50 beside /slow, 5ms block"
	PublishedOffload   = "/offload throughput, 5ms block (the fix)"
)

var publishedFigures = []published{
	{what: PublishedSweep, kind: "loop", block: 5 * time.Millisecond, value: "549 req/s", perS: 549, ceiling: 800, phase: "sweep"},
	{what: PublishedSweep, kind: "pool", block: 5 * time.Millisecond, value: "17,189 req/s", perS: 17189, ceiling: 40000, phase: "sweep"},
	{what: PublishedSweepFast, kind: "loop", block: 5 * time.Millisecond, value: "217 ms", phase: "sweep-fast"},
	{what: PublishedSweepFast, kind: "pool", block: 5 * time.Millisecond, value: "0 ms", phase: "sweep-fast"},
	{what: "stalled with 1 of 4 loops blocked", kind: "loop", value: "3 of 12", phase: "stall", k: 1},
	{what: "stalled with 2 of 4 loops blocked", kind: "loop", value: "6 of 12", phase: "stall", k: 2},
	{what: "stalled with 3 of 4 loops blocked", kind: "loop", value: "9 of 12", phase: "stall", k: 3},
	{what: "stalled with 4 of 4 loops blocked", kind: "loop", value: "12 of 12", phase: "stall", k: 4},
	{what: "a stalled connection's wait, each request from its send", kind: "loop", value: "150-225 ms (others: 7 ms)", phase: "stall-wait"},
	{what: PublishedOffload, kind: "loop", block: 5 * time.Millisecond, callers: 128, value: "18,311 req/s", perS: 18311, phase: "offload", variant: "offloaded"},
	{what: "/fast p50 beside /offload, 5ms block", kind: "loop", block: 5 * time.Millisecond, callers: 128, value: "0 ms", phase: "offload-fast", variant: "offloaded"},
	{what: "/slow throughput, 100ms block", kind: "loop", block: 100 * time.Millisecond, value: "37 req/s", perS: 37, ceiling: 40, phase: "trace"},
	{what: "/slow throughput at 128 callers, 100ms block", kind: "pool", block: 100 * time.Millisecond, callers: 128, value: "1,192 req/s", perS: 1192, ceiling: 2000, phase: "cliff", conc: 128},
	{what: "/slow throughput at 200 callers, 100ms block", kind: "pool", block: 100 * time.Millisecond, callers: 200, value: "1,859 req/s", perS: 1859, ceiling: 2000, phase: "cliff", conc: 200},
	{what: "/slow throughput at 300 callers, 100ms block", kind: "pool", block: 100 * time.Millisecond, callers: 300, value: "1,880 req/s", perS: 1880, ceiling: 2000, phase: "cliff", conc: 300},
	{what: "/fast p95 at 128 callers, 100ms block", kind: "pool", block: 100 * time.Millisecond, callers: 128, value: "1 ms", phase: "cliff-fast", conc: 128},
	{what: "/fast p95 at 200 callers, 100ms block", kind: "pool", block: 100 * time.Millisecond, callers: 200, value: "45 ms", phase: "cliff-fast", conc: 200},
	{what: "/fast p95 at 300 callers, 100ms block", kind: "pool", block: 100 * time.Millisecond, callers: 300, value: "57 ms", phase: "cliff-fast", conc: 300},
	{what: "/async in all while every loop is blocked (range)", kind: "loop", value: "252-306 ms", phase: "trace-total"},
	{what: "/async before its handler ran, every loop blocked (range)", kind: "loop", value: "139-200 ms", phase: "trace-accepted"},
}

// Published sets the run's figures beside the published experiment's,
// where the run measured the same kind of server with the same workers
// (4 loops, 200 threads) and the same block.
func (f *Findings) Published() []PublishedRow {
	var out []PublishedRow
	for _, p := range publishedFigures {
		out = append(out, f.matches(p)...)
	}
	return out
}

// workersMatch: the run's server has the publication's workers.
func workersMatch(kind string, workers int) bool {
	return (kind == "loop" && workers == PublishedLoops) || (kind == "pool" && workers == PublishedThreads)
}

// matcher finds the run's rows for one published figure.
type matcher struct {
	f       *Findings
	p       published
	maxConc int // the run's most callers
	out     []PublishedRow
}

func (f *Findings) matches(p published) []PublishedRow {
	m := &matcher{f: f, p: p}
	for _, c := range f.Params.Conc {
		m.maxConc = max(m.maxConc, c)
	}
	switch p.phase {
	case "sweep", "sweep-fast":
		m.sweep()
	case "stall":
		m.stall()
	case "stall-wait":
		m.stallWait()
	case "offload", "offload-fast":
		m.offload()
	case "cliff", "cliff-fast":
		m.cliff()
	case "trace", "trace-total", "trace-accepted":
		m.trace()
	}
	return m.out
}

// row adds the run's figure r for server (at conc callers; 0: not a
// load).
func (m *matcher) row(server string, conc int, r PublishedRow) {
	p := m.p
	r.What, r.Server, r.Published, r.PubPerS, r.PubCeiling, r.PubCallers = p.what, server, p.value, p.perS, p.ceiling, p.callers
	r.Conc, r.DBPool = conc, m.f.Params.DBPool
	m.out = append(m.out, r)
}

// notOK is a row of a measurement not measured or not read.
func notOK(g *Group) PublishedRow { return PublishedRow{This: ThisNotOK, NotOK: g} }

// perS is a row of a throughput against its ceiling (0: not known).
func perS(v, ceiling float64) PublishedRow {
	return PublishedRow{This: ThisPerS, PerS: v, Ceiling: ceiling}
}

// fast is a row of a bystander's percentile.
func fast(r LoadRow, v Figure) PublishedRow {
	return PublishedRow{This: ThisFast, Fast: v.Median(), Saturated: r.Fast.Saturated}
}

// matchServer: s is the publication's kind of server, with its workers
// and its block.
func (m *matcher) matchServer(s stepServer) bool {
	return s.kind == m.p.kind && workersMatch(s.kind, s.workers) && (m.p.block == 0 || s.block == m.p.block)
}

func (m *matcher) sweep() {
	f := m.f
	for _, r := range f.Sweep {
		if r.Step.Conc != m.maxConc || r.Step.Endpoint != "/slow" || !m.matchServer(serverOf(r.Group)) {
			continue
		}
		if !r.OK() {
			m.row(r.Step.Server.Name, r.Step.Conc, notOK(r.Group))
			continue
		}
		if m.p.phase == "sweep" {
			m.row(r.Step.Server.Name, r.Step.Conc, perS(r.Throughput.Median(), r.NominalCeiling))
		} else if r.Fast.P50.OK() {
			m.row(r.Step.Server.Name, r.Step.Conc, fast(r.LoadRow, r.Fast.P50))
		}
	}
}

func (m *matcher) stall() {
	f := m.f
	for _, r := range f.Stall {
		s := serverOf(r.Group)
		if r.Step.K != m.p.k || s.kind != "loop" || s.workers != PublishedLoops {
			continue
		}
		if !r.OK() {
			m.row(r.Step.Server.Name, 0, notOK(r.Group))
			continue
		}
		if !r.Stalled.OK() || r.Conns.Median() != 3*PublishedLoops {
			continue
		}
		m.row(r.Step.Server.Name, 0, PublishedRow{This: ThisStalled, Stalled: r.Stalled.Median(), Conns: r.Conns.Median()})
	}
}

// stallWait: over k = 1..loops, per server, the range of the stalled
// connections' p50 from send, beside the others' at k = 0.
func (m *matcher) stallWait() {
	f := m.f
	type waits struct {
		stalled Figure
		others  float64
		known   bool // a k = 0 step gave the others' wait (a stage run has none)
	}
	byServer := map[string]*waits{}
	var order []string
	for _, r := range f.Stall {
		s := serverOf(r.Group)
		if s.kind != "loop" || s.workers != PublishedLoops {
			continue
		}
		w := byServer[r.Step.Server.Name]
		if w == nil {
			w = &waits{}
			byServer[r.Step.Server.Name] = w
			order = append(order, r.Step.Server.Name)
		}
		if r.StalledSendP50.OK() {
			w.stalled = append(w.stalled, r.StalledSendP50.Median())
		}
		if r.Step.K == 0 && r.OthersP50.OK() {
			w.others, w.known = r.OthersP50.Median(), true
		}
	}
	for _, name := range order {
		w := byServer[name]
		if !w.stalled.OK() {
			continue
		}
		lo, hi := w.stalled.Spread()
		m.row(name, 0, PublishedRow{This: ThisWaits, Lo: lo, Hi: hi, Others: w.others, OthersKnown: w.known})
	}
}

func (m *matcher) offload() {
	f := m.f
	for _, r := range f.Offload {
		if r.Step.Variant != m.p.variant || !m.matchServer(serverOf(r.Group)) {
			continue
		}
		if !r.OK() {
			m.row(r.Step.Server.Name, r.Step.Conc, notOK(r.Group))
			continue
		}
		if m.p.phase == "offload" {
			var ceiling float64
			if b := r.Bound(); b != nil {
				ceiling = b.NominalCeiling
			}
			m.row(r.Step.Server.Name, r.Step.Conc, perS(r.Throughput.Median(), ceiling))
		} else if r.Fast.P50.OK() {
			m.row(r.Step.Server.Name, r.Step.Conc, fast(r, r.Fast.P50))
		}
	}
}

func (m *matcher) cliff() {
	f := m.f
	for _, r := range f.Cliff {
		if r.Step.Conc != m.p.conc || !m.matchServer(serverOf(r.Group)) {
			continue
		}
		if !r.OK() {
			m.row(r.Step.Server.Name, r.Step.Conc, notOK(r.Group))
			continue
		}
		if m.p.phase == "cliff" {
			m.row(r.Step.Server.Name, r.Step.Conc, perS(r.Throughput.Median(), CeilingPerS(r.Step.Server.Workers, r.Step.Block.D())))
		} else if r.Fast.P95.OK() {
			m.row(r.Step.Server.Name, r.Step.Conc, fast(r, r.Fast.P95))
		}
	}
}

func (m *matcher) trace() {
	f := m.f
	for _, r := range f.Trace {
		if !m.matchServer(serverOf(r.Group)) {
			continue
		}
		switch m.p.phase {
		case "trace":
			var tput Figure
			for _, l := range r.Load {
				if l.Load != nil {
					tput = append(tput, l.Load.ThroughputPerS)
				}
			}
			if tput.OK() {
				m.row(r.Step.Server.Name, r.Step.Conc, perS(tput.Median(), CeilingPerS(r.Step.Server.Workers, r.Step.Block.D())))
			}
		case "trace-total":
			if r.Total.N.OK() {
				m.row(r.Step.Server.Name, r.Step.Conc, PublishedRow{This: ThisSpan, Span: r.Total})
			}
		case "trace-accepted":
			if r.Accepted.N.OK() {
				m.row(r.Step.Server.Name, r.Step.Conc, PublishedRow{This: ThisSpan, Span: r.Accepted})
			}
		}
	}
}

// stepServer is what a published figure is matched on.
type stepServer struct {
	kind    string
	workers int
	block   time.Duration
}

func serverOf(g *Group) stepServer {
	return stepServer{kind: g.Step.Server.Kind, workers: g.Step.Server.Workers, block: g.Step.Block.D()}
}
