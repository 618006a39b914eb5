package experiment

import (
	"fmt"
	"slices"
	"time"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
)

// Plan is everything the run will do, in order.
type Plan struct {
	Options Options
	Steps   []Step
	// Skips are the steps not run, by ID, with why (a --target's check).
	Skips map[string]string
}

func (o Options) servers() []Server {
	var out []Server
	for _, k := range kitServers { // in the catalogue's order, whatever --servers' order
		if !slices.Contains(o.Servers, k.name) {
			continue
		}
		switch k.name {
		case "loop":
			for _, e := range o.Engines {
				out = append(out, Server{Name: "loop-" + e, Kind: "loop", Engine: e, Workers: o.Loops})
			}
		case "pool":
			out = append(out, Server{Name: "pool", Kind: "pool", Workers: o.Slots})
		case "netty":
			out = append(out, Server{Name: "netty", Kind: "loop", Engine: "netty", Workers: o.Loops})
		case "tomcat":
			out = append(out, Server{Name: "tomcat", Kind: "pool", Engine: "tomcat", Workers: o.Slots})
		case "nethttp", "fasthttp", "netpoll":
			out = append(out, Server{Name: k.name, Kind: "goroutine", Engine: k.name})
		}
	}
	if o.BlockMode == "postgres" {
		for i := range out {
			out[i].DBConns = o.DBPool
		}
	}
	for _, t := range o.Targets {
		s := t.Server
		if t.load != nil {
			s.Load, s.Bystander = t.load.String(), t.bystander.String()
		}
		out = append(out, s)
	}
	return out
}

// sweepConc is the sweep's callers for s: the run's --conc, and for a
// server measured as it is 1 first, the call's own time (the load's median
// with nobody queued ahead).
func (o Options) sweepConc(s Server) []int {
	if !s.AsIs() || slices.Contains(o.Conc, 1) {
		return o.Conc
	}
	return append([]int{1}, o.Conc...)
}

// allConc is every caller count the sweep plans, in the order it runs
// them: --conc, with 1 first when a server is measured as it is.
func (o Options) allConc() []int {
	if o.Load != "" && len(o.Targets) > 0 {
		return o.sweepConc(Server{Load: o.Load})
	}
	return o.Conc
}

// loopsOf is how many loops the stall and trace phases place connections
// on: a loop server's own, else the run's --loops (a pool's contrast).
func (o Options) loopsOf(s Server) int {
	if s.Kind == "loop" && s.Workers > 0 {
		return s.Workers
	}
	return o.Loops
}

// short is the measured time of the phases whose story is a stall: half
// the duration, at least a second (each k of the stall phase is one step).
func (o Options) short() time.Duration {
	return max(o.Duration/2, time.Second)
}

// slipWindow is the slip phase's measured time for a step: the step comes
// halfway, and each side lasts as long as the stall's windows do, or
// longer where the requests queued at the step take a while to drain:
// each of the workers that bind it may hold callers / workers of them,
// each now as slow as the slowed call (the last one asked before the step
// can come back that late: 16 x 50 ms on 4 loops at 64 callers), and the
// after side still has 0.8 s beyond that. In whole 100 ms, so that the
// step falls on a tick.
func (o Options) slipWindow(s Step) time.Duration {
	w := findings.WorkersOf(s, o.Slots)
	if w == 0 || w > s.Conc {
		w = s.Conc
	}
	drain := time.Duration((s.Conc+w-1)/w) * o.SlipBlock.D()
	half := max(o.short()/2, drain+800*time.Millisecond)
	return 2 * ((half + slipTick - 1) / slipTick * slipTick)
}

