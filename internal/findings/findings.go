// Package findings reads a finished run directory (run.json and the results
// it lists) and computes, once, every figure the terminal tables and the
// report show: groups of repetitions with medians and spreads, ceilings and
// what bounds each row, Little's-law checks, the bystander's latency with
// its saturation, expected and observed stalls, trace spans, costs, and the
// run's parameters for the captions. The summary and the report only format
// what it returns. It reads files and runs nothing.
package findings

import (
	"cmp"
	"slices"
	"time"

	"github.com/bystander-kit/bystander/internal/outside"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/watch"
)

// Phases are the experiment's phases, in the order they run.
var Phases = []string{"sweep", "stall", "offload", "trace", "cliff", "slip"}

// Figure is one value per repetition that has it.
type Figure []float64

// OK says whether any repetition has the value.
func (f Figure) OK() bool { return len(f) > 0 }

// Median of the repetitions (0 for none): the kit quotes medians.
func (f Figure) Median() float64 { return results.Median(f) }

// Spread is the smallest and largest value.
func (f Figure) Spread() (lo, hi float64) {
	if len(f) == 0 {
		return 0, 0
	}
	return slices.Min(f), slices.Max(f)
}

// Params are the run's parameters, as every caption and heading states them.
type Params struct {
	// Block, StallBlock and SlipBlock (the slip phase's slowed call, 0:
	// not run) are run.json's, the one road to every figure.
	Block, StallBlock, SlipBlock results.Block
	Delay                        time.Duration
	ProbeInterval, StallInterval time.Duration
	Duration, Warmup             time.Duration
	BlockMode                    string
	// DBPool is each server's database connections (--block-mode
	// postgres; 0: no database), DB which database answered.
	DBPool                           int
	DB                               string
	SweepEndpoint                    string // /slow, or /offload
	Stage                            bool   // measured on stage (run.sh --stage)
	Loops, Slots, OffloadWorkers     int
	StallConns, TraceCallers, Repeat int
	TraceConns                       int
	Conc                             []int
}

// OnStage is what a run given on stage says of its figures, once, in the
// tables and on the page.
const OnStage = "Given on stage (--stage): the live page was served meanwhile; a browser showing it on this machine shares the CPU, which can lower figures not held at a ceiling (measured: within their run-to-run noise; docs/measurements.md)"

// CeilingPerS is workers / block in requests per second.
func CeilingPerS(workers int, block time.Duration) float64 {
	if block <= 0 {
		return 0
	}
	return float64(workers) / block.Seconds()
}

// Group is one step over its repetitions, with its results read back.
type Group struct {
	Step results.Step
	MS   []results.Measurement
	// Reps are the repetitions that succeeded, each with its results.
	Reps  []Rep
	Load  []*results.Result
	Probe []*results.Result
	Conns []*results.Result
	Trace []*results.Result
	// Miss is the first repetition that left no figures and says why
	// (nil: none did).
	Miss *Miss
}

// Miss is a repetition of a step that left no figures: one that did not
// succeed (M's Status and Reason, as run.json has them) or, with Unread,
// one whose file was not read.
type Miss struct {
	M      results.Measurement
	Unread *Unread
}

// missed keeps m as the group's first miss that says why (a measurement
// without a status or reason says nothing).
func (g *Group) missed(m results.Measurement, u *Unread) {
	if g.Miss == nil && (u != nil || m.Outcome() != "") {
		g.Miss = &Miss{M: m, Unread: u}
	}
}

// Rep is one successful repetition of a step and the results it left (nil
// where it left none).
type Rep struct {
	M                         results.Measurement
	Load, Probe, Conns, Trace *results.Result
	Lag                       *results.LagTrace
	// Threads is what the outside view saw of the server's threads.
	Threads *outside.Trace
	// Watch is what watching the server found (a watched step's).
	Watch *watch.File
	// Cost is the measurement's per-request cost (CostOf), nil without one.
	Cost *results.ServerCost
}

// OK reports whether any repetition left a result.
func (g *Group) OK() bool { return len(g.Load)+len(g.Probe)+len(g.Conns)+len(g.Trace) > 0 }

// PhaseStatus is how far a phase got: of its N measurements, OK left
// figures; Misses are the others, in the run's order.
type PhaseStatus struct {
	Phase  string
	N, OK  int
	Misses []Miss
}

// Findings is everything a run's tables and report show.
type Findings struct {
	Run    *results.Run
	Params Params
	Groups []*Group
	Phases []PhaseStatus

	Sweep   []SweepRow
	Stall   []StallRow
	Offload []LoadRow
	Trace   []TraceRow
	Cliff   []LoadRow
	Slip    []SlipRow
	// AsIs are the servers measured as they are (--load): their sweep,
	// kept out of Sweep (whose figures are the protocol's).
	AsIs []AsIs
	Cost []CostRow
	// LagRows are what the loop servers' own heartbeats and detectors said
	// over each measured window, where they streamed it.
	LagRows []LagRow
	// Servers are the servers measured, with their sweep's ceilings;
	// Claims the story's claims, each checked on the data.
	Servers []ServerSummary
	Claims  []Claim
	// Unread lists the measurements that succeeded but left a file the
	// kit would not or could not read (outside the run directory, not a
	// regular file, over its cap, malformed): none of that measurement's
	// figures is used, and every place that would show them says "not read".
	Unread []Unread
}

