package page

import (
	"fmt"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/palette"
)

// 5. Blocking on the loop vs offloaded vs the pool.
func offloadChart(f *findings.Findings) section {
	p := f.Params
	sec := section{ID: "offload", Title: "5. Blocking on the loop, offloaded, or on the pool",
		Caption: fmt.Sprintf("The same %s blocking call at the highest concurrency three ways: /slow on each loop server's loops, /offload handed from them to an offload pool "+
			"with the answer going back through the loop, and /slow on each pool. "+
			"Bars are throughput (left axis); the lines are the /fast bystander's p50 and p95 from due meanwhile (right axis, log). %s",
			p.Block, claims(f, findings.ClaimOffloadHelps))}
	var ok []findings.LoadRow
	for _, r := range f.Offload {
		if r.Throughput.OK() {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		sec.Missing = missing(groupsOf(f.Offload, loadGroup), "offload")
		return sec
	}
	// Each bar in its server's hue, offloaded paler; the bystander's
	// lines in greys, as they are no server's.
	hue := hues(f)
	var cats []string
	var tp []opts.BarData
	var p50, p95 []opts.LineData
	for _, r := range ok {
		cats = append(cats, fmt.Sprintf("%s\n%s %s", r.Step.Variant, r.Step.Server.Name, r.Step.Endpoint))
		c := hue[r.Step.Server.Name]
		if r.Step.Variant == "offloaded" {
			c = palette.Tint(c, palette.Pale)
		}
		tp = append(tp, opts.BarData{Value: round(r.Throughput.Median(), 0), ItemStyle: &opts.ItemStyle{Color: c}})
		p50 = append(p50, opts.LineData{Value: ms(r.Fast.P50)})
		p95 = append(p95, opts.LineData{Value: ms(r.Fast.P95)})
	}
	const tpName, p50Name, p95Name = "/slow throughput, req/s (bars, in each server's hue)", "/fast p50 from due, ms", "/fast p95 from due, ms"
	bar := charts.NewBar()
	bar.SetGlobalOptions(append(frame(sec.ID, 360, []string{tpName, p50Name, p95Name}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", AxisLabel: &opts.AxisLabel{Interval: "0"}}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "req/s"}),
	)...)
	bar.SetXAxis(cats)
	bar.ExtendYAxis(opts.YAxis{Type: "log", Name: "/fast ms", Position: "right"})
	bar.AddSeries(tpName, tp, charts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Position: "top"}),
		charts.WithItemStyleOpts(opts.ItemStyle{Color: palette.Tint(palette.Neutral, 0.3)}))
	l := charts.NewLine()
	l.AddSeries(p50Name, p50, append(colored("#333333", opts.LineStyle{Width: 2}), charts.WithLineChartOpts(opts.LineChart{YAxisIndex: 1, SymbolSize: 9}))...)
	l.AddSeries(p95Name, p95, append(colored("#333333", opts.LineStyle{Width: 2, Type: "dashed"}),
		charts.WithLineChartOpts(opts.LineChart{YAxisIndex: 1, Symbol: "triangle", SymbolSize: 9}))...)
	bar.Overlap(l)
	sec.Notes = saturationNotes(ok, func(r findings.LoadRow) string { return r.Step.Variant + " (" + r.Step.Server.Name + ")" })
	sec.Element, sec.Script = snippet(bar, map[string]any{"xAxis": []map[string]any{{"axisLabel": map[string]any{"lineHeight": 16}}}})
	return sec
}
