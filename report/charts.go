package main

import (
	"fmt"
	"html/template"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/go-echarts/go-echarts/v2/render"

	"github.com/bystander-kit/bystander/internal/experiment"
	"github.com/bystander-kit/bystander/internal/results"
)

// maxPoints bounds every series the page draws.
const maxPoints = 4000

// section is one chart (or table) of the page with its caption; Missing
// says why it could not be drawn.
type section struct {
	ID      string
	Title   string
	Caption string
	Element template.HTML
	Script  template.HTML
	Table   *costTable
	Missing string
}

// snippet renders a chart as its element and a script that registers the
// chart's drawing with the page instead of drawing at once: the page draws
// each chart as it nears the screen, so a long report opens at once.
func snippet(r render.Renderer) (template.HTML, template.HTML) {
	s := r.RenderSnippet()
	body := s.Script
	if i := strings.Index(body, ">"); i >= 0 && strings.HasPrefix(strings.TrimSpace(body), "<script") {
		body = body[i+1:]
	}
	body = strings.TrimSuffix(strings.TrimSpace(body), "</script>")
	id := chartID.FindStringSubmatch(s.Element)
	if id == nil {
		panic("report: a chart snippet without an id")
	}
	// go-echarts output: the element, and option JSON it escaped itself.
	return template.HTML(s.Element), template.HTML("<script>bystanderCharts.push({id: \"" + id[1] + "\", draw: function () {" + body + "}});</script>")
}

var chartID = regexp.MustCompile(`id="([A-Za-z0-9_]+)"`)

func initOpts(id string, height int) charts.GlobalOpts {
	return charts.WithInitializationOpts(opts.Initialization{ChartID: id, Width: "100%", Height: fmt.Sprintf("%dpx", height)})
}

var common = []charts.GlobalOpts{
	charts.WithAnimation(false),
	charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}),
	charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "bottom", Type: "scroll"}),
	charts.WithGridOpts(opts.Grid{Left: "8%", Right: "6%", Bottom: "18%", ContainLabel: opts.Bool(true)}),
}

func ms(us float64) float64 { return round(us/1e3, 3) }

func round(v float64, digits int) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', digits, 64), 64)
	return f
}

// of returns the groups of a phase.
func of(gs []*experiment.Group, phase string) []*experiment.Group {
	var out []*experiment.Group
	for _, g := range gs {
		if g.Step.Phase == phase {
			out = append(out, g)
		}
	}
	return out
}

// serverNames lists the servers of groups in first-seen order.
func serverNames(gs []*experiment.Group) []string {
	var names []string
	for _, g := range gs {
		if !slices.Contains(names, g.Step.Server.Name) {
			names = append(names, g.Step.Server.Name)
		}
	}
	return names
}

func tput(r *results.Result) (float64, bool) {
	if r.Load == nil {
		return 0, false
	}
	return r.Load.ThroughputPerS, true
}

func meanBlock(r *results.Result) (float64, bool) {
	if r.Load == nil || r.Load.BlockedSamples == 0 {
		return 0, false
	}
	return r.Load.MeanBlockedNs, true
}

func probeQ(q func(*results.Probe) float64) func(*results.Result) (float64, bool) {
	return func(r *results.Result) (float64, bool) {
		if r.Probe == nil || r.Probe.Completed == 0 {
			return 0, false
		}
		return q(r.Probe), true
	}
}

