package page

import (
	"slices"
	"sort"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/palette"
	"github.com/bystander-kit/bystander/internal/prose"
	"github.com/bystander-kit/bystander/internal/words"
)

// 10. What each server does with a blocking call: the classification,
// and /slow and the bystander of every server on one chart.
func classesSection(f *findings.Findings) section {
	sec := section{ID: "classes", Title: "10. What each server does with a blocking call",
		Caption: "Each server as this run measured it, not as its documentation says: " + prose.ClassesText + ". " +
			"The chart sets every server's /slow throughput against callers (solid, left axis) beside the /fast bystander's p50 from due meanwhile " +
			"(dotted, right axis), each server in its colour, each ceiling (workers / block) dashed and labelled on its line."}
	cs := prose.Classes(f)
	if len(cs) == 0 {
		sec.Missing = "no server was measured"
		return sec
	}
	sec.Grid = &grid{Head: []string{"server", "class", "what the run showed", "/slow at its most callers", "/fast p50 meanwhile"}}
	for _, c := range cs {
		sec.Grid.Rows = append(sec.Grid.Rows, []string{c.Server, c.Class, c.Text, words.Dash(c.Sweep), words.Dash(c.Fast)})
	}
	var ok []findings.SweepRow
	for _, r := range f.Sweep {
		if r.Throughput.OK() {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		return sec
	}
	hue := hues(f)
	names := serverNames(ok, sweepGroup)
	const tpKey, fastKey = "/slow req/s (solid, left)", "/fast p50 from due, ms (dotted, right)"
	line := charts.NewLine()
	line.SetGlobalOptions(append(frame("classes_chart", 380, append(slices.Clone(names), tpKey, fastKey)),
		charts.WithXAxisOpts(opts.XAxis{Type: "log", Name: "callers", NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "log", Name: "req/s"}),
	)...)
	line.ExtendYAxis(opts.YAxis{Type: "log", Name: "/fast ms", Position: "right"})
	concs := slices.Clone(f.Params.Conc)
	sort.Ints(concs)
	lo, hi := float64(concs[0]), float64(concs[len(concs)-1])
	for _, name := range names {
		var tp, fast []opts.LineData
		for _, r := range ok {
			if r.Step.Server.Name != name {
				continue
			}
			tp = append(tp, opts.LineData{Name: boundLabel(r), Value: []any{r.Step.Conc, round(r.Throughput.Median(), 1)}})
			if r.Fast.P50.OK() {
				fast = append(fast, opts.LineData{Value: []any{r.Step.Conc, ms(r.Fast.P50)}})
			}
		}
		line.AddSeries(name, tp, append(colored(hue[name], opts.LineStyle{Width: 3}),
			charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true), SymbolSize: 8}))...)
		line.AddSeries(name, fast, append(colored(hue[name], opts.LineStyle{Width: 2, Type: "dotted"}),
			charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true), Symbol: "triangle", SymbolSize: 9, YAxisIndex: 1}))...)
	}
	for _, c := range ceilingLabels(f, names) {
		if !c.Measured {
			ceilingSeries(line, c.Server, c.Label, hue[c.Server], lo, hi, c.Value, false)
		}
	}
	// The key: each style once, in grey, with no point of its own.
	for _, k := range []struct {
		name  string
		style opts.LineStyle
		shape string
	}{{tpKey, opts.LineStyle{Width: 3}, "circle"}, {fastKey, opts.LineStyle{Width: 2, Type: "dotted"}, "triangle"}} {
		line.AddSeries(k.name, []opts.LineData{{Value: []any{lo, "-"}}}, append(colored(palette.Neutral, k.style),
			charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true), Symbol: k.shape, SymbolSize: 9}))...)
	}
	sec.Element, sec.Script = snippet(line)
	return sec
}
