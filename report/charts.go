package main

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/go-echarts/go-echarts/v2/render"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/htmlsafe"
	"github.com/bystander-kit/bystander/internal/palette"
	"github.com/bystander-kit/bystander/internal/stall"
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
	Grid    *grid // a plain table (the comparison)
	// Fold, when set, folds the table under a line that says this.
	Fold    string
	Missing string
	// Notes are said in words under the chart: saturation, censoring.
	Notes []string
}

// snippet renders a chart as its element and a script that registers the
// chart's drawing with the page instead of drawing at once: the page draws
// each chart as it nears the screen, so a long report opens at once.
//
// A patch, when given, is set on the chart after its options: options
// go-echarts has no field for (a log axis's startValue), as JSON.
func snippet(r render.Renderer, patch ...any) (template.HTML, template.HTML) {
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
	// go-echarts writes the options' JSON unescaped (JSONNotEscaped), and
	// server names come from a run directory, perhaps a stranger's: every
	// string in the script is escaped so that none can end it.
	safe, err := htmlsafe.ScriptStrings(body)
	if err != nil {
		panic("report: a chart's script: " + err.Error())
	}
	for _, p := range patch {
		js, err := json.Marshal(p)
		if err != nil || !strings.Contains(safe, "let goecharts_"+id[1]+" = ") {
			panic(fmt.Sprintf("report: a patch of chart %s: %v", id[1], err))
		}
		safe += "\ngoecharts_" + id[1] + ".setOption(" + string(js) + ");"
	}
	return template.HTML(s.Element), template.HTML("<script>bystanderCharts.push({id: \"" + id[1] + "\", draw: function () {" + safe + "}});</script>")
}

var chartID = regexp.MustCompile(`id="([A-Za-z0-9_]+)"`)

// ms is a median in us as milliseconds for a log axis (never 0).
func ms(f findings.Figure) float64 { return max(round(f.Median()/1e3, 3), 0.001) }

func round(v float64, digits int) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', digits, 64), 64)
	return f
}