// 1. /slow throughput against concurrency, with the ceilings.
func throughputChart(gs []*experiment.Group, run *results.Run) section {
	sec := section{ID: "throughput", Title: "1. /slow throughput against concurrency, with the ceilings",
		Caption: fmt.Sprintf("Each server was driven with %s callers on /slow, each call blocking for %s. "+
			"A server cannot beat its workers divided by the block (dashed: 4 loops / %s = %.0f req/s, 200 slots = %.0f req/s), "+
			"nor its callers divided by the block (dotted: Little's law, one request per caller per block). "+
			"The labels give each point's share of the ceiling that binds it. The event loops flatten at their ceiling however many callers come; the pool keeps climbing with them.",
			joinInts(run.Params.Conc), time.Duration(run.Params.BlockNs), time.Duration(run.Params.BlockNs), float64(run.Params.Loops)/(float64(run.Params.BlockNs)/1e9),
			float64(run.Params.PoolSlots)/(float64(run.Params.BlockNs)/1e9))}
	sweep := of(gs, "sweep")
	var ok []*experiment.Group
	for _, g := range sweep {
		if g.OK() {
			ok = append(ok, g)
		}
	}
	if len(ok) == 0 {
		sec.Missing = missing(sweep, "sweep")
		return sec
	}
	line := charts.NewLine()
	line.SetGlobalOptions(append(slices.Clone(common), initOpts(sec.ID, 460),
		charts.WithXAxisOpts(opts.XAxis{Type: "log", Name: "callers", NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "log", Name: "req/s"}),
	)...)
	concs := slices.Clone(run.Params.Conc)
	sort.Ints(concs)
	lo, hi := float64(concs[0]), float64(concs[len(concs)-1])
	for si, name := range serverNames(ok) {
		var data []opts.LineData
		var block []float64
		var workers int
		for _, g := range ok {
			if g.Step.Server.Name != name {
				continue
			}
			workers = g.Step.Server.Workers
			v := experiment.Vals(g.Load, tput)
			if len(v) == 0 {
				continue
			}
			block = append(block, experiment.Vals(g.Load, meanBlock)...)
			label := ""
			for _, m := range g.MS {
				if m.Bound != nil && m.Bound.ShareOfBound > 0 {
					label = fmt.Sprintf("%.0f%% of %s", 100*m.Bound.ShareOfBound, m.Bound.Kind)
				}
			}
			data = append(data, opts.LineData{Name: label, Value: []any{g.Step.Conc, round(results.Median(v), 1)}})
		}
		pos := "top" // alternate so two servers' labels at the same point do not overlap
		if si%2 == 1 {
			pos = "bottom"
		}
		line.AddSeries(name, data, charts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Formatter: "{b}", Position: pos}),
			charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true)}))
		nominal := float64(workers) / (float64(run.Params.BlockNs) / 1e9)
		line.AddSeries(fmt.Sprintf("ceiling %s: %d workers / %s", name, workers, time.Duration(run.Params.BlockNs)),
			[]opts.LineData{{Value: []any{lo, round(nominal, 1)}}, {Value: []any{hi, round(nominal, 1)}}},
			charts.WithLineStyleOpts(opts.LineStyle{Type: "dashed", Width: 2}), charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}))
		if len(block) > 0 {
			mb := results.Median(block)
			measured := float64(workers) / (mb / 1e9)
			line.AddSeries(fmt.Sprintf("ceiling %s: %d workers / measured %.2f ms", name, workers, mb/1e6),
				[]opts.LineData{{Value: []any{lo, round(measured, 1)}}, {Value: []any{hi, round(measured, 1)}}},
				charts.WithLineStyleOpts(opts.LineStyle{Type: "dashed", Width: 1}), charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}))
		}
	}
	var little []opts.LineData
	for _, c := range concs {
		little = append(little, opts.LineData{Value: []any{c, round(float64(c)/(float64(run.Params.BlockNs)/1e9), 1)}})
	}
	line.AddSeries("callers / block (Little's law)", little,
		charts.WithLineStyleOpts(opts.LineStyle{Type: "dotted", Width: 2}), charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}))
	sec.Element, sec.Script = snippet(line)
	return sec
}

