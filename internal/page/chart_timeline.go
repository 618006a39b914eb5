package page

import (
	"fmt"
	"slices"
	"sort"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/palette"
)

// 3. /fast latency over time, each sweep run.
func timelineChart(f *findings.Findings) section {
	sec := section{ID: "timeline", Title: "3. /fast latency over time, as it happened",
		Caption: "Every /fast probe of every sweep run, by the moment it was due, timed from then: the stalls show where they happened. " +
			claims(f, findings.ClaimQueueGrows) + " " +
			"Probes still unanswered when the window ended are drawn as open circles at their wait so far (the true wait was longer), failed ones as crosses. " +
			fmt.Sprintf("The results keep every probe; a series longer than %d points is drawn with the highest point of each stretch, so no spike is lost.", maxPoints)}
	hue := hues(f)
	// Each server in its hue, the fewer callers the paler.
	concs := slices.Clone(f.Params.Conc)
	sort.Ints(concs)
	tint := func(conc int) float64 {
		if len(concs) < 2 {
			return 0
		}
		return 0.55 * float64(len(concs)-1-slices.Index(concs, conc)) / float64(len(concs)-1)
	}
	var legend []string
	line := charts.NewLine()
	n := 0
	var censored, failed []opts.ScatterData
	for _, r := range f.Sweep {
		tl := r.Fast.Timeline
		if tl == nil {
			continue
		}
		var pts []point
		for _, pt := range tl {
			y := max((pt.DoneUs-pt.DueUs)/1e3, 0.001)
			x := round(pt.DueUs/1e6, 3)
			name := fmt.Sprintf("%s, %d callers", r.Step.Server.Name, r.Step.Conc)
			switch {
			case pt.Censored:
				censored = append(censored, opts.ScatterData{Name: name + ": unanswered at the end, waited at least", Value: []any{x, round(y, 3)}})
			case pt.Error != "":
				failed = append(failed, opts.ScatterData{Name: name + ": " + pt.Error, Value: []any{x, round(y, 3)}})
			default:
				pts = append(pts, point{X: pt.DueUs / 1e6, Y: y})
			}
		}
		pts = peaks(pts, maxPoints)
		data := make([]opts.LineData, len(pts))
		for i, q := range pts {
			data[i] = opts.LineData{Value: []any{round(q.X, 3), round(q.Y, 3)}}
		}
		name := fmt.Sprintf("%s, %d callers", r.Step.Server.Name, r.Step.Conc)
		legend = append(legend, name)
		line.AddSeries(name, data, append(colored(palette.Tint(hue[r.Step.Server.Name], tint(r.Step.Conc)), opts.LineStyle{Width: 1.5}),
			charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}))...)
		n++
	}
	if n == 0 {
		sec.Missing = missing(groupsOf(f.Sweep, sweepGroup), "sweep")
		return sec
	}
	if len(censored)+len(failed) > 0 {
		sc := charts.NewScatter()
		if len(censored) > 0 {
			legend = append(legend, censoredName)
			sc.AddSeries(censoredName, limitScatter(censored),
				charts.WithItemStyleOpts(opts.ItemStyle{Color: "transparent", BorderColor: "#b30000", BorderWidth: 1.5}))
		}
		if len(failed) > 0 {
			legend = append(legend, "failed")
			sc.AddSeries("failed", limitScatter(failed), charts.WithScatterChartOpts(opts.ScatterChart{Symbol: "triangle"}),
				charts.WithItemStyleOpts(opts.ItemStyle{Color: "#000000"}))
		}
		line.Overlap(sc)
	}
	line.SetGlobalOptions(append(frame(sec.ID, 380, legend),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: "seconds since the load began", NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "log", Name: "/fast latency from due, ms"}),
		charts.WithDataZoomOpts(opts.DataZoom{Type: "inside", XAxisIndex: []int{0}}),
	)...)
	sec.Element, sec.Script = snippet(line)
	return sec
}

// limitScatter keeps at most maxPoints points, evenly spread.
func limitScatter(d []opts.ScatterData) []opts.ScatterData {
	if len(d) <= maxPoints {
		return d
	}
	out := make([]opts.ScatterData, 0, maxPoints)
	for i := range maxPoints {
		out = append(out, d[i*len(d)/maxPoints])
	}
	return out
}
