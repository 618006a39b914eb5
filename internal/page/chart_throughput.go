package page

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/palette"
	"github.com/bystander-kit/bystander/internal/prose"
	"github.com/bystander-kit/bystander/internal/words"
)

// 1. /slow throughput against concurrency, with the ceilings.
func throughputChart(f *findings.Findings) section {
	p := f.Params
	var ceilings []string
	for _, sv := range f.Servers {
		if c := prose.ServerCeiling(sv); c != "" && slices.Contains(sv.Phases, "sweep") {
			ceilings = append(ceilings, sv.Name+": "+c)
		}
	}
	sec := section{ID: "throughput", Title: fmt.Sprintf("1. %s throughput against concurrency, with the ceilings", p.SweepEndpoint),
		Caption: fmt.Sprintf("Each server was driven with %s callers on %s, each call blocking for %s (%s mode). "+
			"A server cannot beat its workers divided by the block (dashed, in the server's colour and labelled on the line: %s; thin dashed: from the block the servers measured), "+
			"nor its callers divided by the block (dotted: Little's law, one request per caller per block). "+
			"The labels give each point's share of the ceiling that binds it, decided from the measured ceilings and the machine's measured use "+
			"(points that lie together share one label; the tooltip gives each). ",
			words.Ints(p.Conc, ", "), p.SweepEndpoint, p.Block, p.BlockMode, orNone(strings.Join(ceilings, ", "), "no server's workers are known")) +
			claims(f, findings.ClaimLoopsFlatten, findings.ClaimPoolClimbs)}
	if p.SweepEndpoint == "/offload" {
		sec.Caption = fmt.Sprintf("This run's sweep loaded /offload, the fix: the same blocking call made on an offload pool of %d workers, the answer written back by the loop; "+
			"the loop server's ceiling is then that pool's workers / block. ", p.OffloadWorkers) + sec.Caption
	}
	var ok []findings.SweepRow
	for _, r := range f.Sweep {
		if r.Throughput.OK() {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		sec.Missing = missing(groupsOf(f.Sweep, sweepGroup), "sweep")
		return sec
	}
	hue := hues(f)
	names := serverNames(ok, sweepGroup)
	line := charts.NewLine()
	line.SetGlobalOptions(append(frame(sec.ID, 400, append(slices.Clone(names), littleName)),
		charts.WithXAxisOpts(opts.XAxis{Type: "log", Name: "callers", NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "log", Name: "req/s"}),
	)...)
	concs := slices.Clone(p.Conc)
	sort.Ints(concs)
	lo, hi := float64(concs[0]), float64(concs[len(concs)-1])
	pointLabels := boundLabels(ok, func(r findings.SweepRow) string { return labelPosition(f.Server(r.Step.Server.Name).Kind) })
	for _, name := range names {
		var data []opts.LineData
		sv := f.Server(name)
		for i, r := range ok {
			if r.Step.Server.Name != name {
				continue
			}
			data = append(data, opts.LineData{Name: boundLabel(r), Value: []any{r.Step.Conc, round(r.Throughput.Median(), 1), pointLabels[i]}})
		}
		line.AddSeries(name, data, append(colored(hue[name], opts.LineStyle{Width: 3}),
			charts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Formatter: "{@[2]}", Position: labelPosition(sv.Kind)}),
			charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true), SymbolSize: 8}))...)
		if why := prose.ServerNoCeiling(sv); why != "" {
			sec.Notes = append(sec.Notes, name+": "+why)
		}
	}
	for _, c := range ceilingLabels(f, names) {
		ceilingSeries(line, c.Server, c.Label, hue[c.Server], lo, hi, c.Value, c.Measured)
	}
	var little []opts.LineData
	for _, c := range f.CallersCeilings() {
		little = append(little, opts.LineData{Value: []any{c[0], round(c[1], 1)}})
	}
	line.AddSeries(littleName, little, append(colored(palette.Neutral, opts.LineStyle{Type: "dotted", Width: 2}),
		charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}))...)
	for _, r := range ok {
		if b := r.Bound(); b != nil && len(prose.BoundNotes(b)) > 0 {
			sec.Notes = append(sec.Notes, fmt.Sprintf("%s, %d callers: %s", r.Step.Server.Name, r.Step.Conc, strings.Join(prose.BoundNotes(b), "; ")))
		}
	}
	sec.Element, sec.Script = snippet(line)
	return sec
}

// labelPosition is where a server's point labels go: a loop server's
// points lie under its ceiling, whose label is above the line, so theirs
// go below; the others' above.
func labelPosition(kind string) string {
	if kind == "loop" {
		return "bottom"
	}
	return "top"
}

// boundLabel is a point's share of the ceiling that binds it, "98% of
// workers", or the bound's kind alone.
func boundLabel(r findings.SweepRow) string {
	b := r.Bound()
	if b == nil {
		return ""
	}
	if sh := r.BoundShare(); sh.OK() {
		return fmt.Sprintf("%.0f%% of %s", sh.Median(), b.Kind)
	}
	return b.Kind
}

// nearLabels is how close two points' throughputs must be (as a ratio)
// for their labels, on the same side, to be one.
const nearLabels = 1.3

// boundLabels gives each row the label drawn at its point: rows at the
// same callers whose labels go on the same side (pos) and whose
// throughputs are within nearLabels share one label, on the first of
// them ("98% of workers", "97-98% of callers"), so no two are drawn on
// each other; the others' labels are empty, their figures in the tooltip.
func boundLabels(rows []findings.SweepRow, pos func(findings.SweepRow) string) []string {
	out := make([]string, len(rows))
	done := make([]bool, len(rows))
	for i, r := range rows {
		if done[i] {
			continue
		}
		type share struct {
			kind string
			pct  []float64
		}
		var kinds []*share
		add := func(x findings.SweepRow) {
			b := x.Bound()
			if b == nil {
				return
			}
			var k *share
			for _, s := range kinds {
				if s.kind == b.Kind {
					k = s
				}
			}
			if k == nil {
				k = &share{kind: b.Kind}
				kinds = append(kinds, k)
			}
			if sh := x.BoundShare(); sh.OK() {
				k.pct = append(k.pct, sh.Median())
			}
		}
		add(r)
		v := r.Throughput.Median()
		for j := i + 1; j < len(rows); j++ {
			x := rows[j]
			w := x.Throughput.Median()
			if done[j] || x.Step.Conc != r.Step.Conc || pos(x) != pos(r) || max(v, w) > nearLabels*min(v, w) {
				continue
			}
			done[j] = true
			add(x)
		}
		var parts []string
		for _, k := range kinds {
			if len(k.pct) == 0 {
				parts = append(parts, k.kind)
				continue
			}
			lo, hi := slices.Min(k.pct), slices.Max(k.pct)
			if fmt.Sprintf("%.0f", lo) == fmt.Sprintf("%.0f", hi) {
				parts = append(parts, fmt.Sprintf("%.0f%% of %s", lo, k.kind))
			} else {
				parts = append(parts, fmt.Sprintf("%.0f-%.0f%% of %s", lo, hi, k.kind))
			}
		}
		out[i] = strings.Join(parts, ", ")
	}
	return out
}