// BuildPlan lays out the measurements.
func BuildPlan(o Options) Plan {
	p := Plan{Options: o}
	for _, phase := range allPhases {
		if slices.Contains(o.Phases, phase) {
			p.Steps = append(p.Steps, phaseSteps[phase](o, phase)...)
		}
	}
	// Each step's block by the road a run read back takes: its params.
	bp := o.blockParams()
	for i := range p.Steps {
		p.Steps[i].Block, p.Steps[i].SlipBlock = bp.BlockOf(p.Steps[i]), bp.SlipBlockOf(p.Steps[i])
	}
	// A --target skips the phases its check said it cannot take part in.
	p.Skips = map[string]string{}
	for _, t := range o.Targets {
		for _, st := range p.Steps {
			if why := t.Skips[st.Phase]; why != "" && st.Server.Name == t.Name {
				p.Skips[st.ID] = why
			}
		}
	}
	return p
}

// phaseSteps lays out each phase's steps.
var phaseSteps = map[string]func(Options, string) []Step{
	"sweep":   Options.sweepSteps,
	"stall":   Options.stallSteps,
	"offload": Options.offloadSteps,
	"trace":   Options.traceSteps,
	"cliff":   Options.cliffSteps,
	"slip":    Options.slipSteps,
}

// sweepSteps are the sweep's: each concurrency on each server, a server
// watched at its top step measured again, watched.
func (o Options) sweepSteps(phase string) []Step {
	var out []Step
	add := func(s Step) { out = append(out, s) }
	for _, c := range o.allConc() {
		for _, s := range o.servers() {
			if !slices.Contains(o.sweepConc(s), c) {
				continue
			}
			endpoint := o.SweepEndpoint
			if s.AsIs() {
				endpoint = s.Load
			}
			add(Step{ID: fmt.Sprintf("sweep-%s-c%d", s.Name, c), Phase: phase, Server: s, Endpoint: endpoint, Conc: c,
				Duration: o.Duration, Warmup: o.Warmup})
			if s.Watchable() && c == slices.Max(o.sweepConc(s)) {
				// The top step again, watched: what held the
				// service's threads, and what watching cost it
				// (against the step just measured unwatched).
				add(Step{ID: fmt.Sprintf("sweep-%s-c%d-%s", s.Name, c, results.Watched), Phase: phase, Server: s, Endpoint: endpoint, Conc: c,
					Variant: results.Watched, Duration: o.Duration, Warmup: o.watchWarmup(s)})
			}
		}
	}
	return out
}

// stallSteps are the stall's: k loops blocked, from 0 (1 on stage) to
// every loop; a server without loops at 0 and as many blockers.
func (o Options) stallSteps(phase string) []Step {
	var out []Step
	add := func(s Step) { out = append(out, s) }
	for _, s := range o.servers() {
		var ks []int
		for k := 0; k <= o.loopsOf(s); k++ {
			ks = append(ks, k)
		}
		if s.Kind != "loop" {
			ks = []int{0, o.Loops} // the contrast: as many blockers, no stall
		}
		for _, k := range ks {
			if k == 0 && o.Stage {
				continue // the stage shows k = 1 and up (screen 4): the baseline is the report's
			}
			add(Step{ID: fmt.Sprintf("stall-%s-k%d", s.Name, k), Phase: phase, Server: s, Endpoint: "/slow", K: k,
				Conc: k, Duration: o.short(), Warmup: 300 * time.Millisecond})
		}
	}
	return out
}

// offloadSteps are the fix's, at the highest concurrency: the call
// blocking a loop server's loops, then offloaded; a pool's /slow.
func (o Options) offloadSteps(phase string) []Step {
	var out []Step
	add := func(s Step) { out = append(out, s) }
	maxConc := slices.Max(o.Conc)
	for _, s := range o.servers() {
		// Every step id names its server, so two servers of one kind
		// keep their files and rows apart.
		variants := []struct{ name, endpoint string }{{"pool", "/slow"}}
		if s.Kind == "loop" {
			variants = []struct{ name, endpoint string }{{"blocking", "/slow"}, {"offloaded", "/offload"}}
		}
		for _, v := range variants {
			add(Step{ID: "offload-" + s.Name + "-" + v.name, Phase: phase, Server: s, Endpoint: v.endpoint, Conc: maxConc, Variant: v.name,
				Duration: o.Duration, Warmup: o.Warmup})
		}
	}
	return out
}

