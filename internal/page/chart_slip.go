package page

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/palette"
	"github.com/bystander-kit/bystander/internal/prose"
)

// slipStepName is the legend's name of the moment the call slows.
const slipStepName = "the call slows"

// 7b and 7c. The bad afternoon: throughput and the bystander as the call
// slows mid-window.
func slipCharts(f *findings.Findings) []section {
	var ok []findings.SlipRow
	for _, r := range f.Slip {
		if len(r.Ticks) > 0 && r.Before.PerS.OK() && r.After.PerS.OK() {
			ok = append(ok, r)
		}
	}
	if len(f.Slip) == 0 && !slices.Contains(f.Run.Params.Phases, "slip") {
		return nil // not asked for (a run before the phase, or --phases): nothing to say
	}
	// The captions say what the phase asked for (run.json's blocks: a
	// server measured as it is asks none) at the first drawn server's
	// callers and steps.
	first := findings.SlipRow{}
	if len(ok) > 0 {
		first = ok[0]
	} else if len(f.Slip) > 0 {
		first = f.Slip[0]
	}
	tput, fast := slipSections(f, first)
	if len(ok) == 0 {
		groups := make([]*findings.Group, 0, len(f.Slip))
		for _, r := range f.Slip {
			groups = append(groups, r.Group)
		}
		tput.Missing = missing(groups, "slip")
		for _, r := range f.Slip {
			if r.OK() && r.NotSplit != findings.SlipSplit {
				tput.Missing = prose.SlipSentence(r)
			}
		}
		fast.Missing = tput.Missing
		return []section{tput, fast}
	}
	hue := hues(f)
	// x is seconds from the step: each server's window has its own length.
	from, end := 0.0, 0.0
	for _, r := range ok {
		from = math.Min(from, -r.At.Seconds())
		end = math.Max(end, (r.Step.Duration - r.At).Seconds())
	}
	// The axis from and to whole half seconds: no tick label crowds its end.
	from, end = math.Floor(from*2)/2, math.Ceil(end*2)/2
	slipThroughput(&tput, ok, first, hue, from, end)
	slipFast(&fast, ok, first, hue, from, end)
	return []section{tput, fast}
}

// slipSections are the slip's two sections, captioned from the first
// server's slip, without their charts.
func slipSections(f *findings.Findings, first findings.SlipRow) (tput, fast section) {
	var said []string
	for _, r := range f.Slip {
		if s := prose.SlipSentence(r); s != "" {
			said = append(said, s)
		}
	}
	tput = section{ID: "slip", Title: "7b. The bad afternoon: the call slows tenfold, traffic does not change",
		Caption: fmt.Sprintf("Each server loaded with %d callers on /slow asking for %s; %s (the grey line, at 0) the same callers ask for %s: "+
			"the traffic did not change, the call did. Each window is long enough for the requests queued at the step to drain (on the loops, callers / loops of the slowed call) "+
			"and leave the after side 0.8 s or more. Each line is the answers of one %s step, as req/s (the median over the repetitions); "+
			"each dashed step is the ceiling that binds it, in the server's colour and named below the chart: its workers / the asked block, or its callers / the block where they are fewer "+
			"(a closed load never has more requests in flight than callers). Each side is measured on its own against its ceiling; the after side starts once the last "+
			"answer asked before the step has come back (the requests queued at the step drain first).",
			first.Step.Conc, f.Params.Block, prose.SlipMoment(f), f.Params.SlipBlock, first.TickWidth) + " In this run: " + strings.Join(said, " ")}
	fast = section{ID: "slip_fast", Title: "7c. The bad afternoon: the /fast bystander meanwhile",
		Caption: fmt.Sprintf("The slowest /fast probe due in each %s step (a probe due every %s on one connection, timed from when it was due; the median over the repetitions), "+
			"in each server's colour; the grey line is the step. A probe still unanswered when the window ended is drawn as an open circle at its wait so far: "+
			"the true wait was longer.", first.TickWidth, f.Params.ProbeInterval)}
	return tput, fast
}

// slipX is a tick's middle in seconds from r's step.
func slipX(r findings.SlipRow, t findings.SlipTick) float64 {
	return round(float64(t.TMs)/1e3+r.TickWidth.Seconds()/2-r.At.Seconds(), 3)
}

