package main

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/experiment"
	"github.com/bystander-kit/bystander/internal/results"
)

// costTable is chart 8: what each measurement cost and what bounds it.
type costTable struct {
	Rows []costRow
}

type costRow struct {
	ID, Server, CPU, CtxSw, Threads, RSS, Gen, Bound string
	Flagged                                          bool
}

func costSection(gs []*experiment.Group) section {
	sec := section{ID: "cost", Title: "8. What each request cost, and what bounds each row",
		Caption: "Server CPU and context switches per request come from /proc over each measured window; the generator's CPU from its own result. " +
			"Each row says what limits its throughput: the workers (loops or slots over the measured block), the offered concurrency (callers over the block, Little's law), " +
			"the CPU (machine saturated), or the load generator itself; a row bounded by the generator is flagged, as it is not the server's figure.",
		Table: &costTable{}}
	for _, g := range gs {
		for _, m := range g.MS {
			if m.Cost == nil {
				continue
			}
			r := costRow{ID: m.ID, Server: m.Server.Name,
				CPU: fmt.Sprintf("%.1f", m.Cost.ServerCPUUsPerRequest), CtxSw: fmt.Sprintf("%.2f", m.Cost.CtxSwitchesPerRequest),
				Threads: fmt.Sprint(m.Cost.Threads), RSS: fmt.Sprintf("%.0f MB", float64(m.Cost.PeakRSSBytes)/(1<<20)),
				Gen: fmt.Sprintf("%.1f", m.Cost.GeneratorCPUUsPerReq)}
			if m.Repeat > 1 {
				r.ID += fmt.Sprintf(" (rep %d)", m.Repeat)
			}
			if m.Bound != nil {
				r.Bound, r.Flagged = m.Bound.Text, m.Bound.GeneratorLimited
			}
			sec.Table.Rows = append(sec.Table.Rows, r)
		}
	}
	if len(sec.Table.Rows) == 0 {
		sec.Missing = "no load measurement completed"
		sec.Table = nil
	}
	return sec
}

// page is everything the template needs.
type page struct {
	Title    string
	Run      *results.Run
	Params   []kv
	Env      []kv
	Phases   []phaseStatus
	Sections []section
	Inline   template.JS
	CDN      string
	CDNNote  string
	Partial  string
}

type kv struct{ K, V string }

type phaseStatus struct {
	Phase, Status string
	Problems      []string
}

func buildPage(dir string, run *results.Run, a asset) page {
	gs := experiment.Groups(dir, run)
	p := page{Title: "bystander: what one blocking call does to everyone else", Run: run}
	if run.Partial {
		p.Partial = run.PartialReason
	}
	rp := run.Params
	p.Params = []kv{
		{"block (sweep, offload)", time.Duration(rp.BlockNs).String()},
		{"block (stall, trace, cliff)", time.Duration(rp.StallBlockNs).String()},
		{"callers", strings.Trim(strings.Join(strings.Fields(fmt.Sprint(rp.Conc)), ", "), "[]")},
		{"measured time, warm-up", fmt.Sprintf("%s, %s", time.Duration(rp.DurationNs), time.Duration(rp.WarmupNs))},
		{"servers", fmt.Sprintf("%s (loop engines: %s); %d loops, %d pool slots", strings.Join(rp.Servers, ", "), strings.Join(rp.Engines, ", "), rp.Loops, rp.PoolSlots)},
		{"repetitions", fmt.Sprint(rp.Repeat)},
		{"pinned to CPU sets", fmt.Sprint(rp.Pin)},
		{"command", "./run.sh " + strings.Join(rp.Args, " ")},
	}
	m := run.Manifest
	p.Env = []kv{
		{"started", m.StartUTC}, {"ended", m.EndUTC}, {"git commit", m.GitCommit}, {"Go", m.GoVersion},
		{"kernel", m.Kernel}, {"CPU", fmt.Sprintf("%s, %d cores", m.CPUModel, m.Cores)},
	}
	for _, ph := range []string{"sweep", "stall", "offload", "trace", "cliff"} {
		st := phaseStatus{Phase: ph}
		n, ok := 0, 0
		for _, mm := range run.Measurements {
			if mm.Phase != ph {
				continue
			}
			n++
			if mm.Status == "ok" {
				ok++
			} else {
				st.Problems = append(st.Problems, mm.ID+": "+mm.Outcome())
			}
		}
		switch {
		case n == 0:
			st.Status = "not run"
		case ok == n:
			st.Status = fmt.Sprintf("%d of %d measurements", ok, n)
		default:
			st.Status = fmt.Sprintf("%d of %d measurements; the others below", ok, n)
		}
		p.Phases = append(p.Phases, st)
	}
	p.Sections = append(p.Sections, throughputChart(gs, run), bystanderChart(gs, run), timelineChart(gs, run))
	p.Sections = append(p.Sections, stallCharts(gs, run)...)
	p.Sections = append(p.Sections, offloadChart(gs, run), traceChart(gs, run), cliffChart(gs, run), costSection(gs))
	if a.js != nil {
		p.Inline = template.JS(a.js) // verified echarts build (checkJS), inlined so the page works offline
	} else {
		p.CDN, p.CDNNote = echartsCDN, a.note
	}
	return p
}