// 2. /fast bystander latency against concurrency.
func bystanderChart(gs []*experiment.Group, run *results.Run) section {
	sec := section{ID: "bystander", Title: "2. The bystander: /fast latency while /slow is loaded",
		Caption: "While the callers loaded /slow, one connection asked for /fast every 50 ms. /fast does nothing, " +
			"so its latency is pure waiting: on the loop server it waits behind the blocked loop it shares, on the pool it finds a free slot. " +
			"Latencies are timed from when each probe was due, so a probe held up behind an earlier one counts its whole wait. " +
			"The tooltip gives the probes completed out of those due."}
	sweep := of(gs, "sweep")
	var ok []*experiment.Group
	for _, g := range sweep {
		if len(g.Probe) > 0 {
			ok = append(ok, g)
		}
	}
	if len(ok) == 0 {
		sec.Missing = missing(sweep, "sweep")
		return sec
	}
	concs := slices.Clone(run.Params.Conc)
	sort.Ints(concs)
	var cats []string
	for _, c := range concs {
		cats = append(cats, strconv.Itoa(c))
	}
	line := charts.NewLine()
	line.SetGlobalOptions(append(slices.Clone(common), initOpts(sec.ID, 440),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: "callers on /slow", NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "log", Name: "/fast latency, ms"}),
	)...)
	line.SetXAxis(cats)
	for _, name := range serverNames(ok) {
		for _, q := range []struct {
			name string
			f    func(*results.Probe) float64
		}{{"p50", func(p *results.Probe) float64 { return p.Corrected.P50Us }}, {"p95", func(p *results.Probe) float64 { return p.Corrected.P95Us }},
			{"p99", func(p *results.Probe) float64 { return p.Corrected.P99Us }}} {
			data := make([]opts.LineData, len(concs))
			for i := range data {
				data[i] = opts.LineData{Value: "-"}
			}
			for _, g := range ok {
				if g.Step.Server.Name != name {
					continue
				}
				i := slices.Index(concs, g.Step.Conc)
				v := experiment.Vals(g.Probe, probeQ(q.f))
				if i < 0 || len(v) == 0 {
					continue
				}
				done := experiment.Vals(g.Probe, probeQ(func(p *results.Probe) float64 { return float64(p.Completed) }))
				due := float64(run.Params.WarmupNs+run.Params.DurationNs) / float64(run.Params.ProbeEveryNs)
				data[i] = opts.LineData{Name: fmt.Sprintf("%.0f of %.0f probes", results.Median(done), due), Value: max(ms(results.Median(v)), 0.001)}
			}
			line.AddSeries(name+" "+q.name, data, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true)}))
		}
	}
	sec.Element, sec.Script = snippet(line)
	return sec
}

// 3. /fast latency over time, each sweep run.
func timelineChart(gs []*experiment.Group, run *results.Run) section {
	sec := section{ID: "timeline", Title: "3. /fast latency over time, as it happened",
		Caption: "Every /fast probe of every sweep run, by the moment it was due: the stalls show where they happened. " +
			"On the loop server the probes queue behind each other once one is held up, so the line climbs; on the pool it stays flat. " +
			"Long series are reduced (largest-triangle buckets, which keep the peaks) to at most 4,000 points."}
	sweep := of(gs, "sweep")
	line := charts.NewLine()
	line.SetGlobalOptions(append(slices.Clone(common), initOpts(sec.ID, 440),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: "seconds since the run began", NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "log", Name: "/fast latency, ms"}),
		charts.WithDataZoomOpts(opts.DataZoom{Type: "inside", XAxisIndex: []int{0}}),
	)...)
	n := 0
	for _, g := range sweep {
		if len(g.Probe) == 0 || g.Probe[0].Probe == nil {
			continue
		}
		p := g.Probe[0].Probe
		var pts []point
		for _, pt := range p.Timeline {
			if pt.Error != "" {
				continue
			}
			pts = append(pts, point{X: pt.DueUs / 1e6, Y: max((pt.DoneUs-pt.DueUs)/1e3, 0.001)})
		}
		pts = lttb(pts, maxPoints)
		data := make([]opts.LineData, len(pts))
		for i, q := range pts {
			data[i] = opts.LineData{Value: []any{round(q.X, 3), round(q.Y, 3)}}
		}
		line.AddSeries(fmt.Sprintf("%s, %d callers", g.Step.Server.Name, g.Step.Conc), data,
			charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}))
		n++
	}
	if n == 0 {
		sec.Missing = missing(sweep, "sweep")
		return sec
	}
	sec.Element, sec.Script = snippet(line)
	return sec
}