// traceSteps take /async apart on each server while callers block.
func (o Options) traceSteps(phase string) []Step {
	var out []Step
	add := func(s Step) { out = append(out, s) }
	for _, s := range o.servers() {
		add(Step{ID: "trace-" + s.Name, Phase: phase, Server: s, Endpoint: "/slow", Conc: o.TraceCallers, Duration: o.short(), Warmup: 300 * time.Millisecond})
	}
	return out
}

// cliffSteps load each pool at shares of its slots.
func (o Options) cliffSteps(phase string) []Step {
	var out []Step
	add := func(s Step) { out = append(out, s) }
	for _, s := range o.servers() {
		// A pool at shares of its slots; a server with no declared
		// pool (a goroutine per connection or request) at the same
		// callers as the run's pool, to see whether it has one.
		size := s.Workers
		switch {
		case s.Kind == "goroutine":
			size = o.Slots
		case s.Kind != "pool":
			continue
		}
		// Behind fewer database connections, the pool that binds
		// is theirs: its cliff is at their number.
		if s.DBConns > 0 {
			size = min(size, s.DBConns)
		}
		for _, pct := range findings.CliffShares {
			add(Step{ID: fmt.Sprintf("cliff-%s-%dpct", s.Name, pct), Phase: phase, Server: s, Endpoint: "/slow",
				Conc: max(1, size*pct/100), Variant: fmt.Sprintf("%d%%", pct), Duration: o.Duration, Warmup: o.Warmup})
		}
	}
	return out
}

// slipSteps are the bad afternoon's: each server at the highest
// concurrency, the call slowed halfway (on stage, at the presenter's key).
func (o Options) slipSteps(phase string) []Step {
	var out []Step
	add := func(s Step) { out = append(out, s) }
	maxConc := slices.Max(o.Conc)
	for _, s := range o.servers() {
		st := Step{ID: "slip-" + s.Name, Phase: phase, Server: s, Endpoint: "/slow", Conc: maxConc, Warmup: 300 * time.Millisecond,
			Variant: o.Block.String() + " -> " + o.SlipBlock.String()}
		st.Duration = o.slipWindow(st)
		st.SlipAtNs = int64(st.Duration / 2)
		if o.Stage {
			// On stage the presenter's key slows the call: the
			// before side waits for it, four times a side at most.
			half := st.Duration / 2
			st.SlipAtNs, st.Duration = int64(stageSlipWait*half), (stageSlipWait+1)*half
		}
		add(st)
	}
	return out
}

// cost is how long one step should take.
func (p Plan) cost(s Step) time.Duration {
	d := s.Warmup + s.Duration + startCost
	if s.Server.AsIs() {
		d += placeAllowance
	}
	if jvmServer(s.Server) {
		d += jvmStart + p.Options.JVMWarmup
	}
	if s.Server.AsIs() && s.Phase == "sweep" && s.Conc == p.Options.sweepConc(s.Server)[0] {
		d += p.Options.JVMWarmup // warmed up before its first measurement
	}
	return d
}

// Expected is how long the plan should take.
func (p Plan) Expected() time.Duration {
	var d time.Duration
	for _, s := range p.Steps {
		if p.Skips[s.ID] == "" {
			d += p.cost(s)
		}
	}
	return d * time.Duration(p.Options.Repeat)
}

// slipBlock is the slowed call the run records: none without the slip.
// blockParams are the run's params (run.json's) as far as the block goes:
// the plan gives each step its block from them (RunParams.BlockOf).
func (o Options) blockParams() results.RunParams {
	return results.RunParams{Block: o.Block, StallBlock: o.StallBlock, SlipBlock: slipBlock(o)}
}

func slipBlock(o Options) results.Block {
	if !slices.Contains(o.Phases, "slip") {
		return 0
	}
	return o.SlipBlock
}
