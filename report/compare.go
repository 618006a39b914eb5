package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/bystander-kit/bystander/internal/compare"
	"github.com/bystander-kit/bystander/internal/findings"
)

// grid is a plain table section: a header and rows of cells.
type grid struct {
	Head []string
	Rows [][]string
}

// splitCompare takes "--compare A B" out of args: flag parsing stops at
// the first non-flag, and the two runs come right after the flag.
func splitCompare(args []string) (rest []string, a, b string, ok bool, err error) {
	for i, arg := range args {
		if arg != "--compare" && arg != "-compare" {
			continue
		}
		if i+2 >= len(args) || strings.HasPrefix(args[i+1], "-") || strings.HasPrefix(args[i+2], "-") {
			return nil, "", "", false, fmt.Errorf("report: --compare takes two run directories: --compare RUN_A RUN_B")
		}
		rest = append(slices.Clone(args[:i]), args[i+3:]...)
		return rest, args[i+1], args[i+2], true, nil
	}
	return args, "", "", false, nil
}

// comparePage is run A against run B on one page: the sweep's throughput
// and the bystander's latency of both on the same axes with both runs'
// ceilings, then every figure of every measurement both made.
func comparePage(c *compare.Comparison, a asset) page {
	p := page{Title: "bystander: run A against run B", Run: c.B.Run}
	p.Lead = fmt.Sprintf("A is %s (started %s), B is %s (started %s). Each figure is the median over a run's repetitions; "+
		"B vs A is the change when it is significant (p <= %.2f, Mann-Whitney U over the repetitions, as benchstat tests), ~ when it is not, "+
		"and with one repetition the change alone: no significance can be given without repetitions.",
		c.DirA, c.A.Run.Manifest.StartUTC, c.DirB, c.B.Run.Manifest.StartUTC, compare.Alpha)
	p.useAsset(a)
	p.RunTitle = "What differs between A and B"
	for _, d := range c.Differ {
		k, v, _ := strings.Cut(d, ": ")
		p.Params = append(p.Params, kv{k, v})
	}
	if len(p.Params) == 0 {
		p.Params = []kv{{"parameters", "the same in both runs, on the same machine and commit"}}
	}
	p.Sections = append(p.Sections, overlay(c, "cmp_throughput", "1. Throughput against concurrency, A and B, with both runs' ceilings", "req/s",
		"The sweep's throughput of each server in A (solid) and B (dashed) on the same axes, with each run's ceiling: workers / requested block (thin dashed). "+
			"Where B loaded another endpoint than A (--sweep-endpoint), the series names say so.",
		func(r findings.SweepRow) (float64, bool) { return r.Throughput.Median(), r.Throughput.OK() }, true))
	p.Sections = append(p.Sections, overlay(c, "cmp_fast", "2. The /fast bystander's p50 from due, A and B", "ms",
		"What the one /fast connection waited meanwhile, from each probe's due time, at each concurrency of the sweep, A solid, B dashed, on a log axis.",
		func(r findings.SweepRow) (float64, bool) { return max(r.Fast.P50.Median()/1e3, 0.001), r.Fast.P50.OK() }, false))
	g := &grid{Head: []string{"measurement", "figure", "A", "B", "B vs A", "test"}}
	for _, r := range c.Rows {
		for i, cell := range r.Cells {
			name := ""
			if i == 0 {
				name = r.Key
				if strings.Contains(r.Endpoint, "->") {
					name += " (" + r.Endpoint + ")"
				}
			}
			unit := cell.Metric
			if cell.Unit != "" {
				unit += " (" + cell.Unit + ")"
			}
			g.Rows = append(g.Rows, []string{name, unit, fmt3(cell.CenterA, cell.A), fmt3(cell.CenterB, cell.B), cell.Verdict(), cell.PText()})
		}
	}
	sec := section{ID: "cmp_table", Title: "3. Every figure of every measurement both runs made", Grid: g,
		Caption: "Medians over each run's repetitions, with the range in brackets when there are several."}
	if len(c.Only) > 0 {
		sec.Notes = append(sec.Notes, "Not compared, made in one run only: "+strings.Join(c.Only, "; "))
	}
	p.Sections = append(p.Sections, sec)
	return p
}

func fmt3(center float64, v findings.Figure) string {
	s := fmt.Sprintf("%.4g", center)
	if len(v) > 1 {
		lo, hi := v.Spread()
		s += fmt.Sprintf(" [%.4g-%.4g]", lo, hi)
	}
	return s
}

// overlay draws one sweep figure of both runs against callers; ceilings
// adds each run's workers / block lines.
func overlay(c *compare.Comparison, id, title, unit, caption string, v func(findings.SweepRow) (float64, bool), ceilings bool) section {
	sec := section{ID: id, Title: title, Caption: caption}
	line := charts.NewLine()
	line.SetGlobalOptions(append(slices.Clone(common), initOpts(id, 480),
		charts.WithXAxisOpts(opts.XAxis{Type: "log", Name: "callers", NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "log", Name: unit}),
	)...)
	var concs []int
	for _, f := range []*findings.Findings{c.A, c.B} {
		for _, r := range f.Sweep {
			if !slices.Contains(concs, r.Step.Conc) {
				concs = append(concs, r.Step.Conc)
			}
		}
	}
	if len(concs) == 0 {
		sec.Missing = "neither run has a sweep"
		return sec
	}
	sort.Ints(concs)
	lo, hi := float64(concs[0]), float64(concs[len(concs)-1])
	drawn := 0
	for ri, f := range []*findings.Findings{c.A, c.B} {
		run, style := "A", "solid"
		if ri == 1 {
			run, style = "B", "dashed"
		}
		for _, name := range serverNames(f.Sweep, sweepGroup) {
			var data []opts.LineData
			endpoint := ""
			for _, r := range f.Sweep {
				if r.Step.Server.Name != name {
					continue
				}
				endpoint = r.Step.Endpoint
				if y, ok := v(r); ok {
					data = append(data, opts.LineData{Value: []any{r.Step.Conc, round(y, 3)}})
				}
			}
			if len(data) == 0 {
				continue
			}
			drawn++
			line.AddSeries(fmt.Sprintf("%s: %s %s", run, name, endpoint), data, charts.WithLineStyleOpts(opts.LineStyle{Type: style, Width: 2}),
				charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true)}))
			if sv := f.Server(name); ceilings && sv.NominalCeiling > 0 {
				ceil := sv.NominalCeiling
				line.AddSeries(fmt.Sprintf("%s ceiling %s: %s", run, name, sv.CeilingText()),
					[]opts.LineData{{Value: []any{lo, round(ceil, 1)}}, {Value: []any{hi, round(ceil, 1)}}},
					charts.WithLineStyleOpts(opts.LineStyle{Type: "dashed", Width: 1}), charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}))
			}
		}
	}
	if drawn == 0 {
		sec.Missing = "no sweep measurement succeeded in either run"
		return sec
	}
	sec.Element, sec.Script = snippet(line)
	return sec
}