var tpl = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1100px;padding:1.5em;color:#222;line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
.caption{color:#444;max-width:60em}.missing{background:#fff4e5;border:1px solid #f0b36b;padding:1em}
.note{background:#fdecea;border:1px solid #e57373;padding:.8em}table{border-collapse:collapse;font-size:.9em}
td,th{border:1px solid #ddd;padding:.25em .5em;text-align:left;vertical-align:top}th{background:#f4f4f4}
.kv td:first-child{color:#666}.flag{background:#fdecea}.container{width:100%}
</style>
<script>window.bystanderCharts = [];</script>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="caption">A 5 ms blocking call is harmless on a 200-thread pool and ruinous on 4 event loops: throughput is capped at
workers / block, and every connection that shares a blocked loop waits, whatever it asks for. These are this run's measurements,
with real servers on loopback; every figure says what bounds it.</p>
{{if .CDNNote}}<p class="note">echarts could not be inlined ({{.CDNNote}}): this page loads it from {{.CDN}} and needs the network to draw its charts.</p>{{end}}
{{if .Partial}}<p class="note">This run was cut short ({{.Partial}}): what was measured before is shown; the rest is marked.</p>{{end}}
<h2>The run</h2>
<table class="kv">{{range .Params}}<tr><td>{{.K}}</td><td>{{.V}}</td></tr>{{end}}{{range .Env}}<tr><td>{{.K}}</td><td>{{.V}}</td></tr>{{end}}</table>
<h2>Phases</h2>
<table><tr><th>phase</th><th>status</th></tr>{{range .Phases}}<tr><td>{{.Phase}}</td><td>{{.Status}}{{range .Problems}}<br>{{.}}{{end}}</td></tr>{{end}}</table>
{{range .Sections}}
<h2 id="h_{{.ID}}">{{.Title}}</h2>
<p class="caption">{{.Caption}}</p>
{{if .Missing}}<p class="missing" id="missing_{{.ID}}">Not drawn: {{.Missing}}.</p>
{{else if .Table}}<table id="{{.ID}}"><tr><th>measurement</th><th>server CPU us/req</th><th>context switches/req</th><th>threads</th><th>peak RSS</th><th>generator CPU us/req</th><th>bound</th></tr>
{{range .Table.Rows}}<tr{{if .Flagged}} class="flag"{{end}}><td>{{.ID}}</td><td>{{.CPU}}</td><td>{{.CtxSw}}</td><td>{{.Threads}}</td><td>{{.RSS}}</td><td>{{.Gen}}</td><td>{{if .Flagged}}FLAGGED: {{end}}{{.Bound}}</td></tr>
{{end}}</table>
{{else}}{{.Element}}
{{.Script}}
{{end}}{{end}}
{{if .Inline}}<script>{{.Inline}}</script>{{else}}<script src="{{.CDN}}"></script>{{end}}
<script>
(function () {
  "use strict";
  performance.mark("echarts loaded");
  var pending = {};
  window.bystanderCharts.forEach(function (c) { pending[c.id] = c; });
  function draw(id) {
    var c = pending[id];
    if (!c) { return; }
    delete pending[id];
    c.draw();
    performance.mark("drawn " + id);
    if (!window.bystanderFirstDrawnMs) { window.bystanderFirstDrawnMs = performance.now(); }
  }
  // Draw everything now: for printing, screenshots and tests.
  window.bystanderDrawAll = function () { Object.keys(pending).forEach(draw); };
  window.addEventListener("beforeprint", window.bystanderDrawAll);
  if (typeof echarts === "undefined") { return; }
  if (!("IntersectionObserver" in window)) { window.bystanderDrawAll(); return; }
  var seen = new IntersectionObserver(function (entries) {
    entries.forEach(function (e) {
      if (e.isIntersecting) { seen.unobserve(e.target); draw(e.target.id); }
    });
  }, {rootMargin: "400px"});
  window.bystanderCharts.forEach(function (c) { seen.observe(document.getElementById(c.id)); });
})();
</script>
<p class="caption">Made by bystander's report from {{.Run.Schema}} results; the measurements are in the run directory beside this file.</p>
</body>
</html>
`))

// writePage writes the page.
func writePage(w io.Writer, p page) error {
	var buf bytes.Buffer
	if err := tpl.Execute(&buf, p); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}
