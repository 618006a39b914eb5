package page

import (
	"fmt"
	"strings"
	"time"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/palette"
	"github.com/bystander-kit/bystander/internal/prose"
	"github.com/bystander-kit/bystander/internal/stall"
	"github.com/bystander-kit/bystander/internal/words"
)

// asIsSections are the servers measured as they are (run.sh --load), a
// section each: its sweep against the ceiling inferred from it, its
// bystander meanwhile, who stalled at each step, and its class.
func asIsSections(f *findings.Findings) []section {
	var out []section
	hue := hues(f)
	for _, a := range f.AsIs {
		out = append(out, asIsSection(f, a, hue[a.Server]))
	}
	return out
}

func asIsSection(f *findings.Findings, a findings.AsIs, hue string) section {
	name := a.Server
	sec := section{ID: "asis_" + sanitize(name), Title: fmt.Sprintf("1. %s as it is: its own call, and what it does to everyone else", name),
		Caption: fmt.Sprintf("%s was measured as it is, without the protocol: the sweep loaded it with its own %s at 1 caller and at each concurrency (solid, left axis), "+
			"while its bystander %s was probed every %s on one connection (its median from due: dotted, right axis) and every 10ms on 12 more, opened and timed unloaded before the load. "+
			"From the sweep alone: the call's own time %s (the load's median at 1 caller); its plateau %s; it behaves as %s; its ceiling %s (dashed). "+
			"The table says which of the 12 connections stalled at each step: %s.",
			name, a.Load, a.Bystander, f.Params.ProbeInterval, callText(a), prose.AsIsPlateau(a), prose.AsIsWorkers(a), prose.AsIsCeiling(a), stall.RuleClient)}
	sec.Notes = append(sec.Notes, fmt.Sprintf("Its class: %s: %s.", a.Class, prose.AsIsClass(a)), prose.AsIsCPU(a)+".")
	sec.Notes = append(sec.Notes, watchNotes(a)...)
	sec.Grid = &grid{Head: []string{"callers", "req/s", "load p50", "not answered", "bound", "bystander p50 from due", "stalled", "which", "stalled wait", "others", "unloaded"}}
	var tp, under, fast []opts.LineData
	lo, hi := 0.0, 0.0
	for _, st := range a.Steps {
		at := words.Plural(st.Step.Conc, "caller")
		if !st.OK() {
			sec.Grid.Rows = append(sec.Grid.Rows, []string{fmt.Sprint(st.Step.Conc), prose.Short(st.Group), "", "", "", "", "", "", "", "", ""})
			continue
		}
		if st.Said != "" {
			sec.Notes = append(sec.Notes, fmt.Sprintf("At %s: %s.", at, st.Said))
		}
		for _, u := range st.Unjudged {
			sec.Notes = append(sec.Notes, fmt.Sprintf("At %s: %s.", at, prose.AsIsUnjudged(st, u)))
		}
		if c := prose.AsIsClosed(st); c != "" {
			sec.Notes = append(sec.Notes, fmt.Sprintf("At %s: %s.", at, c))
		}
		if n := st.NotAnswered(); n > 0 {
			sec.Notes = append(sec.Notes, fmt.Sprintf("At %s: %s of the load's requests were not answered 2xx or 3xx: counted apart, never as answers.", at, words.Thousands(float64(n))))
		}
		bound := "-"
		if b := st.Bound(); b != nil {
			bound = prose.BoundLine(b)
		}
		sec.Grid.Rows = append(sec.Grid.Rows, []string{fmt.Sprint(st.Step.Conc), prose.JoinFigure(st.Throughput), msText(st.LoadP50), fmt.Sprint(st.NotAnswered()), bound,
			msText(st.Fast.P50), prose.AsIsStalled(st), words.Dash(prose.AsIsWho(st)), msText(st.StalledWait), msText(st.OthersWait), msText(st.Unloaded)})
		if !st.Throughput.OK() {
			continue
		}
		c := float64(st.Step.Conc)
		if lo == 0 || c < lo {
			lo = c
		}
		hi = max(hi, c)
		label := prose.AsIsStalled(st) + " stalled"
		if !st.Stalled.OK() {
			label = prose.AsIsStalled(st)
		}
		point := []any{st.Step.Conc, round(st.Throughput.Median(), 1)}
		if a.Ceiling > 0 && st.Throughput.Median() >= a.Ceiling/nearCeiling {
			tp = append(tp, opts.LineData{Value: point})
			under = append(under, opts.LineData{Name: label, Value: point})
		} else {
			tp = append(tp, opts.LineData{Name: label, Value: point})
		}
		if st.Fast.P50.OK() {
			fast = append(fast, opts.LineData{Value: []any{st.Step.Conc, ms(st.Fast.P50)}})
		}
	}
	if len(tp) == 0 {
		sec.Missing = fmt.Sprintf("no step of %s's sweep completed", name)
		return sec
	}
	const tpKey, fastKey = "req/s (solid, left)", "bystander p50 from due, ms (dotted, right)"
	line := charts.NewLine()
	line.SetGlobalOptions(append(frame(sec.ID+"_chart", 360, []string{name, tpKey, fastKey}),
		charts.WithXAxisOpts(opts.XAxis{Type: "log", Name: "callers", NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "log", Name: "req/s"}),
	)...)
	line.ExtendYAxis(opts.YAxis{Type: "log", Name: "bystander ms", Position: "right"})
	line.AddSeries(name, tp, append(colored(hue, opts.LineStyle{Width: 3}),
		charts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Formatter: "{b}", Position: "top"}),
		charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true), SymbolSize: 8}))...)
	if len(under) > 0 {
		// The steps near the ceiling are labelled under their points, its
		// label being over its line: a series of those labels alone.
		line.AddSeries(name, under, append(colored(hue, opts.LineStyle{Width: 0}),
			charts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Formatter: "{b}", Position: "bottom"}),
			// A label is drawn at a symbol: a 1 px one, under the step's own.
			charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true), Symbol: "circle", SymbolSize: 1}))...)
	}
	line.AddSeries(name, fast, append(colored(hue, opts.LineStyle{Width: 2, Type: "dotted"}),
		charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true), Symbol: "triangle", SymbolSize: 9, YAxisIndex: 1}))...)
	if a.Ceiling > 0 {
		ceilingSeries(line, name, "ceiling: "+prose.AsIsCeiling(a), hue, lo, max(hi, lo*2), a.Ceiling, false)
	}
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

