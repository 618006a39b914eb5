package page

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/outside"
	"github.com/bystander-kit/bystander/internal/prose"
	"github.com/bystander-kit/bystander/internal/stall"
)

// 4. Per-connection heatmap: the connections, on the loop each was dealt
// to in that measurement, by k blocked loops.
func stallCharts(f *findings.Findings, skips []findings.PhaseSkips) []section {
	var out []section
	stallGroup := func(r findings.StallRow) *findings.Group { return r.Group }
	skipped := func(name string) bool { // every measurement of it skipped: said in one line (notRunLine)
		return slices.ContainsFunc(skips, func(ps findings.PhaseSkips) bool {
			return ps.Phase == "stall" && slices.ContainsFunc(ps.Skipped, func(s findings.Skipped) bool { return s.Server == name })
		})
	}
	for _, name := range serverNames(f.Stall, stallGroup) {
		if skipped(name) {
			continue
		}
		var mine []findings.StallRow
		for _, r := range f.Stall {
			if r.Step.Server.Name == name {
				mine = append(mine, r)
			}
		}
		out = append(out, stallChart(f, name, mine, stallGroup))
	}
	if len(out) == 0 {
		out = append(out, section{ID: "stall", Title: "4. Who stalls", Missing: missing(nil, "stall")})
	}
	return out
}

// stallChart is one server's heatmap: a column a measurement, a row a
// place on a loop.
func stallChart(f *findings.Findings, name string, mine []findings.StallRow, stallGroup func(findings.StallRow) *findings.Group) section {
	p := f.Params
	id := "stall_" + sanitize(name)
	sec := stallSection(f, name, id, mine[0])
	row, ylabels := stallPlaces(mine)
	var xcats []string
	var data []opts.HeatMapData
	var seen []outside.Verdict // what the outside view found, step by step
	var seenK []int
	cost := ""
	col := 0
	for _, r := range mine {
		if r.Cells == nil {
			continue
		}
		label := fmt.Sprintf("k=%d: stalled %s (expected %s)", r.Step.K, prose.StallStalled(r), prose.JoinFigure(r.Expected))
		switch {
		case r.Judged == 0:
			label = fmt.Sprintf("k=%d: %s", r.Step.K, stall.TooBusy)
		case !r.Match:
			label += " NOT the expected ones"
		}
		xcats = append(xcats, label)
		for _, u := range r.Unjudged {
			sec.Notes = append(sec.Notes, fmt.Sprintf("k=%d: %s", r.Step.K, prose.StallUnjudged(u)))
		}
		for _, m := range r.Mismatch {
			sec.Notes = append(sec.Notes, fmt.Sprintf("k=%d, not exactly those: %s", r.Step.K, prose.StallMismatch(m)))
		}
		if v := r.Seen; v != nil { // seen from outside: /proc, and a JVM's stacks
			seen = append(seen, *v)
			seenK = append(seenK, r.Step.K)
			for _, n := range v.Notes {
				sec.Notes = append(sec.Notes, fmt.Sprintf("k=%d, seen from outside: %s", r.Step.K, n))
			}
			if c := v.Cost(); c != "" {
				cost = c // the last step's, as an example
			}
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
		sec.Missing = missing(groupsOf(mine, stallGroup), "stall")
		return sec
	}
	if len(seen) > 0 {
		sec.Caption += " Seen from outside (the threads in /proc, and a JVM's stacks, looked at while the blockers held, after each measured window): " +
			seenWords(seen, seenK) + "."
		if cost != "" {
			sec.Caption += " What looking cost, at the last step: " + cost + "."
		}
	}
	hm := charts.NewHeatMap()
	hm.SetGlobalOptions(append(frame(id, 70+30*len(ylabels), nil),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Data: xcats, AxisLabel: &opts.AxisLabel{Interval: "0", Rotate: 12}}),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Data: ylabels}),
		charts.WithVisualMapOpts(opts.VisualMap{Calculable: opts.Bool(true), Min: 0, Max: float32(2 * p.StallBlock.D().Seconds() * 1e3),
			Text: []string{"ms the server made it wait (p50)", ""}, Orient: "horizontal", Left: "center", Top: "top",
			InRange: &opts.VisualMapInRange{Color: []string{"#f7fbff", "#fdae6b", "#e6550d", "#7f2704"}}}),
	)...)
	hm.AddSeries("median wait the server made, ms", data, charts.WithLabelOpts(opts.Label{Show: opts.Bool(true)}))
	sec.Element, sec.Script = snippet(hm)
	return sec
}