// serverNames lists the servers of groups in first-seen order.
func serverNames[R any](rows []R, g func(R) *findings.Group) []string {
	var names []string
	for _, r := range rows {
		if n := g(r).Step.Server.Name; !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

func groupsOf[R any](rows []R, g func(R) *findings.Group) []*findings.Group {
	var out []*findings.Group
	for _, r := range rows {
		out = append(out, g(r))
	}
	return out
}

func sweepGroup(r findings.SweepRow) *findings.Group { return r.Group }
func loadGroup(r findings.LoadRow) *findings.Group   { return r.Group }

// 1. /slow throughput against concurrency, with the ceilings.
func throughputChart(f *findings.Findings) section {
	p := f.Params
	var ceilings []string
	for _, sv := range f.Servers {
		if c := sv.CeilingText(); c != "" && slices.Contains(sv.Phases, "sweep") {
			ceilings = append(ceilings, sv.Name+": "+c)
		}
	}
	sec := section{ID: "throughput", Title: fmt.Sprintf("1. %s throughput against concurrency, with the ceilings", p.SweepEndpoint),
		Caption: fmt.Sprintf("Each server was driven with %s callers on %s, each call blocking for %s (%s mode). "+
			"A server cannot beat its workers divided by the block (dashed, in the server's colour and labelled on the line: %s; thin dashed: from the block the servers measured), "+
			"nor its callers divided by the block (dotted: Little's law, one request per caller per block). "+
			"The labels give each point's share of the ceiling that binds it, decided from the measured ceilings and the machine's measured use "+
			"(points that lie together share one label; the tooltip gives each). ",
			findings.JoinInts(p.Conc, ", "), p.SweepEndpoint, p.Block, p.BlockMode, orNone(strings.Join(ceilings, ", "), "no server's workers are known")) +
			claims(f, findings.ClaimLoopsFlatten, findings.ClaimPoolClimbs)}
	if p.SweepEndpoint == "/offload" {
		sec.Caption = fmt.Sprintf("This run's sweep loaded /offload, the fix: the same blocking call made on an offload pool of %d workers, the answer written back by the loop; "+
			"the loop server's ceiling is then that pool's workers / block. ", p.OffloadWorkers) + sec.Caption
	}
	var ok []findings.SweepRow
	for _, r := range f.Sweep {
		if r.Throughput.OK() {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		sec.Missing = findings.Missing(groupsOf(f.Sweep, sweepGroup), "sweep")
		return sec
	}
	hue := hues(f)
	names := serverNames(ok, sweepGroup)
	line := charts.NewLine()
	line.SetGlobalOptions(append(frame(sec.ID, 400, append(slices.Clone(names), littleName)),
		charts.WithXAxisOpts(opts.XAxis{Type: "log", Name: "callers", NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "log", Name: "req/s"}),
	)...)
	concs := slices.Clone(p.Conc)
	sort.Ints(concs)
	lo, hi := float64(concs[0]), float64(concs[len(concs)-1])
	pointLabels := boundLabels(ok, func(r findings.SweepRow) string { return labelPosition(f.Server(r.Step.Server.Name).Kind) })
	for _, name := range names {
		var data []opts.LineData
		sv := f.Server(name)
		for i, r := range ok {
			if r.Step.Server.Name != name {
				continue
			}
			data = append(data, opts.LineData{Name: boundLabel(r), Value: []any{r.Step.Conc, round(r.Throughput.Median(), 1), pointLabels[i]}})
		}
		line.AddSeries(name, data, append(colored(hue[name], opts.LineStyle{Width: 3}),
			charts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Formatter: "{@[2]}", Position: labelPosition(sv.Kind)}),
			charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true), SymbolSize: 8}))...)
		if why := sv.NoCeilingText(); why != "" {
			sec.Notes = append(sec.Notes, name+": "+why)
		}
	}
	for _, c := range ceilingLabels(f, names) {
		ceilingSeries(line, c.Server, c.Label, hue[c.Server], lo, hi, c.Value, c.Measured)
	}
	var little []opts.LineData
	for _, c := range f.CallersCeilings() {
		little = append(little, opts.LineData{Value: []any{c[0], round(c[1], 1)}})
	}
	line.AddSeries(littleName, little, append(colored(palette.Neutral, opts.LineStyle{Type: "dotted", Width: 2}),
		charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}))...)
	for _, r := range ok {
		if b := r.Bound(); b != nil && len(b.Notes) > 0 {
			sec.Notes = append(sec.Notes, fmt.Sprintf("%s, %d callers: %s", r.Step.Server.Name, r.Step.Conc, strings.Join(b.Notes, "; ")))
		}
	}
	sec.Element, sec.Script = snippet(line)
	return sec
}

// labelPosition is where a server's point labels go: a loop server's
// points lie under its ceiling, whose label is above the line, so theirs
// go below; the others' above.
func labelPosition(kind string) string {
	if kind == "loop" {
		return "bottom"
	}
	return "top"
}

// boundLabel is a point's share of the ceiling that binds it, "98% of
// workers", or the bound's kind alone.
func boundLabel(r findings.SweepRow) string {
	b := r.Bound()
	if b == nil {
		return ""
	}
	if sh := r.BoundShare(); sh.OK() {
		return fmt.Sprintf("%.0f%% of %s", sh.Median(), b.Kind)
	}
	return b.Kind
}

// nearLabels is how close two points' throughputs must be (as a ratio)
// for their labels, on the same side, to be one.
const nearLabels = 1.3