// 4. Per-connection heatmap: 12 connections by k blocked loops.
func stallCharts(gs []*experiment.Group, run *results.Run) []section {
	stall := of(gs, "stall")
	var out []section
	for _, name := range serverNames(stall) {
		var mine []*experiment.Group
		for _, g := range stall {
			if g.Step.Server.Name == name {
				mine = append(mine, g)
			}
		}
		id := "stall_" + sanitize(name)
		sec := section{ID: id, Title: "4. Who stalls: 12 connections by blocked loops, " + name,
			Caption: fmt.Sprintf("Twelve keep-alive connections called /async (a %s wait that blocks nothing), three on each loop; "+
				"then k further callers kept k loops busy with back-to-back %s /slow calls. Colour is each connection's median /async latency. "+
				"Only the connections that share a blocked loop stall, whatever they ask for: exactly 3k of 12. The pool, given as many callers, stalls none.",
				"5ms", time.Duration(run.Params.StallBlockNs))}
		if name == "pool" {
			sec.Caption = "The same twelve /async connections against the pool, with as many /slow callers as loops were blocked: with 200 slots, nobody waits."
		}
		var xcats []string
		var data []opts.HeatMapData
		var ylabels []string
		col := 0
		for _, g := range mine {
			if len(g.Conns) == 0 || g.Conns[0].PerConn == nil {
				continue
			}
			pc := g.Conns[0].PerConn
			exp := 3 * g.Step.K
			if g.Step.Server.Kind == "pool" {
				exp = 0
			}
			xcats = append(xcats, fmt.Sprintf("k=%d: stalled %d of %d (expected %d)", g.Step.K, pc.Stalled, len(pc.Conns), exp))
			if ylabels == nil {
				for _, c := range pc.Conns {
					ylabels = append(ylabels, fmt.Sprintf("conn %d (loop %d)", c.Conn, c.Loop))
				}
			}
			for i, c := range pc.Conns {
				if i < len(ylabels) {
					data = append(data, opts.HeatMapData{Value: [3]any{col, i, round(c.P50Us/1e3, 2)}})
				}
			}
			col++
		}
		if col == 0 {
			sec.Missing = missing(mine, "stall")
			out = append(out, sec)
			continue
		}
		hm := charts.NewHeatMap()
		hm.SetGlobalOptions(append(slices.Clone(common), initOpts(id, 520),
			charts.WithXAxisOpts(opts.XAxis{Type: "category", Data: xcats, AxisLabel: &opts.AxisLabel{Interval: "0", Rotate: 12}}),
			charts.WithYAxisOpts(opts.YAxis{Type: "category", Data: ylabels}),
			charts.WithVisualMapOpts(opts.VisualMap{Calculable: opts.Bool(true), Min: 0, Max: float32(2 * run.Params.StallBlockNs / 1e6),
				Text: []string{"ms (p50)", ""}, Orient: "horizontal", Left: "center", Top: "top",
				InRange: &opts.VisualMapInRange{Color: []string{"#f7fbff", "#fdae6b", "#e6550d", "#7f2704"}}}),
		)...)
		hm.AddSeries("median /async latency, ms", data, charts.WithLabelOpts(opts.Label{Show: opts.Bool(true)}))
		sec.Element, sec.Script = snippet(hm)
		out = append(out, sec)
	}
	if len(out) == 0 {
		out = append(out, section{ID: "stall", Title: "4. Who stalls", Missing: missing(nil, "stall")})
	}
	return out
}

