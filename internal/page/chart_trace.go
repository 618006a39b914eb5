package page

import (
	"fmt"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/bystander-kit/bystander/internal/findings"
)

// 6. The trace waterfall.
func traceChart(f *findings.Findings) section {
	p := f.Params
	var counts []string
	for _, r := range f.Trace {
		if r.Total.N.OK() {
			counts = append(counts, fmt.Sprintf("%s %.0f", r.Step.Server.Name, r.Total.N.Median()))
		}
	}
	// How many samples each server measured, said where there are any.
	of := ""
	if len(counts) > 0 {
		of = fmt.Sprintf(", of the samples measured (%s)", strings.Join(counts, ", "))
	}
	sec := section{ID: "trace", Title: "6. Where an /async request's time goes",
		Caption: fmt.Sprintf("Sample /async requests (delay %s) taken apart on %d connections per loop while %d callers blocked on /slow (%s), as a trace viewer would: "+
			"accepted (sent until the handler ran), the scheduled delay, continuation lateness (how late the continuation ran after the delay), "+
			"and return (continuation until the answer arrived); together they are the request's whole time. %d requests per server are drawn, evenly spread over the window%s. %s",
			p.Delay, p.TraceConns/max(p.Loops, 1), p.TraceCallers, p.StallBlock, findings.WaterfallSamples, of, claims(f, findings.ClaimTraceTwice))}
	var cats []string
	spans := map[string][]opts.BarData{}
	order := []string{"accepted", "delay", "continuation lateness", "return"}
	for _, r := range f.Trace {
		delay := float64(r.Delay) / 1e3
		for i, s := range r.Waterfall {
			c := fmt.Sprintf("%s #%d (loop %d)", r.Step.Server.Name, i+1, s.Loop)
			if s.Loop < 0 {
				c = fmt.Sprintf("%s #%d", r.Step.Server.Name, i+1)
			}
			cats = append(cats, c)
			vals := []float64{s.AcceptedUs, delay, s.LatenessUs, s.ReturnUs}
			for j, name := range order {
				spans[name] = append(spans[name], opts.BarData{Value: round(max(vals[j], 0)/1e3, 3)})
			}
		}
	}
	if len(cats) == 0 {
		sec.Missing = missing(groupsOf(f.Trace, func(r findings.TraceRow) *findings.Group { return r.Group }), "trace")
		return sec
	}
	bar := charts.NewBar()
	bar.SetGlobalOptions(append(frame(sec.ID, 40+26*len(cats), order),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: "ms", NameLocation: "middle", NameGap: 26}),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Data: cats, Inverse: opts.Bool(true)}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
	)...)
	// Spans, not servers: greys and a purple, so no span looks like a
	// server's hue.
	colors := map[string]string{"accepted": "#969696", "delay": "#e0e0e0", "continuation lateness": "#6a3d9a", "return": "#525252"}
	for _, name := range order {
		bar.AddSeries(name, spans[name], charts.WithBarChartOpts(opts.BarChart{Stack: "total"}),
			charts.WithItemStyleOpts(opts.ItemStyle{Color: colors[name]}))
	}
	sec.Element, sec.Script = snippet(bar)
	return sec
}