// nearCeiling: a step whose throughput is over the ceiling / this is
// labelled under its point, away from the ceiling's label over its line.
const nearCeiling = 3

// msText is a figure in us as milliseconds, "-" without one.
func msText(v findings.Figure) string {
	if !v.OK() {
		return "-"
	}
	return time.Duration(v.Median() * 1e3).Round(10 * time.Microsecond).String()
}

func callText(a findings.AsIs) string {
	if !a.Call.OK() {
		return "not measured"
	}
	return msText(a.Call)
}

// watchNotes say its top step watched: what held its threads (the
// culprit first), the limits met, what watching cost; or why it was not
// watched. What a recording says is a stranger's text: the template
// escapes it.
func watchNotes(a findings.AsIs) []string {
	lines := prose.AsIsWatchLines(a)
	if !a.Watch.Watched() {
		for i, l := range lines {
			lines[i] = strings.TrimPrefix(strings.TrimPrefix(l, "not watched: "), "watch: ")
		}
		return []string{"Not watched: " + strings.Join(lines, "; ") + "."}
	}
	out := []string{fmt.Sprintf("%s: %s.", words.Capital(prose.AsIsWatchHeading(a.Watch)), lines[0])}
	for _, l := range lines[1:] {
		out = append(out, words.Capital(l)+".")
	}
	return out
}