// 5. Blocking on the loop vs offloaded vs the pool.
func offloadChart(gs []*experiment.Group, run *results.Run) section {
	off := of(gs, "offload")
	sec := section{ID: "offload", Title: "5. Blocking on the loop, offloaded, or on the pool",
		Caption: "The same blocking call at the highest concurrency three ways: on the event loops, handed to a 200-worker pool with the answer going back through the loop, and on the 200-slot pool server. " +
			"Bars are throughput (left axis); the line is the /fast bystander's p95 meanwhile (right axis, log). Moving the call off the loop buys back both."}
	var ok []*experiment.Group
	for _, g := range off {
		if g.OK() {
			ok = append(ok, g)
		}
	}
	if len(ok) == 0 {
		sec.Missing = missing(off, "offload")
		return sec
	}
	var cats []string
	var tp []opts.BarData
	var p50, p95 []opts.LineData
	for _, g := range ok {
		cats = append(cats, fmt.Sprintf("%s (%s %s)", g.Step.Variant, g.Step.Server.Name, g.Step.Endpoint))
		tp = append(tp, opts.BarData{Value: round(results.Median(experiment.Vals(g.Load, tput)), 1)})
		p50 = append(p50, opts.LineData{Value: max(ms(results.Median(experiment.Vals(g.Probe, probeQ(func(p *results.Probe) float64 { return p.Corrected.P50Us })))), 0.001)})
		p95 = append(p95, opts.LineData{Value: max(ms(results.Median(experiment.Vals(g.Probe, probeQ(func(p *results.Probe) float64 { return p.Corrected.P95Us })))), 0.001)})
	}
	bar := charts.NewBar()
	bar.SetGlobalOptions(append(slices.Clone(common), initOpts(sec.ID, 420),
		charts.WithXAxisOpts(opts.XAxis{Type: "category"}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "req/s"}),
	)...)
	bar.SetXAxis(cats)
	bar.ExtendYAxis(opts.YAxis{Type: "log", Name: "/fast ms", Position: "right"})
	bar.AddSeries("/slow throughput, req/s", tp, charts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Position: "top"}))
	l := charts.NewLine()
	l.AddSeries("/fast p50, ms", p50, charts.WithLineChartOpts(opts.LineChart{YAxisIndex: 1}))
	l.AddSeries("/fast p95, ms", p95, charts.WithLineChartOpts(opts.LineChart{YAxisIndex: 1}))
	bar.Overlap(l)
	sec.Element, sec.Script = snippet(bar)
	return sec
}

// 6. The trace waterfall.
func traceChart(gs []*experiment.Group, run *results.Run) section {
	tr := of(gs, "trace")
	sec := section{ID: "trace", Title: "6. Where an /async request's time goes",
		Caption: fmt.Sprintf("Sample /async requests (delay 5ms) taken apart while 8 callers blocked on /slow (%s), as a trace viewer would: "+
			"accepted (sent until the handler ran), the scheduled delay, continuation lateness (how late the continuation ran after the delay), "+
			"and return (continuation until the answer arrived). What no span explains is drawn as a gap. On the loop server the request waits to be accepted and its continuation waits again behind the blocked loop; on the pool both are immediate.",
			time.Duration(run.Params.StallBlockNs))}
	var cats []string
	spans := map[string][]opts.BarData{}
	order := []string{"accepted", "delay", "continuation lateness", "return", "gap"}
	for _, g := range tr {
		if len(g.Trace) == 0 || g.Trace[0].Trace == nil {
			continue
		}
		t := g.Trace[0].Trace
		delay := float64(g.Trace[0].Params.DelayNs) / 1e3
		samples := t.Samples
		// Up to 10 samples per server, evenly spread over the run.
		pick := samples
		if len(samples) > 10 {
			pick = nil
			for i := range 10 {
				pick = append(pick, samples[i*len(samples)/10])
			}
		}
		for i, s := range pick {
			cats = append(cats, fmt.Sprintf("%s #%d (loop %d)", g.Step.Server.Name, i+1, s.Loop))
			if s.Loop < 0 {
				cats[len(cats)-1] = fmt.Sprintf("%s #%d", g.Step.Server.Name, i+1)
			}
			gap := s.TotalUs - s.AcceptedUs - s.ServerUs - s.ReturnUs
			vals := []float64{s.AcceptedUs, delay, s.LatenessUs, s.ReturnUs, gap}
			for j, name := range order {
				spans[name] = append(spans[name], opts.BarData{Value: round(max(vals[j], 0)/1e3, 3)})
			}
		}
	}
	if len(cats) == 0 {
		sec.Missing = missing(tr, "trace")
		return sec
	}
	bar := charts.NewBar()
	bar.SetGlobalOptions(append(slices.Clone(common), initOpts(sec.ID, 40+26*len(cats)+80),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: "ms", NameLocation: "middle", NameGap: 26}),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Data: cats, Inverse: opts.Bool(true)}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
	)...)
	colors := map[string]string{"accepted": "#3182bd", "delay": "#c6dbef", "continuation lateness": "#e6550d", "return": "#31a354", "gap": "#bdbdbd"}
	for _, name := range order {
		bar.AddSeries(name, spans[name], charts.WithBarChartOpts(opts.BarChart{Stack: "total"}),
			charts.WithItemStyleOpts(opts.ItemStyle{Color: colors[name]}))
	}
	sec.Element, sec.Script = snippet(bar)
	return sec
}

