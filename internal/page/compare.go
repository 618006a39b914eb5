package page

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/bystander-kit/bystander/internal/compare"
	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/prose"
)

// grid is a plain table section: a header and rows of cells.
type grid struct {
	Head []string
	Rows [][]string
}

// comparePage is run A against run B on one page: the sweep's throughput
// and the bystander's latency of both on the same axes with both runs'
// ceilings, then every figure of every measurement both made.
func comparePage(c *compare.Comparison, a Asset) page {
	p := page{Title: "bystander: run A against run B", Run: c.B.Run}
	p.Lead = fmt.Sprintf("A is %s (started %s), B is %s (started %s). Each figure is the median over a run's repetitions; "+
		"B vs A is the change when it is significant (p <= %.2f, Mann-Whitney U over the repetitions, as benchstat tests), ~ when it is not, "+
		"and with one repetition the change alone: no significance can be given without repetitions.",
		c.DirA, c.A.Run.Manifest.StartUTC, c.DirB, c.B.Run.Manifest.StartUTC, compare.Alpha)
	p.useAsset(a)
	p.RunTitle = "What differs between A and B"
	for _, d := range c.Differ {
		k, v, _ := strings.Cut(d, ": ")
		p.Params = append(p.Params, kv{k, v})
	}
	if len(p.Params) == 0 {
		p.Params = []kv{{"parameters", "the same in both runs, on the same machine and commit"}}
	}
	p.Sections = append(p.Sections, overlay(c, "cmp_throughput", "1. Throughput against concurrency, A and B, with both runs' ceilings", "req/s",
		"The sweep's throughput of each server in A (solid) and B (dashed), each server in its one colour, on the same axes, with each run's ceilings, workers / requested block, "+
			"dashed and labelled on the line (one line for the servers of both runs that share a ceiling). "+
			"Where B loaded another endpoint than A (--sweep-endpoint), the series names say so.",
		func(r findings.SweepRow) (float64, bool) { return r.Throughput.Median(), r.Throughput.OK() }, true))
	p.Sections = append(p.Sections, overlay(c, "cmp_fast", "2. The /fast bystander's p50 from due, A and B", "ms",
		"What the one /fast connection waited meanwhile, from each probe's due time, at each concurrency of the sweep, A solid, B dashed, on a log axis.",
		func(r findings.SweepRow) (float64, bool) { return max(r.Fast.P50.Median()/1e3, 0.001), r.Fast.P50.OK() }, false))
	p.Warnings = c.Shared()
	for i, w := range p.Warnings {
		p.Warnings[i] = "Measured on a shared machine, " + w + ": its figures may be slower for it, not for what it measured."
	}
	first, rest := c.Split()
	head := []string{"measurement", "figure", "A", "B", "B vs A", "test"}
	g := &grid{Head: head}
	for _, ch := range first {
		g.Rows = append(g.Rows, ch.Cells())
	}
	sec := section{ID: "cmp_table", Title: "3. The changes that matter", Grid: g,
		Caption: "Of every figure both runs measured, the changes that matter, the largest first: " + compare.FirstHeading + ". " +
			"Medians over each run's repetitions, with the range in brackets when there are several."}
	if len(first) == 0 {
		sec.Grid, sec.Missing = nil, "no figure changed significantly, nor by "+fmt.Sprintf("%.0f %%", compare.UntestedShown)+" or more untested"
	}
	p.Sections = append(p.Sections, sec)
	rg := &grid{Head: head}
	key := ""
	for _, ch := range rest {
		cells := ch.Cells()
		if cells[0] == key {
			cells[0] = ""
		} else {
			key = cells[0]
		}
		rg.Rows = append(rg.Rows, cells)
	}
	sec = section{ID: "cmp_rest", Title: fmt.Sprintf("4. The other %d figures", len(rest)), Grid: rg, Fold: fmt.Sprintf("show the %d figures with %s", len(rest), compare.RestHeading),
		Caption: "Every other figure of every measurement both runs made, folded: " + compare.RestHeading + "."}
	if len(rest) == 0 {
		sec.Grid, sec.Fold, sec.Missing = nil, "", "every figure is among the changes above"
	}
	p.Sections = append(p.Sections, sec)
	return p
}

// overlay draws one sweep figure of both runs against callers; ceilings
// adds each run's workers / block lines.
func overlay(c *compare.Comparison, id, title, unit, caption string, v func(findings.SweepRow) (float64, bool), ceilings bool) section {
	sec := section{ID: id, Title: title, Caption: caption}
	line := charts.NewLine()
	var concs []int
	for _, f := range []*findings.Findings{c.A, c.B} {
		for _, r := range f.Sweep {
			if !slices.Contains(concs, r.Step.Conc) {
				concs = append(concs, r.Step.Conc)
			}
		}
	}
	if len(concs) == 0 {
		sec.Missing = "neither run has a sweep"
		return sec
	}
	sort.Ints(concs)
	lo, hi := float64(concs[0]), float64(concs[len(concs)-1])
	// A server has one hue in both runs: A solid, B dashed.
	hue := hues(c.A, c.B)
	drawn := 0
	var legend []string
	type shared struct {
		value       float64
		series, hue string
		who         []string
	}
	ceils := map[string]*shared{}
	var ceilOrder []string
	for ri, f := range []*findings.Findings{c.A, c.B} {
		run, style := "A", ""
		if ri == 1 {
			run, style = "B", "dashed"
		}
		seriesOf := map[string]string{}
		var names []string
		for _, name := range serverNames(f.Sweep, sweepGroup) {
			var data []opts.LineData
			endpoint := ""
			for _, r := range f.Sweep {
				if r.Step.Server.Name != name {
					continue
				}
				endpoint = r.Step.Endpoint
				if y, ok := v(r); ok {
					data = append(data, opts.LineData{Value: []any{r.Step.Conc, round(y, 3)}})
				}
			}
			if len(data) == 0 {
				continue
			}
			drawn++
			series := fmt.Sprintf("%s: %s %s", run, name, endpoint)
			seriesOf[name] = series
			names = append(names, name)
			legend = append(legend, series)
			line.AddSeries(series, data, append(colored(hue[name], opts.LineStyle{Type: style, Width: 3}),
				charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true), SymbolSize: 8}))...)
		}
		if !ceilings {
			continue
		}
		// One line and one label per ceiling, however many servers of
		// either run share it: "ceiling of A loop-gnet, B loop-gnet: ...".
		for _, name := range names {
			sv := f.Server(name)
			text := prose.ServerCeiling(sv)
			if text == "" {
				continue
			}
			cl := ceils[text]
			if cl == nil {
				cl = &shared{value: sv.NominalCeiling, series: seriesOf[name], hue: hue[name]}
				ceils[text] = cl
				ceilOrder = append(ceilOrder, text)
			}
			cl.who = append(cl.who, run+" "+name)
		}
	}
	for _, text := range ceilOrder {
		cl := ceils[text]
		ceilingSeries(line, cl.series, fmt.Sprintf("ceiling of %s: %s", strings.Join(cl.who, ", "), text), cl.hue, lo, hi, cl.value, false)
	}
	line.SetGlobalOptions(append(frame(id, 400, legend),
		charts.WithXAxisOpts(opts.XAxis{Type: "log", Name: "callers", NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "log", Name: unit}),
	)...)
	if drawn == 0 {
		sec.Missing = "no sweep measurement succeeded in either run"
		return sec
	}
	sec.Element, sec.Script = snippet(line)
	return sec
}