// NotRead is what a figure shows when its measurement's files were not
// read.
const NotRead = "not read"

// Unread is one measurement whose result file was not read, and why.
type Unread struct {
	ID     string `json:"id"`
	Repeat int    `json:"repeat"`
	// Field is the run.json field that names the file; File what it names.
	Field string `json:"field"`
	File  string `json:"file"`
	Why   string `json:"why"`
}

// Of returns the groups of a phase.
func (f *Findings) Of(phase string) []*Group {
	var out []*Group
	for _, g := range f.Groups {
		if g.Step.Phase == phase {
			out = append(out, g)
		}
	}
	return out
}

// Read reads a run directory and computes its findings.
func Read(dir string) (*Findings, error) {
	run, err := results.ReadRun(dir)
	if err != nil {
		return nil, err
	}
	return Compute(dir, run), nil
}

// Compute computes the findings of run, whose files are under dir.
func Compute(dir string, run *results.Run) *Findings {
	f := &Findings{Run: run, Params: paramsOf(run.Params)}
	f.Groups, f.Unread = groups(dir, run)
	for _, ph := range Phases {
		f.Phases = append(f.Phases, phaseStatus(run, ph, f.Unread))
	}
	for _, g := range f.Groups {
		switch g.Step.Phase {
		case "sweep":
			if g.Step.Server.AsIs() {
				continue // asIsOf reads it whole
			}
			f.Sweep = append(f.Sweep, SweepRow{LoadRow: loadRow(g, f.Params), NominalCeiling: CeilingPerS(WorkersOf(g.Step, f.Params.OffloadWorkers), g.Step.Block.D())})
		case "stall":
			f.Stall = append(f.Stall, stallRow(g))
		case "offload":
			f.Offload = append(f.Offload, loadRow(g, f.Params))
		case "trace":
			f.Trace = append(f.Trace, traceRow(g))
		case "cliff":
			f.Cliff = append(f.Cliff, loadRow(g, f.Params))
		case "slip":
			f.Slip = append(f.Slip, SlipRowOf(g, f.Params))
		}
	}
	f.AsIs = asIsOf(f.Groups, f.Params)
	f.Cost = costRows(f.Groups, f.Params, f.AsIs)
	f.LagRows = lagRows(f.Groups)
	f.Servers = serverSummaries(f)
	f.Claims = claims(f)
	return f
}

func paramsOf(p results.RunParams) Params {
	return Params{
		Block: p.Block, SlipBlock: p.SlipBlock, StallBlock: p.StallBlock, Delay: time.Duration(p.AsyncDelayNs),
		ProbeInterval: time.Duration(p.ProbeEveryNs), StallInterval: time.Duration(p.StallIntervalNs),
		Duration: time.Duration(p.DurationNs), Warmup: time.Duration(p.WarmupNs), BlockMode: p.BlockMode, DBPool: p.DBPool, DB: p.DB, SweepEndpoint: cmp.Or(p.SweepEndpoint, "/slow"),
		Stage: p.Stage, Loops: p.Loops, Slots: p.PoolSlots, OffloadWorkers: p.OffloadWorkers, StallConns: p.StallConns,
		TraceCallers: p.TraceCallers, TraceConns: p.TraceConns, Repeat: p.Repeat, Conc: slices.Clone(p.Conc),
	}
}

