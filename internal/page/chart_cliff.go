package page

import (
	"fmt"
	"math"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/palette"
	"github.com/bystander-kit/bystander/internal/words"
)

// 7. The pool's cliff.
func cliffChart(f *findings.Findings) section {
	p := f.Params
	sec := section{ID: "cliff", Title: "7. The pool's cliff",
		Caption: fmt.Sprintf("Each pool with callers at %s of its slots%s, each blocking %s, and the /fast bystander (a probe due every %s, timed from due) meanwhile. %s",
			words.Percents(findings.CliffShares), dbShare(p), p.StallBlock, p.ProbeInterval, claims(f, findings.ClaimCliff))}
	// Each bar in its pool's hue, p50 palest; the legend's greys say which
	// shade is which percentile. The log axis starts at the power of ten
	// below the smallest bar, so every bar stands up from the axis.
	hue := hues(f)
	shades := []float64{0.6, 0.3, 0}
	var cats []string
	bars := make([][]opts.BarData, 3)
	var ok []findings.LoadRow
	smallest := math.Inf(1)
	for _, r := range f.Cliff {
		if !r.Fast.P50.OK() {
			continue
		}
		ok = append(ok, r)
		share := r.Step.Variant
		if findings.DBBinds(r.Step, p.OffloadWorkers) {
			share += fmt.Sprintf(" of %d db conns", r.Step.Server.DBConns)
		}
		cats = append(cats, fmt.Sprintf("%s, %d callers (%s)", r.Step.Server.Name, r.Step.Conc, share))
		for i, v := range []findings.Figure{r.Fast.P50, r.Fast.P95, r.Fast.P99} {
			bars[i] = append(bars[i], opts.BarData{Value: ms(v), ItemStyle: &opts.ItemStyle{Color: palette.Tint(hue[r.Step.Server.Name], shades[i])}})
			smallest = min(smallest, ms(v))
		}
	}
	if len(cats) == 0 {
		sec.Missing = missing(groupsOf(f.Cliff, loadGroup), "cliff")
		return sec
	}
	names := []string{"p50", "p95", "p99"}
	bar := charts.NewBar()
	bar.SetGlobalOptions(append(frame(sec.ID, 340, names),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", AxisLabel: &opts.AxisLabel{Interval: "0"}}),
		charts.WithYAxisOpts(opts.YAxis{Type: "log", Name: "/fast latency from due, ms", Min: logFloor(smallest)}),
	)...)
	bar.SetXAxis(cats)
	for i, n := range names {
		bar.AddSeries(n, bars[i], charts.WithItemStyleOpts(opts.ItemStyle{Color: palette.Tint("#000000", 0.25+shades[i]*0.9)}))
	}
	sec.Notes = saturationNotes(ok, func(r findings.LoadRow) string {
		return fmt.Sprintf("%s at %d callers", r.Step.Server.Name, r.Step.Conc)
	})
	// echarts starts a bar on a log axis at 1 unless the axis says
	// otherwise (startValue): below 1 ms a bar would hang from it.
	sec.Element, sec.Script = snippet(bar, map[string]any{"yAxis": []map[string]any{{"startValue": logFloor(smallest)}}})
	return sec
}

// logFloor is the power of ten at or below v: where a log axis starts so
// that a bar of v stands up from it.
func logFloor(v float64) float64 {
	if v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0.001
	}
	return math.Pow(10, math.Floor(math.Log10(v)))
}

// dbShare says, in a run whose servers call a database, that a pool's
// shares are of its database connections where they are fewer.
func dbShare(p findings.Params) string {
	if p.DBPool == 0 {
		return ""
	}
	return " (of its database connections, where they are fewer)"
}