// boundLabels gives each row the label drawn at its point: rows at the
// same callers whose labels go on the same side (pos) and whose
// throughputs are within nearLabels share one label, on the first of
// them ("98% of workers", "97-98% of callers"), so no two are drawn on
// each other; the others' labels are empty, their figures in the tooltip.
func boundLabels(rows []findings.SweepRow, pos func(findings.SweepRow) string) []string {
	out := make([]string, len(rows))
	done := make([]bool, len(rows))
	for i, r := range rows {
		if done[i] {
			continue
		}
		type share struct {
			kind string
			pct  []float64
		}
		var kinds []*share
		add := func(x findings.SweepRow) {
			b := x.Bound()
			if b == nil {
				return
			}
			var k *share
			for _, s := range kinds {
				if s.kind == b.Kind {
					k = s
				}
			}
			if k == nil {
				k = &share{kind: b.Kind}
				kinds = append(kinds, k)
			}
			if sh := x.BoundShare(); sh.OK() {
				k.pct = append(k.pct, sh.Median())
			}
		}
		add(r)
		v := r.Throughput.Median()
		for j := i + 1; j < len(rows); j++ {
			x := rows[j]
			w := x.Throughput.Median()
			if done[j] || x.Step.Conc != r.Step.Conc || pos(x) != pos(r) || max(v, w) > nearLabels*min(v, w) {
				continue
			}
			done[j] = true
			add(x)
		}
		var parts []string
		for _, k := range kinds {
			if len(k.pct) == 0 {
				parts = append(parts, k.kind)
				continue
			}
			lo, hi := slices.Min(k.pct), slices.Max(k.pct)
			if fmt.Sprintf("%.0f", lo) == fmt.Sprintf("%.0f", hi) {
				parts = append(parts, fmt.Sprintf("%.0f%% of %s", lo, k.kind))
			} else {
				parts = append(parts, fmt.Sprintf("%.0f-%.0f%% of %s", lo, hi, k.kind))
			}
		}
		out[i] = strings.Join(parts, ", ")
	}
	return out
}

