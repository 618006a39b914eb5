package findings

import (
	"math"
	"time"
)

// Preset is one server of the run as the ceiling calculator's starting
// point: its workers for the sweep's call (loops, slots, or the database
// connections that bind), the block it measured, and the share of that
// ceiling it reached where the workers bound it (the realistic factor).
type Preset struct {
	Server  string
	Workers int
	Binds   WorkerKind    // what the workers are (prose's PresetWorkers says them)
	Block   time.Duration // measured (the asked block where it did not say)
	// Share is the median share of the workers' ceiling over the sweep's
	// rows the workers bound; 0 when none did (then the run cannot say how
	// near a real server of this kind comes to its ceiling).
	Share float64
	Rows  int // the rows Share is the median of
	// AsIs: a server measured as it is, its workers those it behaves as
	// and its block its call's own time, both from its sweep (Share 0:
	// its ceiling comes from its own plateau, so no share of it is news).
	AsIs bool
}

// Presets are the calculator's starting points, one per server whose
// workers are known, in the order the servers were measured.
func (f *Findings) Presets() []Preset {
	var out []Preset
	for _, s := range f.Servers {
		if s.SweepWorkers <= 0 {
			continue
		}
		p := Preset{Server: s.Name, Workers: s.SweepWorkers, Binds: s.WorkerKind(), Block: s.Block}
		if s.MeasuredBlock > 0 {
			p.Block = s.MeasuredBlock
		}
		var shares Figure
		for _, r := range f.Sweep {
			if r.Step.Server.Name != s.Name {
				continue
			}
			for _, b := range r.Bounds {
				if b != nil && b.Kind == "workers" {
					shares = append(shares, b.Share)
				}
			}
		}
		if shares.OK() {
			p.Share, p.Rows = shares.Median(), len(shares)
		}
		out = append(out, p)
	}
	for _, a := range f.AsIs {
		if a.Ceiling <= 0 || a.CallTime() <= 0 {
			continue
		}
		w := max(1, int(math.Round(a.Workers)))
		out = append(out, Preset{Server: a.Server, Workers: w, Block: a.CallTime(), AsIs: true})
	}
	return out
}
