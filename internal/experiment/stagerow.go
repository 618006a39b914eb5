package experiment

import (
	"strings"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/palette"
	"github.com/bystander-kit/bystander/internal/prose"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/stage"
	"github.com/bystander-kit/bystander/internal/stall"
)

// stageHello tells the page the run's shape: what the ceilings are, and
// the stall rule in words.
func stageHello(o Options, steps []Step) stage.Hello {
	h := stage.Hello{Loops: o.Loops, Slots: o.Slots, BlockMs: o.Block.Ms(), StallBlockMs: o.StallBlock.Ms(), Conc: o.Conc,
		ServersKind: map[string]string{}, Ceiling: map[string]float64{}, CeilingText: map[string]string{}, StallConns: stallConnsPerLoop * o.Loops,
		Engines: o.Engines, Rule: stall.Rule, Screens: screens - 1}
	var servers []palette.Server
	for _, s := range steps {
		h.ServersKind[s.Server.Name] = s.Server.Kind
		servers = append(servers, palette.Server{Name: s.Server.Name, Kind: s.Server.Kind})
		if s.Phase == "sweep" {
			_, h.Ceiling[s.Server.Name] = findings.StepCeiling(s, o.Slots)
			h.CeilingText[s.Server.Name] = prose.StepCeiling(s, o.Slots)
		}
		if s.Phase == "slip" {
			h.Screens, h.SlipBlockMs = screens, s.SlipBlock.Ms()
		}
	}
	if o.Load != "" {
		// Services measured as they are: their requests' names, and why
		// the screens that need the protocol show nothing of them.
		h.AsIs, h.Load, h.Bystander, h.Screens = true, o.Load, o.Bystander, screens
		for _, s := range steps {
			if s.Server.AsIs() {
				h.Load, h.Bystander = s.Server.Load, s.Server.Bystander // as read: "@login.targets: 3 requests"
				break
			}
		}
		h.Skips = asIsScreenSkips(o.Load, o.Bystander)
	}
	h.Colors, h.Pale = palette.Of(servers), map[string]string{}
	for name, c := range h.Colors {
		h.Pale[name] = palette.Tint(c, palette.Pale)
	}
	return h
}

// stepEvent says a step began or ended; at its end, with its figures as
// internal/findings computes them for the tables and the report (row).
func stepEvent(s Step, state string, slots int, m *results.Measurement, row func(results.Measurement) *stage.StepRow) stage.Step {
	workers, ceiling := findings.StepCeiling(s, slots)
	ev := stage.Step{ID: s.ID, Phase: s.Phase, Server: s.Server.Name, Conc: s.Conc, K: s.K, Variant: s.Variant,
		Endpoint: s.Endpoint, State: state, Screen: screenOf(s), Workers: workers, Ceiling: ceiling}
	if m != nil {
		ev.Status = m.Status
		if m.Status == "ok" {
			ev.Row = row(*m)
		}
	}
	return ev
}

// stepRow is a finished measurement's row, from internal/findings: the
// figures the tables and the report give for it, in a run of these
// params and manifest whose files are in dir.
func stepRow(dir string, params results.RunParams, manifest results.Manifest, m results.Measurement) *stage.StepRow {
	one := &results.Run{Schema: results.RunSchema, Params: params, Manifest: manifest, Measurements: []results.Measurement{m}}
	f := findings.Compute(dir, one)
	row := &stage.StepRow{}
	if len(f.Unread) > 0 {
		row.NotRead = prose.Unread(f.Unread[0])
		return row
	}
	load := func(l findings.LoadRow) {
		row.RPS = l.Throughput.Median()
		if l.Fast.P50.OK() {
			row.FastP50Ms, row.FastAtLeast = l.Fast.P50.Median()/1e3, l.Fast.Saturated || prose.Censored(l.Fast) != ""
		}
	}
	switch {
	case len(f.Sweep) == 1:
		load(f.Sweep[0].LoadRow)
	case len(f.AsIs) == 1 && len(f.AsIs[0].Steps) == 1: // a service measured as it is: its sweep is its own
		load(f.AsIs[0].Steps[0].LoadRow)
	case len(f.Offload) == 1:
		load(f.Offload[0])
	case len(f.Stall) == 1:
		row.Stall = verdictOf(m.ID, f.Stall[0])
	case len(f.Slip) == 1:
		if sl := f.Slip[0]; sl.Before.PerS.OK() && sl.After.PerS.OK() {
			row.SlipBefore, row.SlipAfter, row.SlipAtMs = sl.Before.PerS.Median(), sl.After.PerS.Median(), float64(sl.At)/1e6
		}
	}
	return row
}

// verdictOf is a stall row's verdict for the stage: the count the tables
// give, or why it could not be judged.
func verdictOf(id string, st findings.StallRow) *stage.Verdict {
	v := &stage.Verdict{ID: id, Final: true, Judged: st.Judged > 0, Conns: int(st.Conns.Median())}
	for _, c := range st.Cells { // the heatmap's cells: the page's grid ends on them
		v.Cells = append(v.Cells, stage.Cell{Conn: c.Conn, Loop: c.Loop, WaitMs: c.WaitUs / 1e3, Stalled: c.Stalled})
	}
	if v.Judged {
		v.Stalled = int(st.Stalled.Median())
	} else if len(st.Unjudged) > 0 {
		v.Why = prose.StallUnjudged(st.Unjudged[0])
	}
	if o := st.Seen; o != nil { // seen from outside: a few lines, for a projector
		names := make([]string, len(o.Held))
		for i, h := range o.Held {
			names[i] = h.Thread
		}
		for _, p := range culprit.Places(o.Held, names) {
			v.Seen = append(v.Seen, "held "+p.Where+": "+strings.Join(p.Who, ", ")) // the place first: a long line is cut at its end
		}
		v.Seen = append(v.Seen, o.Groups...)
		if len(v.Seen) > maxSeenLines {
			v.Seen = v.Seen[:maxSeenLines]
		}
	}
	return v
}

// maxSeenLines is how many lines of the outside view a stall screen shows.
const maxSeenLines = 3