// stallSection is the heatmap's title and caption, for the server first
// measured in row.
func stallSection(f *findings.Findings, name, id string, first findings.StallRow) section {
	p := f.Params
	// A --target has its own loops: the connections are 3 per loop of it.
	conns, loops := p.StallConns, p.Loops
	if srv := first.Step.Server; srv.External && srv.Kind == "loop" {
		conns, loops = int(first.Conns.Median()), srv.Workers
	}
	sec := section{ID: id, Title: fmt.Sprintf("4. Who stalls: %d connections by blocked loops, %s", conns, name),
		Caption: fmt.Sprintf("%d keep-alive connections called /async (a %s wait that blocks nothing), %d on each of the %d loops, each with a call due every %s; "+
			"then k further callers kept k loops busy with back-to-back %s /slow calls. Each row is a place on a loop, each cell the connection that sat there in that measurement, "+
			"coloured by the median of what the server made its calls wait, from the server's own timestamps (the tooltip adds the wait from due, in which a stalled connection's calls queue behind each other for as long as the run lasts). "+
			"The rule: "+stall.Rule+". Expected is how many sat on the loops the blockers' calls were answered on. "+claims(f, findings.ClaimWholeLoops),
			conns, p.Delay, conns/max(loops, 1), loops, p.StallInterval, p.StallBlock)}
	switch srv := first.Step.Server; {
	case srv.Kind == "pool" && !srv.External:
		sec.Caption = fmt.Sprintf("The same %d /async connections against the pool, with as many %s /slow callers as loops were blocked. %s",
			p.StallConns, p.StallBlock, claims(f, findings.ClaimPoolNoStall))
	case srv.Kind != "loop":
		sec.Caption = fmt.Sprintf("%d /async connections against %s (no event loops: %s), with 0 and then %d back-to-back %s /slow callers. The rule: %s.",
			p.StallConns, name, srv.Facts, p.Loops, p.StallBlock, stall.Rule)
	}
	return sec
}

// stallPlaces are the heatmap's rows: the places on each loop, as many as
// the fullest loop had in any measurement, and their labels.
func stallPlaces(mine []findings.StallRow) (map[[2]int]int, []string) {
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
	return row, ylabels
}

// seenWords says what the outside view found held, step by step: the
// place once when every held thread was in the same one, then for each k
// how many of each family of threads were held, and which.
func seenWords(vs []outside.Verdict, ks []int) string {
	where := map[string]bool{}
	for _, v := range vs {
		for _, p := range culprit.Places(v.Held, make([]string, len(v.Held))) {
			where[p.Where] = true
		}
	}
	var head string
	if len(where) == 1 {
		for w := range where {
			head = "every held thread was " + w + ": "
		}
	}
	var parts []string
	for i, v := range vs {
		var names []string
		for _, r := range v.Held {
			names = append(names, r.Thread)
		}
		part := fmt.Sprintf("k=%d ", ks[i])
		switch {
		case len(v.Held) == 0:
			part += "found no thread held"
		case head == "":
			part += "held " + prose.Culprits(v.Held)
		case len(v.Groups) > 0:
			part += "held " + strings.Join(names, ", ") + ": " + strings.Join(v.Groups, "; ")
		default:
			part += "held " + strings.Join(names, ", ")
		}
		parts = append(parts, part)
	}
	return head + strings.Join(parts, "; ")
}