// 7. The pool's cliff.
func cliffChart(gs []*experiment.Group, run *results.Run) section {
	cl := of(gs, "cliff")
	sec := section{ID: "cliff", Title: "7. The pool's cliff",
		Caption: fmt.Sprintf("The pool forgives blocking only while it has free slots. With callers at 64%%, 100%% and 150%% of its %d slots (each blocking %s), "+
			"the /fast bystander goes from no wait to waiting in the queue behind the blocked slots: past its size, a pool is a loop too.",
			run.Params.PoolSlots, time.Duration(run.Params.StallBlockNs))}
	var cats []string
	var p50, p95, p99 []opts.BarData
	for _, g := range cl {
		if len(g.Probe) == 0 {
			continue
		}
		cats = append(cats, fmt.Sprintf("%d callers (%s)", g.Step.Conc, g.Step.Variant))
		q := func(f func(*results.Probe) float64) opts.BarData {
			return opts.BarData{Value: max(ms(results.Median(experiment.Vals(g.Probe, probeQ(f)))), 0.001)}
		}
		p50 = append(p50, q(func(p *results.Probe) float64 { return p.Corrected.P50Us }))
		p95 = append(p95, q(func(p *results.Probe) float64 { return p.Corrected.P95Us }))
		p99 = append(p99, q(func(p *results.Probe) float64 { return p.Corrected.P99Us }))
	}
	if len(cats) == 0 {
		sec.Missing = missing(cl, "cliff")
		return sec
	}
	bar := charts.NewBar()
	bar.SetGlobalOptions(append(slices.Clone(common), initOpts(sec.ID, 400),
		charts.WithXAxisOpts(opts.XAxis{Type: "category"}),
		charts.WithYAxisOpts(opts.YAxis{Type: "log", Name: "/fast latency, ms"}),
	)...)
	bar.SetXAxis(cats)
	bar.AddSeries("p50", p50)
	bar.AddSeries("p95", p95)
	bar.AddSeries("p99", p99)
	sec.Element, sec.Script = snippet(bar)
	return sec
}

// missing says why a phase has nothing to draw.
func missing(gs []*experiment.Group, phase string) string {
	for _, g := range gs {
		if g.Why != "" {
			return fmt.Sprintf("the %s phase did not complete: %s", phase, g.Why)
		}
	}
	if len(gs) == 0 {
		return fmt.Sprintf("the %s phase was not run (see --phases and --servers)", phase)
	}
	return fmt.Sprintf("the %s phase left no results", phase)
}

func joinInts(v []int) string {
	var parts []string
	for _, x := range v {
		parts = append(parts, strconv.Itoa(x))
	}
	return strings.Join(parts, ", ")
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}
