package page

import (
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/palette"
	"github.com/bystander-kit/bystander/internal/prose"
)

// saturationNotes says in words which bystanders saturated or were censored.
func saturationNotes(rows []findings.LoadRow, name func(findings.LoadRow) string) []string {
	var notes []string
	for _, r := range rows {
		switch {
		case r.Fast.Saturated:
			notes = append(notes, fmt.Sprintf("%s: %s; %s.", name(r), prose.Saturated(r.Fast), prose.Censored(r.Fast)))
		case prose.Censored(r.Fast) != "":
			notes = append(notes, fmt.Sprintf("%s: %s.", name(r), prose.Censored(r.Fast)))
		}
		if m := prose.Misaligned(r.Fast); m != "" {
			notes = append(notes, fmt.Sprintf("%s: %s.", name(r), m))
		}
	}
	return notes
}

func sweepRows(f *findings.Findings) []findings.LoadRow {
	var out []findings.LoadRow
	for _, r := range f.Sweep {
		out = append(out, r.LoadRow)
	}
	return out
}

// 2. /fast bystander latency against concurrency.
func bystanderChart(f *findings.Findings) section {
	p := f.Params
	sec := section{ID: "bystander", Title: "2. The bystander: /fast latency while /slow is loaded",
		Caption: fmt.Sprintf("While the callers loaded /slow, one connection had a /fast probe due every %s, over the same measured window. /fast does nothing, "+
			"so its latency is pure waiting. "+claims(f, findings.ClaimBystanderWaits)+" "+
			"Solid lines time each probe from when it was due, so a probe held up behind an earlier one counts its whole wait, and a probe still unanswered when the window ended counts at its wait so far; "+
			"dashed lines time from the send, as a prober that ignores the queue would (the published experiment's figure is of that kind). "+
			"The tooltip gives the probes answered out of those due.", p.ProbeInterval)}
	rows := sweepRows(f)
	var ok []findings.LoadRow
	for _, r := range rows {
		if r.Fast.Due.OK() {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		sec.Missing = missing(groupsOf(rows, loadGroup), "sweep")
		return sec
	}
	concs := slices.Clone(p.Conc)
	sort.Ints(concs)
	var cats []string
	for _, c := range concs {
		cats = append(cats, strconv.Itoa(c))
	}
	// One hue per server; the percentile is the line's style, and the
	// figure from the send (which hides the queue) a triangle on its own,
	// so that where it equals the figure from due it is still seen. The
	// legend names the servers, then the styles in grey.
	hue := hues(f)
	names := serverNames(ok, loadGroup)
	type style struct {
		name  string
		v     func(findings.Bystander) findings.Figure
		line  opts.LineStyle
		shape string
		size  int
	}
	styles := []style{
		{"p50 from due", func(b findings.Bystander) findings.Figure { return b.P50 }, opts.LineStyle{Width: 3}, "circle", 7},
		{"p95 from due", func(b findings.Bystander) findings.Figure { return b.P95 }, opts.LineStyle{Width: 2, Type: "dashed"}, "circle", 7},
		{"p99 from due", func(b findings.Bystander) findings.Figure { return b.P99 }, opts.LineStyle{Width: 2, Type: "dotted"}, "circle", 7},
		{"p50 from send", func(b findings.Bystander) findings.Figure { return b.SendP50 }, opts.LineStyle{Width: 0, Opacity: opts.Float(0)}, "triangle", 13},
	}
	legend := slices.Clone(names)
	for _, st := range styles {
		legend = append(legend, st.name)
	}
	line := charts.NewLine()
	line.SetGlobalOptions(append(frame(sec.ID, 380, legend),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: "callers on /slow", NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "log", Name: "/fast latency, ms"}),
	)...)
	line.SetXAxis(cats)
	for _, name := range names {
		for _, st := range styles {
			data := make([]opts.LineData, len(concs))
			for i := range data {
				data[i] = opts.LineData{Value: "-"}
			}
			for _, r := range ok {
				i := slices.Index(concs, r.Step.Conc)
				v := st.v(r.Fast)
				if r.Step.Server.Name != name || i < 0 || !v.OK() {
					continue
				}
				label := fmt.Sprintf("%s: %.0f of %.0f probes answered", st.name, r.Fast.Answered.Median(), r.Fast.Due.Median())
				if r.Fast.Saturated {
					label += ": SATURATED"
				}
				data[i] = opts.LineData{Name: label, Value: ms(v)}
			}
			line.AddSeries(name, data, append(colored(hue[name], st.line),
				charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true), Symbol: st.shape, SymbolSize: st.size}))...)
		}
	}
	// The key: each style once, in grey, with no point of its own.
	for _, st := range styles {
		none := make([]opts.LineData, len(concs))
		for i := range none {
			none[i] = opts.LineData{Value: "-"}
		}
		line.AddSeries(st.name, none, append(colored(palette.Neutral, st.line),
			charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true), Symbol: st.shape, SymbolSize: st.size}))...)
	}
	sec.Notes = saturationNotes(ok, func(r findings.LoadRow) string {
		return fmt.Sprintf("%s at %d callers", r.Step.Server.Name, r.Step.Conc)
	})
	sec.Element, sec.Script = snippet(line)
	return sec
}
