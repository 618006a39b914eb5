package page

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/findings"
)

// lagPieces bin a window's largest heartbeat lag: the bins are stated, not
// a colour ramp the reader must guess at.
// Whole milliseconds: echarts labels the bins with no decimals.
var lagPieces = []opts.Piece{
	{Lt: 1, Color: "#f7fbff"},
	{Gte: 1, Lt: 4, Color: "#c6dbef"},
	{Gte: 4, Lt: 20, Color: "#fdae6b"},
	{Gte: 20, Lt: 100, Color: "#e6550d"},
	{Gte: 100, Color: "#7f2704"},
}

// lagCharts draws, for each loop server of a phase, every loop's own
// heartbeat lag over each measured window as lanes: one row per loop per
// measurement, one cell per 100 ms window, coloured by the largest lag in it.
func lagCharts(f *findings.Findings, phase, number, what string) []section {
	var rows []findings.LagRow
	for _, r := range f.LagRows {
		if r.Step.Phase == phase {
			rows = append(rows, r)
		}
	}
	var names []string
	for _, r := range rows {
		if !slices.Contains(names, r.Step.Server.Name) {
			names = append(names, r.Step.Server.Name)
		}
	}
	var out []section
	for _, name := range names {
		var mine []findings.LagRow
		for _, r := range rows {
			if r.Step.Server.Name == name {
				mine = append(mine, r)
			}
		}
		out = append(out, lagSection(f, phase, number, what, name, mine))
	}
	return out
}

// lagSection is one server's heat map of its loops' lag in a phase, from
// its rows there (mine, one or more).
func lagSection(f *findings.Findings, phase, number, what, name string, mine []findings.LagRow) section {
	id := "lag_" + phase + "_" + sanitize(name)
	warn, every := time.Duration(mine[0].WarnNs), time.Duration(mine[0].IntervalNs)
	sec := section{ID: id, Title: fmt.Sprintf("%s. Each loop's own lag %s, %s", number, what, name),
		Caption: fmt.Sprintf("Seen from inside the server: every %s each loop is handed a heartbeat, and its lag is how long it waited to run. "+
			"Each row is one loop in one measurement, each cell a %.1f s stretch of the measured window, coloured by the largest lag in it, in ms "+
			"(a beat still waiting at the stretch's end counts at its wait so far). "+
			claims(f, findings.ClaimLagShows)+" "+
			"The server's detector counts a block when a loop is held past %s; the tooltip gives the share of the stretch it was held and by which route.",
			every, float64(mine[0].WindowNs)/1e9, warn)}
	var ylabels, xcats []string
	var held []culprit.Record // the loops held in /slow with a stack, and who each is
	var who []string
	unjudged := false // a loop held past the threshold the detector could not judge
	var data []opts.HeatMapData
	for _, r := range mine {
		tag := fmt.Sprintf("%d callers", r.Step.Conc)
		if phase == "stall" {
			tag = fmt.Sprintf("k=%d", r.Step.K)
		}
		for _, ll := range r.Loops {
			if ll.Culprit != nil && ll.Blocks["/slow"] > 0 {
				held = append(held, *ll.Culprit)
				who = append(who, fmt.Sprintf("%s loop %d", tag, ll.Loop))
			}
		}
		for _, ll := range r.Loops {
			label := fmt.Sprintf("%s, loop %d", tag, ll.Loop)
			if ll.Blocks["/slow"] > 0 {
				label += " (held in /slow)"
			}
			if w := notJudged(ll); w != "" {
				label += " (" + w + ")"
				unjudged = true
			}
			y := len(ylabels)
			ylabels = append(ylabels, label)
			for x, w := range ll.Windows {
				for len(xcats) <= x {
					xcats = append(xcats, fmt.Sprintf("%.1f s", float64(len(xcats)+1)*float64(r.WindowNs)/1e9))
				}
				held := ""
				if w.BlockedShare > 0 {
					held = fmt.Sprintf("; held %.0f%% of it", 100*w.BlockedShare)
					if w.Route != "" {
						held += ", now " + routeWords(w.Route)
					}
				}
				data = append(data, opts.HeatMapData{
					Name:  fmt.Sprintf("%s, to %s: lag max %.2f ms, median %.3f ms%s", label, xcats[x], w.MaxUs/1e3, w.P50Us/1e3, held),
					Value: [3]any{x, y, round(w.MaxUs/1e3, 2)}})
			}
		}
	}
	if unjudged {
		sec.Caption += " A hold the detector could not judge is not a block, and not left out: the loop's thread was parked by Go " +
			"and no stack taken while it held said what for (its own wait, such as a sleep or a database call, or a wait for a Go P; " +
			"a stack a second per loop at most), said beside its loop as holds not judged and the share of the window they held."
	}
	if places := culprit.Places(held, who); len(places) > 0 {
		var parts []string
		for _, p := range places {
			parts = append(parts, p.Where+" ("+strings.Join(p.Who, ", ")+")")
		}
		sec.Caption += " Where the detector (loopwatch, a stack a second per loop at most) saw the loops held: " + strings.Join(parts, "; ") + "."
	}
	// Row 0 at the top, as the table reads.
	slices.Reverse(ylabels)
	for i := range data {
		v := data[i].Value.([3]any)
		v[1] = len(ylabels) - 1 - v[1].(int)
		data[i].Value = v
	}
	hm := charts.NewHeatMap()
	hm.SetGlobalOptions(append(frame(id, 70+22*len(ylabels), nil),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Data: xcats, Name: "into the measured window", NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Data: ylabels}),
		charts.WithVisualMapOpts(opts.VisualMap{Type: "piecewise", Pieces: lagPieces, Orient: "horizontal", Left: "center", Top: "top"}),
	)...)
	hm.AddSeries("largest heartbeat lag, ms", data)
	sec.Element, sec.Script = snippet(hm)
	return sec
}

func routeWords(route string) string {
	if strings.HasPrefix(route, "/") {
		return "in " + route
	}
	return route
}

// notJudged says a loop's holds the detector could not judge in the
// window, "12 holds not judged, 91% of the window", or "" when none.
func notJudged(ll findings.LoopLag) string {
	if ll.Unknown <= 0 {
		return ""
	}
	holds := "holds"
	if ll.Unknown == 1 {
		holds = "hold"
	}
	return fmt.Sprintf("%d %s not judged, %.0f%% of the window", ll.Unknown, holds, 100*ll.UnknownShare)
}
