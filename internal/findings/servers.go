package findings

import (
	"slices"
	"time"
)

// ServerSummary is one server as the run measured it: what it is, and
// the ceilings of its sweep, computed once for every page that draws them.
type ServerSummary struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	External bool   `json:"external,omitempty"`
	// Workers are its loops or slots (0: not known); SweepWorkers those
	// the sweep's endpoint blocks on (an /offload sweep: the offload pool).
	Workers      int `json:"workers"`
	SweepWorkers int `json:"sweep_workers"`
	// DBConns are its database connections (--block-mode postgres; 0:
	// none); DBBound when they, fewer than its workers, are SweepWorkers.
	DBConns int  `json:"db_conns,omitempty"`
	DBBound bool `json:"db_bound,omitempty"`
	// Block is the sweep's asked block; NominalCeiling SweepWorkers / Block;
	// MeasuredBlock the median of what the server said it blocked (0: it
	// did not say) and MeasuredCeiling SweepWorkers / MeasuredBlock.
	Block           time.Duration `json:"block_ns"`
	NominalCeiling  float64       `json:"nominal_ceiling_per_s"`
	MeasuredCeiling float64       `json:"measured_ceiling_per_s"`
	MeasuredBlock   time.Duration `json:"measured_block_ns"`
	Phases          []string      `json:"phases"`
}

// WorkerKind is what the workers of a ceiling are: the server's loops or
// slots, the offload pool's workers, its database connections, or (the
// slip's) the load's callers where those are fewer.
type WorkerKind int

// The kinds of workers a ceiling can have.
const (
	WorkerSlots WorkerKind = iota
	WorkerLoops
	WorkerOffload
	WorkerDBConns
	WorkerCallers
)

// WorkerKind is what the sweep's workers (SweepWorkers) are, for the words
// of its ceiling (prose's CeilingNoun): the slip's binding workers and the
// calculator's presets say them too.
func (s ServerSummary) WorkerKind() WorkerKind {
	switch {
	case s.DBBound:
		return WorkerDBConns
	case s.SweepWorkers != s.Workers:
		return WorkerOffload
	case s.Kind == "loop":
		return WorkerLoops
	}
	return WorkerSlots
}

// MeasuredApart is how far the ceiling from the measured block must be
// from the asked block's for the pages to draw and label it on its own:
// nearer, they say it in the nominal ceiling's label.
const MeasuredApart = 0.10

// MeasuredFar: the server's ceiling from the block it measured is
// MeasuredApart or more from the one from the asked block.
func (s ServerSummary) MeasuredFar() bool {
	if s.MeasuredCeiling == 0 || s.NominalCeiling == 0 {
		return false
	}
	d := s.MeasuredCeiling/s.NominalCeiling - 1
	return d >= MeasuredApart || d <= -MeasuredApart
}

func serverSummaries(f *Findings) []ServerSummary {
	var out []ServerSummary
	index := map[string]int{}
	for _, g := range f.Groups {
		s := g.Step.Server
		i, ok := index[s.Name]
		if !ok {
			i = len(out)
			index[s.Name] = i
			out = append(out, ServerSummary{Name: s.Name, Kind: s.Kind, External: s.External, Workers: s.Workers, DBConns: s.DBConns})
		}
		if !slices.Contains(out[i].Phases, g.Step.Phase) {
			out[i].Phases = append(out[i].Phases, g.Step.Phase)
		}
	}
	for i := range out {
		var block Figure
		for _, r := range f.Sweep {
			if r.Step.Server.Name != out[i].Name {
				continue
			}
			out[i].Block = r.Step.Block.D()
			out[i].SweepWorkers = WorkersOf(r.Step, f.Params.OffloadWorkers)
			out[i].DBBound = DBBinds(r.Step, f.Params.OffloadWorkers)
			block = append(block, r.MeasuredBlock...)
		}
		out[i].NominalCeiling = CeilingPerS(out[i].SweepWorkers, out[i].Block)
		if block.OK() {
			out[i].MeasuredBlock = time.Duration(block.Median())
			out[i].MeasuredCeiling = CeilingPerS(out[i].SweepWorkers, out[i].MeasuredBlock)
		}
	}
	return out
}

// Server is the summary of the server named name (its zero value when the
// run did not measure it).
func (f *Findings) Server(name string) ServerSummary {
	for _, s := range f.Servers {
		if s.Name == name {
			return s
		}
	}
	return ServerSummary{}
}

// CallersCeilings are callers / the sweep's block, Little's law, for each
// of the run's concurrencies in order.
func (f *Findings) CallersCeilings() [][2]float64 {
	concs := slices.Clone(f.Params.Conc)
	slices.Sort(concs)
	var out [][2]float64
	for _, c := range concs {
		out = append(out, [2]float64{float64(c), CeilingPerS(c, f.Params.Block.D())})
	}
	return out
}