// groups reads every measurement's files back, in plan order. A
// measurement with a file that cannot be read is left out of its group's
// figures whole (a figure from part of its files would be a wrong one:
// its throughput 0, its server missing) and listed as not read.
func groups(dir string, run *results.Run) ([]*Group, []Unread) {
	var gs []*Group
	var unread []Unread
	byID := map[string]*Group{}
	for _, m := range run.Measurements {
		g := byID[m.ID]
		if g == nil {
			g = &Group{Step: m.Step}
			byID[m.ID] = g
			gs = append(gs, g)
		}
		g.MS = append(g.MS, m)
		if m.Status != "ok" {
			g.missed(m, nil)
			continue
		}
		rep := Rep{M: m}
		var bad *Unread
		read := func(field, rel string) *results.Result {
			if rel == "" || bad != nil {
				return nil
			}
			r, err := results.ReadResultIn(dir, rel)
			if err != nil {
				bad = &Unread{ID: m.ID, Repeat: m.Repeat, Field: field, File: rel, Why: err.Error()}
			}
			return r
		}
		rep.Load = read("load_file", m.LoadFile)
		rep.Probe = read("probe_file", m.ProbeFile)
		rep.Conns = read("perconn_file", m.PerConnFile)
		rep.Trace = read("trace_file", m.TraceFile)
		if m.LagFile != "" && bad == nil {
			t, err := results.ReadLagIn(dir, m.LagFile)
			if err != nil {
				bad = &Unread{ID: m.ID, Repeat: m.Repeat, Field: "lag_file", File: m.LagFile, Why: err.Error()}
			}
			rep.Lag = t
		}
		if m.ThreadsFile != "" && bad == nil {
			t, err := outside.ReadIn(dir, m.ThreadsFile)
			if err != nil {
				bad = &Unread{ID: m.ID, Repeat: m.Repeat, Field: "threads_file", File: m.ThreadsFile, Why: err.Error()}
			}
			rep.Threads = t
		}
		if m.WatchFile != "" && bad == nil {
			w, err := watch.ReadIn(dir, m.WatchFile)
			if err != nil {
				bad = &Unread{ID: m.ID, Repeat: m.Repeat, Field: "watch_file", File: m.WatchFile, Why: err.Error()}
			}
			rep.Watch = w
		}
		if bad != nil {
			unread = append(unread, *bad)
			g.missed(m, bad)
			continue
		}
		for _, x := range []struct {
			r   *results.Result
			dst *[]*results.Result
		}{{rep.Load, &g.Load}, {rep.Probe, &g.Probe}, {rep.Conns, &g.Conns}, {rep.Trace, &g.Trace}} {
			if x.r != nil {
				*x.dst = append(*x.dst, x.r)
			}
		}
		rep.Cost = CostOf(m, rep.Load)
		g.Reps = append(g.Reps, rep)
	}
	return gs, unread
}

func phaseStatus(run *results.Run, ph string, unread []Unread) PhaseStatus {
	st := PhaseStatus{Phase: ph}
	for _, m := range run.Measurements {
		if m.Phase != ph {
			continue
		}
		st.N++
		i := slices.IndexFunc(unread, func(u Unread) bool { return u.ID == m.ID && u.Repeat == m.Repeat })
		switch {
		case m.Status != "ok":
			st.Misses = append(st.Misses, Miss{M: m})
		case i >= 0:
			st.Misses = append(st.Misses, Miss{M: m, Unread: &unread[i]})
		default:
			st.OK++
		}
	}
	return st
}

// PhaseSkips says of a phase after the sweep what this run left out of it:
// the whole phase (not asked for with --phases; asked for with nothing of
// it planned, no server taking part, see --servers; or every measurement
// of it skipped), or some servers.
type PhaseSkips struct {
	Phase string
	// Asked: in --phases; Ran: a measurement of it was not skipped
	// (measured, failed, cut short: it says what became of it).
	Asked, Ran bool
	// Skipped are the servers every measurement of the phase skipped, in
	// the order measured, each with the first measurement's reason.
	Skipped []Skipped
}

// Skipped is a server a phase skipped, and why.
type Skipped struct {
	Server, Why string
	// AsIs: a server measured as it is (--load), which no phase that
	// needs the protocol measures.
	AsIs bool
}

// Skips are the phases after the sweep that this run did not run, or
// skipped a server in, in the order of Phases.
func (f *Findings) Skips() []PhaseSkips {
	var out []PhaseSkips
	for _, ph := range Phases[1:] {
		ps := PhaseSkips{Phase: ph, Asked: slices.Contains(f.Run.Params.Phases, ph)}
		measured := map[string]bool{} // servers with a measurement not skipped
		for _, m := range f.Run.Measurements {
			if m.Phase != ph {
				continue
			}
			if m.Status != "skipped" {
				ps.Ran, measured[m.Server.Name] = true, true
				continue
			}
			if !slices.ContainsFunc(ps.Skipped, func(s Skipped) bool { return s.Server == m.Server.Name }) {
				ps.Skipped = append(ps.Skipped, Skipped{Server: m.Server.Name, Why: m.Reason, AsIs: m.Server.AsIs()})
			}
		}
		ps.Skipped = slices.DeleteFunc(ps.Skipped, func(s Skipped) bool { return measured[s.Server] })
		if ps.Asked && !ps.Ran && len(ps.Skipped) == 0 && f.AllAsIs() {
			// Nothing planned (the cliff plans none for a server without a
			// declared pool): every server was measured as it is.
			for _, t := range f.Run.Params.Targets {
				ps.Skipped = append(ps.Skipped, Skipped{Server: t.Name, AsIs: true})
			}
		}
		if !ps.Ran || len(ps.Skipped) > 0 {
			out = append(out, ps)
		}
	}
	return out
}

// AllAsIs: the run measured servers as they are (--load), and nothing
// else (none of the kit's servers, no server speaking the protocol).
func (f *Findings) AllAsIs() bool {
	rp := f.Run.Params
	return len(rp.Servers) == 0 && len(rp.Targets) > 0 && !slices.ContainsFunc(rp.Targets, func(t results.Server) bool { return !t.AsIs() })
}

// vals maps v over the results that have it.
func vals(rs []*results.Result, v func(*results.Result) (float64, bool)) Figure {
	var out Figure
	for _, r := range rs {
		if x, ok := v(r); ok {
			out = append(out, x)
		}
	}
	return out
}
