package page

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/palette"
	"github.com/bystander-kit/bystander/internal/prose"
	"github.com/bystander-kit/bystander/internal/words"
)

// How the page's charts look, in one place: every legend whole (plain,
// wrapped onto as many rows as it needs, never paginated), each server in
// its one hue (internal/palette) on every chart.

// legendWidth is the narrowest a chart is drawn on a page 1300 px wide
// or a 1600x900 projector page, less the legend's margins, in px; a row of
// the legend is legendRowPx high.
const (
	legendWidth = 900
	legendRowPx = 24
)

// legendRows is how many rows a plain legend of names takes at
// legendWidth: each entry is its icon, its text (12 px type, about 7 px a
// character) and the gap.
func legendRows(names []string) int {
	if len(names) == 0 {
		return 0
	}
	rows, x := 1, 0
	for _, n := range names {
		w := 25 + 5 + 7*utf8.RuneCountInString(n) + 10
		if x > 0 && x+w > legendWidth {
			rows++
			x = 0
		}
		x += w
	}
	return rows
}

// frame sizes a chart for its plot (plotPx high) and its legend of
// names, whole and below it, with the toolbox's one tool: save the chart
// as a PNG named after it, for slides. No names: no legend.
func frame(id string, plotPx int, names []string) []charts.GlobalOpts {
	rows := legendRows(names)
	bottom := 48 + rows*legendRowPx // the x axis's name, then the legend
	legend := opts.Legend{Show: opts.Bool(false)}
	if rows > 0 {
		legend = opts.Legend{Show: opts.Bool(true), Type: "plain", Bottom: "4", Left: "center", Data: names}
	}
	return []charts.GlobalOpts{
		charts.WithAnimation(false),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}),
		charts.WithInitializationOpts(opts.Initialization{ChartID: id, Width: "100%", Height: fmt.Sprintf("%dpx", plotPx+bottom)}),
		charts.WithToolboxOpts(opts.Toolbox{Show: opts.Bool(true), Right: "1%", Feature: &opts.ToolBoxFeature{
			SaveAsImage: &opts.ToolBoxFeatureSaveAsImage{Show: opts.Bool(true), Type: "png", Name: "bystander-" + id, Title: "save as PNG"}}}),
		charts.WithLegendOpts(legend),
		charts.WithGridOpts(opts.Grid{Left: "6%", Right: "4%", Top: "48", Bottom: fmt.Sprint(bottom), ContainLabel: opts.Bool(true)}),
	}
}

// hues is each server's hue in a run.
func hues(fs ...*findings.Findings) map[string]string {
	var s []palette.Server
	for _, f := range fs {
		for _, sv := range f.Servers {
			s = append(s, palette.Server{Name: sv.Name, Kind: sv.Kind})
		}
	}
	return palette.Of(s)
}

// colored draws a series in hue: its line, its symbols and its legend icon.
func colored(hue string, line opts.LineStyle) []charts.SeriesOpts {
	line.Color = hue
	return []charts.SeriesOpts{charts.WithItemStyleOpts(opts.ItemStyle{Color: hue}), charts.WithLineStyleOpts(line)}
}

// ceilingSeries is a ceiling drawn across the chart, from lo to hi, in its
// server's hue and dashed, with its label on the line itself at the right
// end, above it (below, for the thin line of a measured ceiling). name
// is the series' legend name: the server's, so the ceiling comes and
// goes with its server.
func ceilingSeries(line *charts.Line, name, label, hue string, lo, hi, value float64, measured bool) {
	width, pos := float32(2), "top"
	if measured {
		width, pos = 1, "bottom"
	}
	line.AddSeries(name, []opts.LineData{{Value: []any{lo, round(value, 1)}}, {Name: label, Value: []any{hi, round(value, 1)}}},
		append(colored(hue, opts.LineStyle{Type: "dashed", Width: width}),
			// A label is drawn at a symbol: a 1 px one, in the line's hue.
			charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true), Symbol: "circle", SymbolSize: 1}),
			charts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Formatter: "{b}", Position: pos, Align: "right", Color: hue, FontWeight: "bold", LineHeight: 16}))...)
}

// littleName is the legend's name of callers / block, Little's law.
const littleName = "callers / block (Little's law)"

// ceilingLabel is one ceiling line of the throughput chart.
type ceilingLabel struct {
	Server   string // whose hue and legend entry it takes
	Label    string
	Value    float64
	Measured bool
}

// ceilingLabels are the ceilings of the servers names, in order: servers
// with the same ceiling share one line and one label ("ceiling of loop,
// netty: 4 loops / 5ms = 800 req/s"), so no two labels lie on each other;
// each ceiling from the block the server measured is said in that label,
// or has its own line when it is findings.MeasuredApart or more away.
func ceilingLabels(f *findings.Findings, names []string) []ceilingLabel {
	type group struct {
		servers, near []string
		value         float64
	}
	var order []string
	groups := map[string]*group{}
	var apart []ceilingLabel
	for _, n := range names {
		sv := f.Server(n)
		text := prose.ServerCeiling(sv)
		if text == "" {
			continue
		}
		g := groups[text]
		if g == nil {
			g = &group{value: sv.NominalCeiling}
			groups[text] = g
			order = append(order, text)
		}
		g.servers = append(g.servers, n)
		if sv.MeasuredCeiling == 0 {
			continue
		}
		m := fmt.Sprintf("%s %s", n, words.Thousands(sv.MeasuredCeiling))
		if len(names) == 1 {
			m = words.Thousands(sv.MeasuredCeiling)
		}
		if sv.MeasuredFar() {
			apart = append(apart, ceilingLabel{Server: n, Value: sv.MeasuredCeiling, Measured: true,
				Label: fmt.Sprintf("%s as measured: %d / %.2f ms = %s", n, sv.SweepWorkers, float64(sv.MeasuredBlock)/1e6, words.PerS(sv.MeasuredCeiling))})
			continue
		}
		g.near = append(g.near, m)
	}
	var out []ceilingLabel
	for _, text := range order {
		g := groups[text]
		label := fmt.Sprintf("ceiling of %s: %s", strings.Join(g.servers, ", "), text)
		if len(g.near) > 0 {
			label += "\nfrom the block measured: " + strings.Join(g.near, ", ")
		}
		out = append(out, ceilingLabel{Server: g.servers[0], Label: label, Value: g.value})
	}
	return append(out, apart...)
}