// slipThroughput draws each server's answers per second through its slip
// (ok, its x axis from and to end) into tput, with the ceilings' steps; the
// step is labelled with the first server's blocks.
func slipThroughput(tput *section, ok []findings.SlipRow, first findings.SlipRow, hue map[string]string, from, end float64) {
	var names []string
	lo, hi := math.Inf(1), 0.0
	for _, r := range ok {
		names = append(names, r.Step.Server.Name)
		lo = math.Min(lo, r.After.Ceiling)
		hi = math.Max(hi, r.Before.Ceiling)
		for _, t := range r.Ticks {
			if t.PerS > 0 {
				lo, hi = math.Min(lo, t.PerS), math.Max(hi, t.PerS)
			}
		}
	}
	line := charts.NewLine()
	for _, r := range ok {
		name := r.Step.Server.Name
		// Every series bounded: a long window, or a stranger's run, may hold
		// more steps than a chart draws (the highest of each stretch kept).
		var pts []point
		for _, t := range r.Ticks {
			pts = append(pts, point{X: slipX(r, t), Y: max(t.PerS, 0.1)})
		}
		var data []opts.LineData
		for _, q := range peaks(pts, maxPoints) {
			data = append(data, opts.LineData{Value: []any{q.X, round(q.Y, 1)}})
		}
		line.AddSeries(name, data, append(colored(hue[name], opts.LineStyle{Width: 2.5}),
			charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}))...)
	}
	// The ceilings' steps: servers with the same step share one line and
	// one label, so no two labels lie on each other.
	type step struct {
		servers    []string
		text       string
		from, to   float64
		start, end float64 // seconds from the step
	}
	var steps []step
	for _, r := range ok {
		text := prose.SlipCeiling(r)
		i := -1
		for j, s := range steps {
			if s.text == text {
				i = j
			}
		}
		if i < 0 {
			steps = append(steps, step{text: text, from: r.Before.Ceiling, to: r.After.Ceiling, start: -r.At.Seconds(), end: (r.Step.Duration - r.At).Seconds()})
			i = len(steps) - 1
		}
		steps[i].servers = append(steps[i].servers, r.Step.Server.Name)
	}
	// Each step is named in the legend, dashed in its server's colour: a
	// label on the chart would lie on some server's points.
	var stepNames []string
	for _, s := range steps {
		label := strings.Join(s.servers, ", ") + ": " + s.text
		stepNames = append(stepNames, label)
		line.AddSeries(label, []opts.LineData{
			{Value: []any{round(s.start, 3), round(s.from, 1)}}, {Value: []any{0, round(s.from, 1)}},
			{Value: []any{0, round(s.to, 1)}}, {Value: []any{round(s.end, 3), round(s.to, 1)}},
		}, append(colored(hue[s.servers[0]], opts.LineStyle{Type: "dashed", Width: 1.5}),
			charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}))...)
	}
	floor, top := logFloor(lo), math.Pow(10, math.Ceil(math.Log10(hi*1.5)))
	stepLine(line, floor, top, fmt.Sprintf("%s -> %s", first.Before.Block, first.After.Block))
	line.SetGlobalOptions(append(frame(tput.ID, 380, append(append(names, stepNames...), slipStepName)),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: "seconds from the step", NameLocation: "middle", NameGap: 28, Min: round(from, 3), Max: round(end, 3)}),
		charts.WithYAxisOpts(opts.YAxis{Type: "log", Name: "req/s in each step", Min: floor, Max: top}),
	)...)
	tput.Element, tput.Script = snippet(line)
}

// slipFast draws the /fast bystander through each server's slip (ok, its
// x axis from and to end) into fast, or says none was due; the step is
// labelled with the first server's blocks.
func slipFast(fast *section, ok []findings.SlipRow, first findings.SlipRow, hue map[string]string, from, end float64) {
	var names []string
	for _, r := range ok {
		names = append(names, r.Step.Server.Name)
	}
	fl := charts.NewLine()
	var censored []opts.ScatterData
	fastLo, fastHi := math.Inf(1), 0.0
	for _, r := range ok {
		name := r.Step.Server.Name
		var pts []point
		for _, t := range r.Ticks {
			if t.FastMaxUs <= 0 {
				continue
			}
			tx, y := slipX(r, t), round(max(t.FastMaxUs/1e3, 0.001), 3)
			fastLo, fastHi = math.Min(fastLo, y), math.Max(fastHi, y)
			if t.FastCensored {
				censored = append(censored, opts.ScatterData{Name: name + ": unanswered at the end, waited at least", Value: []any{tx, y}})
			}
			pts = append(pts, point{X: tx, Y: y})
		}
		var data []opts.LineData
		for _, q := range peaks(pts, maxPoints) {
			data = append(data, opts.LineData{Value: []any{q.X, q.Y}})
		}
		fl.AddSeries(name, data, append(colored(hue[name], opts.LineStyle{Width: 2}),
			charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}))...)
	}
	if fastHi == 0 {
		fast.Missing = "no /fast probe was due in the slip's windows"
		return
	}
	legend := append(names, slipStepName)
	if len(censored) > 0 {
		sc := charts.NewScatter()
		legend = append(legend, censoredName)
		sc.AddSeries(censoredName, limitScatter(censored), charts.WithItemStyleOpts(opts.ItemStyle{Color: "transparent", BorderColor: "#b30000", BorderWidth: 1.5}))
		fl.Overlap(sc)
	}
	ffloor, ftop := logFloor(fastLo), math.Pow(10, math.Ceil(math.Log10(fastHi*1.5)))
	stepLine(fl, ffloor, ftop, fmt.Sprintf("%s -> %s", first.Before.Block, first.After.Block))
	fl.SetGlobalOptions(append(frame(fast.ID, 320, legend),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: "seconds from the step", NameLocation: "middle", NameGap: 28, Min: round(from, 3), Max: round(end, 3)}),
		charts.WithYAxisOpts(opts.YAxis{Type: "log", Name: "slowest /fast from due, ms", Min: ffloor, Max: ftop}),
	)...)
	fast.Element, fast.Script = snippet(fl)
}

// stepLine draws the moment the call slows: a grey vertical line from lo
// to hi at 0, labelled at its top, to its right: beside the line, not on
// it (a point's label "insideEndTop", a markLine's position, was drawn
// from the point itself, the line through its first letters).
func stepLine(line *charts.Line, lo, hi float64, label string) {
	line.AddSeries(slipStepName, []opts.LineData{{Value: []any{0, lo}}, {Name: "the call: " + label, Value: []any{0, hi}}},
		append(colored(palette.Tint("#000000", 0.45), opts.LineStyle{Type: "dotted", Width: 1.5}),
			charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true), Symbol: "circle", SymbolSize: 1}),
			charts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Formatter: "{b}", Position: "right", VerticalAlign: "top", Color: "#555555"}))...)
}