// claims is what the page says of the claims with ids: each claim with its
// figures where it held, that it did not hold where it did not.
func claims(f *findings.Findings, ids ...string) string {
	var out []string
	for _, id := range ids {
		if s := f.Claim(id).Sentence(); s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}

// orNone is s, or none when s is empty.
func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

// saturationNotes says in words which bystanders saturated or were censored.
func saturationNotes(rows []findings.LoadRow, name func(findings.LoadRow) string) []string {
	var notes []string
	for _, r := range rows {
		switch {
		case r.Fast.Saturated:
			notes = append(notes, fmt.Sprintf("%s: %s; %s.", name(r), r.Fast.SaturatedWhy, r.Fast.CensoredText()))
		case r.Fast.CensoredText() != "":
			notes = append(notes, fmt.Sprintf("%s: %s.", name(r), r.Fast.CensoredText()))
		}
		if r.Fast.Misaligned != "" {
			notes = append(notes, fmt.Sprintf("%s: %s.", name(r), r.Fast.Misaligned))
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
		sec.Missing = findings.Missing(groupsOf(rows, loadGroup), "sweep")
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
		sec.Missing = findings.Missing(groupsOf(f.Sweep, sweepGroup), "sweep")
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

const censoredName = "unanswered when the window ended (a lower bound)"

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

// 4. Per-connection heatmap: the connections, on the loop each was dealt
// to in that measurement, by k blocked loops.
func stallCharts(f *findings.Findings) []section {
	p := f.Params
	var out []section
	stallGroup := func(r findings.StallRow) *findings.Group { return r.Group }
	for _, name := range serverNames(f.Stall, stallGroup) {
		var mine []findings.StallRow
		for _, r := range f.Stall {
			if r.Step.Server.Name == name {
				mine = append(mine, r)
			}
		}
		id := "stall_" + sanitize(name)
		// A --target has its own loops: the connections are 3 per loop of it.
		conns, loops := p.StallConns, p.Loops
		if srv := mine[0].Step.Server; srv.External && srv.Kind == "loop" {
			conns, loops = int(mine[0].Conns.Median()), srv.Workers
		}
		sec := section{ID: id, Title: fmt.Sprintf("4. Who stalls: %d connections by blocked loops, %s", conns, name),
			Caption: fmt.Sprintf("%d keep-alive connections called /async (a %s wait that blocks nothing), %d on each of the %d loops, each with a call due every %s; "+
				"then k further callers kept k loops busy with back-to-back %s /slow calls. Each row is a place on a loop, each cell the connection that sat there in that measurement, "+
				"coloured by the median of what the server made its calls wait, from the server's own timestamps (the tooltip adds the wait from due, in which a stalled connection's calls queue behind each other for as long as the run lasts). "+
				"The rule: "+stall.Rule+". Expected is how many sat on the loops the blockers' calls were answered on. "+claims(f, findings.ClaimWholeLoops),
				conns, p.Delay, conns/max(loops, 1), loops, p.StallInterval, p.StallBlock)}
		switch srv := mine[0].Step.Server; {
		case srv.Kind == "pool" && !srv.External:
			sec.Caption = fmt.Sprintf("The same %d /async connections against the pool, with as many %s /slow callers as loops were blocked. %s",
				p.StallConns, p.StallBlock, claims(f, findings.ClaimPoolNoStall))
		case srv.Kind != "loop":
			sec.Caption = fmt.Sprintf("%d /async connections against %s (no event loops: %s), with 0 and then %d back-to-back %s /slow callers. The rule: %s.",
				p.StallConns, name, srv.Facts, p.Loops, p.StallBlock, stall.Rule)
		}
		// Rows: the places on each loop, as many as the fullest loop had.
		perLoop := map[int]int{}
		for _, r := range mine {
			n := map[int]int{}
			for _, c := range r.Cells {
				n[c.Loop]++
				perLoop[c.Loop] = max(perLoop[c.Loop], n[c.Loop])
			}
		}
		var loopsSeen []int
		for l := range perLoop {
			loopsSeen = append(loopsSeen, l)
		}
		sort.Ints(loopsSeen)
		row := map[[2]int]int{}
		var ylabels []string
		for _, l := range loopsSeen {
			for j := range perLoop[l] {
				row[[2]int{l, j}] = len(ylabels)
				if l < 0 {
					ylabels = append(ylabels, fmt.Sprintf("no loop #%d", j+1))
				} else {
					ylabels = append(ylabels, fmt.Sprintf("loop %d #%d", l, j+1))
				}
			}
		}
		var xcats []string
		var data []opts.HeatMapData
		col := 0
		for _, r := range mine {
			if r.Cells == nil {
				continue
			}
			label := fmt.Sprintf("k=%d: stalled %s (expected %s)", r.Step.K, r.StalledText(), findings.JoinFigure(r.Expected))
			switch {
			case r.Judged == 0:
				label = fmt.Sprintf("k=%d: %s", r.Step.K, stall.TooBusy)
			case !r.Match:
				label += " NOT the expected ones"
			}
			xcats = append(xcats, label)
			for _, u := range r.Unjudged {
				sec.Notes = append(sec.Notes, fmt.Sprintf("k=%d: %s", r.Step.K, u))
			}
			for _, m := range r.Mismatch {
				sec.Notes = append(sec.Notes, fmt.Sprintf("k=%d, not exactly those: %s", r.Step.K, m))
			}
			n := map[int]int{}
			for _, c := range r.Cells {
				y := row[[2]int{c.Loop, n[c.Loop]}]
				n[c.Loop]++
				data = append(data, opts.HeatMapData{Name: fmt.Sprintf("conn %d on loop %d, %d of %d answered; p50 from due %.1f ms, from send %.1f ms", c.Conn, c.Loop, c.Answered, c.Due, c.P50Us/1e3, c.SendP50Us/1e3),
					Value: [3]any{col, y, round(c.WaitUs/1e3, 1)}})
			}
			col++
		}
		if col == 0 {
			sec.Missing = findings.Missing(groupsOf(mine, stallGroup), "stall")
			out = append(out, sec)
			continue
		}
		hm := charts.NewHeatMap()
		hm.SetGlobalOptions(append(frame(id, 70+30*len(ylabels), nil),
			charts.WithXAxisOpts(opts.XAxis{Type: "category", Data: xcats, AxisLabel: &opts.AxisLabel{Interval: "0", Rotate: 12}}),
			charts.WithYAxisOpts(opts.YAxis{Type: "category", Data: ylabels}),
			charts.WithVisualMapOpts(opts.VisualMap{Calculable: opts.Bool(true), Min: 0, Max: float32(2 * p.StallBlock.Seconds() * 1e3),
				Text: []string{"ms the server made it wait (p50)", ""}, Orient: "horizontal", Left: "center", Top: "top",
				InRange: &opts.VisualMapInRange{Color: []string{"#f7fbff", "#fdae6b", "#e6550d", "#7f2704"}}}),
		)...)
		hm.AddSeries("median wait the server made, ms", data, charts.WithLabelOpts(opts.Label{Show: opts.Bool(true)}))
		sec.Element, sec.Script = snippet(hm)
		out = append(out, sec)
	}
	if len(out) == 0 {
		out = append(out, section{ID: "stall", Title: "4. Who stalls", Missing: findings.Missing(nil, "stall")})
	}
	return out
}

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
		sec.Missing = findings.Missing(groupsOf(f.Offload, loadGroup), "offload")
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

// 6. The trace waterfall.
func traceChart(f *findings.Findings) section {
	p := f.Params
	var counts []string
	for _, r := range f.Trace {
		if r.Total.N.OK() {
			counts = append(counts, fmt.Sprintf("%s %.0f", r.Step.Server.Name, r.Total.N.Median()))
		}
	}
	sec := section{ID: "trace", Title: "6. Where an /async request's time goes",
		Caption: fmt.Sprintf("Sample /async requests (delay %s) taken apart on %d connections per loop while %d callers blocked on /slow (%s), as a trace viewer would: "+
			"accepted (sent until the handler ran), the scheduled delay, continuation lateness (how late the continuation ran after the delay), "+
			"and return (continuation until the answer arrived); together they are the request's whole time. %d requests per server are drawn, evenly spread over the window, "+
			"of the samples measured (%s). %s",
			p.Delay, p.TraceConns/max(p.Loops, 1), p.TraceCallers, p.StallBlock, findings.WaterfallSamples, strings.Join(counts, ", "), claims(f, findings.ClaimTraceTwice))}
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
		sec.Missing = findings.Missing(groupsOf(f.Trace, func(r findings.TraceRow) *findings.Group { return r.Group }), "trace")
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

// 7. The pool's cliff.
func cliffChart(f *findings.Findings) section {
	p := f.Params
	sec := section{ID: "cliff", Title: "7. The pool's cliff",
		Caption: fmt.Sprintf("Each pool with callers at %s of its slots, each blocking %s, and the /fast bystander (a probe due every %s, timed from due) meanwhile. %s",
			findings.CliffSharesText(), p.StallBlock, p.ProbeInterval, claims(f, findings.ClaimCliff))}
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
		cats = append(cats, fmt.Sprintf("%s, %d callers (%s)", r.Step.Server.Name, r.Step.Conc, r.Step.Variant))
		for i, v := range []findings.Figure{r.Fast.P50, r.Fast.P95, r.Fast.P99} {
			bars[i] = append(bars[i], opts.BarData{Value: ms(v), ItemStyle: &opts.ItemStyle{Color: palette.Tint(hue[r.Step.Server.Name], shades[i])}})
			smallest = min(smallest, ms(v))
		}
	}
	if len(cats) == 0 {
		sec.Missing = findings.Missing(groupsOf(f.Cliff, loadGroup), "cliff")
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

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

// 10. What each server does with a blocking call: the classification,
// and /slow and the bystander of every server on one chart.
func classesSection(f *findings.Findings) section {
	sec := section{ID: "classes", Title: "10. What each server does with a blocking call",
		Caption: "Each server as this run measured it, not as its documentation says: " + findings.ClassesText + ". " +
			"The chart sets every server's /slow throughput against callers (solid, left axis) beside the /fast bystander's p50 from due meanwhile " +
			"(dotted, right axis), each server in its colour, each ceiling (workers / block) dashed and labelled on its line."}
	cs := f.Classes()
	if len(cs) == 0 {
		sec.Missing = "no server was measured"
		return sec
	}
	sec.Grid = &grid{Head: []string{"server", "class", "what the run showed", "/slow at its most callers", "/fast p50 meanwhile"}}
	for _, c := range cs {
		sec.Grid.Rows = append(sec.Grid.Rows, []string{c.Server, c.Class, c.Text, dashed(c.Sweep), dashed(c.Fast)})
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
