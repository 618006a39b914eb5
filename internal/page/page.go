package page

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/prose"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/words"
)

// costTable is chart 8: what each measurement cost and what bounds it.
type costTable struct {
	Rows []costRow
	DB   bool // a column for the private database's CPU (--block-mode postgres)
}

type costRow struct {
	ID, Server, CPU, CtxSw, Threads, RSS, Gen, DB, Bound string
	Flagged                                              bool
}

func costSection(f *findings.Findings) section {
	sec := section{ID: "cost", Title: "8. What each request cost, and what bounds each row",
		Caption: "Server CPU and context switches per request come from /proc over each measured window; the generator's CPU from its own result. " +
			"Each row says what limits its throughput, decided from the data: the workers (loops or slots over the measured block), the offered concurrency (callers over the measured block, Little's law), " +
			"the CPU (the kit's own processes using the machine), or the load generator itself, flagged, as it is not the server's figure; " +
			"a row near no ceiling says so and names the likely cause. Closed-loop rows check Little's law (throughput x mean latency = callers, within 1 %), " +
			"and a row measured while other processes used the machine says how much.",
		Table: &costTable{}}
	for _, r := range f.Cost {
		c := r.Cost
		row := costRow{ID: r.ID, Server: r.Server,
			CPU: fmt.Sprintf("%.1f", c.ServerCPUUsPerRequest), CtxSw: fmt.Sprintf("%.2f", c.CtxSwitchesPerRequest),
			Threads: fmt.Sprint(c.Threads), RSS: fmt.Sprintf("%.0f MB", float64(c.PeakRSSBytes)/(1<<20)),
			Gen: fmt.Sprintf("%.1f", c.GeneratorCPUUsPerReq), DB: fmt.Sprintf("%.1f", c.DBCPUUsPerRequest), Bound: prose.BoundLine(r.Bound)}
		sec.Table.DB = sec.Table.DB || c.DBCores > 0
		if c.ServerNotMeasured {
			row.CPU, row.CtxSw, row.Threads, row.RSS = "not measured (external)", "not measured (external)", "-", "-"
		}
		if r.Repeat > 1 {
			row.ID += fmt.Sprintf(" (rep %d)", r.Repeat)
		}
		if r.Bound != nil {
			row.Flagged = r.Bound.Flagged
		}
		sec.Table.Rows = append(sec.Table.Rows, row)
	}
	sec.Notes = append(sec.Notes, prose.Noticed(f)...)
	if len(sec.Table.Rows) == 0 {
		sec.Missing = "no load measurement completed"
		sec.Table = nil
	}
	return sec
}

// publishedSection sets this run beside the published experiment, as the
// terminal does.
func publishedSection(f *findings.Findings) section {
	sec := section{ID: "published", Title: "9. This run beside the published Netty-vs-Tomcat experiment",
		Caption: "Each figure the publication gives, beside this run's measurement of the same thing: the same kind of server with the same workers " +
			"and the same block; each throughput with its share of its own ceiling (workers / block). Where a condition differs, the row says so. " +
			"Of the conditions: " + prose.PublishedHeading(f) + "."}
	rows := prose.Published(f)
	if len(rows) == 0 {
		sec.Missing = prose.PublishedNone
		return sec
	}
	sec.Grid = &grid{Head: []string{"figure", "server", "this run", "of its ceiling", "published", "of its ceiling", "differs"}}
	for _, r := range rows {
		sec.Grid.Rows = append(sec.Grid.Rows, []string{r.What, r.Server, r.This, words.Dash(r.ThisShare), r.Published, words.Dash(r.PubShare), words.Dash(r.Differs)})
	}
	return sec
}

// page is everything the template needs.
type page struct {
	Title    string
	Lead     string
	Run      *results.Run
	Params   []kv
	Env      []kv
	Phases   []phaseLine
	Sections []section
	Echarts  template.HTML // asset.script
	CDN      string
	CDNNote  string
	Partial  string
	// NotRead names each measurement whose files were not read, and why.
	NotRead []string
	// RunTitle heads the closing table of parameters ("The run").
	RunTitle string
	// Script is the page's drawing script (page.js); Charts every chart's
	// script, packed (writePage): page.js unpacks and runs them once
	// echarts is there.
	Script template.JS
	Charts template.HTML
	// Headline is the result at one glance, at the top; Hue each
	// server's colour.
	Headline *prose.FaceHeadline
	Hue      map[string]string
	// Warnings are said once, in one box, at the top.
	Warnings []string
	// NotRun says, in one line, which phases the page has no section for,
	// as the run did not run them, and why ("" when it ran them all).
	NotRun string
}

type kv struct{ K, V string }

// phaseLine is how far a phase got, as prose says it, with each
// measurement of it that left no figures.
type phaseLine struct {
	Phase, Status string
	Problems      []string
}

func buildPage(f *findings.Findings, a Asset) page {
	run, fp := f.Run, f.Params
	p := page{Title: "bystander: what one blocking call does to everyone else", Run: run}
	for _, ps := range f.Phases {
		p.Phases = append(p.Phases, phaseLine{Phase: ps.Phase, Status: prose.PhaseStatus(ps), Problems: prose.PhaseProblems(ps)})
	}
	p.Lead = prose.Lead(f)
	if h := prose.Headline(f); len(h.Servers)+len(h.Stalls)+len(h.Fixes) > 0 {
		p.Headline = &h
	}
	p.Hue = hues(f)
	if run.Partial {
		p.Partial = run.PartialReason
	}
	for _, u := range f.Unread {
		p.NotRead = append(p.NotRead, prose.Unread(u))
	}
	rp := run.Params
	p.Params = []kv{
		{"block (sweep, offload)", fp.Block.String()},
		{"block (stall, trace, cliff)", fp.StallBlock.String()},
		{"how the call blocks", fp.BlockMode + blockModeNote[fp.BlockMode]},
		{"database", dbLine(rp)},
		{"/async delay", fp.Delay.String()},
		{"callers", words.Ints(fp.Conc, ", ")},
		{"measured time, warm-up", fmt.Sprintf("%s, %s", fp.Duration, fp.Warmup)},
		{"servers", fmt.Sprintf("%s (loop engines: %s); %d loops, %d pool slots, %d offload workers", strings.Join(rp.Servers, ", "), strings.Join(rp.Engines, ", "),
			fp.Loops, fp.Slots, fp.OffloadWorkers)},
		{"servers you started (--target)", targetsLine(rp.Targets)},
		{"/fast bystander", fmt.Sprintf("a probe due every %s on one connection, over each load's measured window", fp.ProbeInterval)},
		{"stall phase", fmt.Sprintf("%d /async connections per loop (%d on the kit's loop server), each probed every %s", fp.StallConns/max(fp.Loops, 1), fp.StallConns, fp.StallInterval)},
		{"trace phase", fmt.Sprintf("%d /async connections per loop (%d on the kit's loop server) while %d callers block", fp.TraceConns/max(fp.Loops, 1), fp.TraceConns, fp.TraceCallers)},
		{"repetitions", fmt.Sprint(fp.Repeat)},
		{"pinned to CPU sets", fmt.Sprint(rp.Pin)},
		{"command", "./run.sh " + strings.Join(rp.Args, " ")},
	}
	if fp.Stage {
		p.Params = append(p.Params, kv{"the stage (--stage)", findings.OnStage})
	}
	if line := asIsLine(rp.Targets); line != "" {
		p.Params = slices.Insert(p.Params, 9, kv{"measured as it is (--load, --bystander)", line})
	}
	if f.AllAsIs() {
		// Only servers measured as they are: the kit's servers' and the
		// protocol's parameters were no part of the run; its sweep began at
		// 1 caller.
		p.Params = slices.DeleteFunc(p.Params, func(v kv) bool { return kitOnly[v.K] })
		for i := range p.Params {
			if p.Params[i].K == "callers" {
				p.Params[i].V = "1 (the call's own time), " + p.Params[i].V
			}
		}
	}
	m := run.Manifest
	p.Env = []kv{
		{"started", m.StartUTC}, {"ended", m.EndUTC}, {"git commit", m.GitCommit}, {"Go", m.GoVersion},
		{"kernel", m.Kernel}, {"CPU", fmt.Sprintf("%s, %d cores", m.CPUModel, m.Cores)},
	}
	if len(f.Sweep) > 0 || len(f.AsIs) == 0 {
		p.Sections = append(p.Sections, throughputChart(f), bystanderChart(f), timelineChart(f))
		p.Sections = append(p.Sections, lagCharts(f, "sweep", "3b", "during the sweep")...)
	}
	// Servers measured as they are: their sweep is their own story.
	p.Sections = append(p.Sections, asIsSections(f)...)
	// A phase this run did not run has no section; one line says which,
	// and why.
	skips := f.Skips()
	p.NotRun = notRunLine(f.Run.Params.Phases, skips)
	ran := func(phase string) bool {
		return !slices.ContainsFunc(skips, func(s findings.PhaseSkips) bool { return s.Phase == phase && !s.Ran })
	}
	if ran("stall") {
		p.Sections = append(p.Sections, stallCharts(f, skips)...)
		p.Sections = append(p.Sections, lagCharts(f, "stall", "4b", "while k loops were kept blocked")...)
	}
	for _, ph := range []struct {
		name string
		sec  func(*findings.Findings) section
	}{{"offload", offloadChart}, {"trace", traceChart}, {"cliff", cliffChart}} {
		if ran(ph.name) {
			p.Sections = append(p.Sections, ph.sec(f))
		}
	}
	if ran("slip") {
		p.Sections = append(p.Sections, slipCharts(f)...)
	}
	p.Sections = append(p.Sections, costSection(f), publishedSection(f), classesSection(f), calcSection(f))
	p.useAsset(a)
	return p
}

// kitOnly are the run's parameters of the kit's servers and the protocol's
// phases: a run of servers measured as they are has none.
var kitOnly = map[string]bool{"block (sweep, offload)": true, "block (stall, trace, cliff)": true, "how the call blocks": true, "database": true,
	"/async delay": true, "servers": true, "/fast bystander": true, "stall phase": true, "trace phase": true}

// useAsset inlines the verified echarts build (checkJS), packed, so the
// page works offline, or names the CDN it loads it from instead.
func (p *page) useAsset(a Asset) {
	p.Echarts = a.script()
	if a.js == nil {
		p.CDN, p.CDNNote = echartsCDN, a.note
	}
}

// dbLine says which database the servers called and through how many
// connections each, or "none".
func dbLine(rp results.RunParams) string {
	if rp.DBPool == 0 {
		return "none (the call does not touch one)"
	}
	return fmt.Sprintf("%s; %s per server", orNone(rp.DB, "not recorded"), words.Plural(rp.DBPool, "connection"))
}

// blockModeNote says what each block mode models.
var blockModeNote = map[string]string{
	"syscall": " (the thread is held in nanosleep, as a JDBC read or Thread.sleep holds a Java thread)",
	"sleep":   " (time.Sleep: the goroutine is parked, its thread free for others)",
	"spin":    " (a CPU-bound handler: the thread burns a core)",
	"postgres": " (SELECT pg_sleep on a real PostgreSQL connection from each server's pool: a database call, with a second ceiling, " +
		"the connections' / block, wherever they are fewer than the workers)",
}

// The page's HTML and its drawing script are files of their own,
// embedded, so they can be read, linted and diffed as what they are.
var (
	//go:embed page.html
	pageHTML string
	//go:embed page.js
	pageJS string

	tpl = template.Must(template.New("page").Parse(pageHTML))
)

// writePage writes the page. The charts' scripts go in one packed
// script, not beside each chart: their data is most of a page (200 KB of
// a default run's 520), and packed it is a fifth of that (docs/measurements.md).
func writePage(w io.Writer, p page) error {
	p.Script = template.JS(pageJS)
	p.Sections = numbered(p.Sections)
	var charts strings.Builder
	for i, sec := range p.Sections {
		if sec.Script == "" {
			continue
		}
		js, open := strings.CutPrefix(string(sec.Script), "<script>")
		js, closed := strings.CutSuffix(js, "</script>")
		if !open || !closed {
			return fmt.Errorf("report: the chart %s's script is not one script element", sec.ID)
		}
		charts.WriteString(js + "\n")
		p.Sections[i].Script = ""
	}
	if charts.Len() > 0 {
		// Base64 has nothing to escape in a JS string or an HTML script.
		p.Charts = template.HTML(`<script>window.bystanderChartsPacked = "` + base64.StdEncoding.EncodeToString(pack([]byte(charts.String()))) + `";</script>`)
	}
	var buf bytes.Buffer
	if err := tpl.Execute(&buf, p); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// notRunLine says in one line which phases after the sweep the run did not
// run, or skipped a server in, and why ("" for none): as the terminal says
// it when the run begins.
func notRunLine(asked []string, skips []findings.PhaseSkips) string {
	var notAsked, nothing []string
	clauses := prose.SkippedPhases(skips, "the phases at the end say why, phase by phase")
	for _, ps := range skips {
		switch {
		case len(ps.Skipped) > 0:
		case !ps.Asked:
			notAsked = append(notAsked, ps.Phase)
		default:
			nothing = append(nothing, ps.Phase)
		}
	}
	if len(notAsked) > 0 {
		clauses = append(clauses, fmt.Sprintf("%s %s not asked for (--phases %s)", prose.PhasesText(notAsked), wasWere(notAsked), strings.Join(asked, ",")))
	}
	if len(nothing) > 0 {
		clauses = append(clauses, fmt.Sprintf("%s %s asked for, but no server of this run takes part (see --servers)", prose.PhasesText(nothing), wasWere(nothing)))
	}
	if len(clauses) == 0 {
		return ""
	}
	return "Not on this page: " + strings.Join(clauses, "; ") + "."
}

func wasWere(v []string) string {
	if len(v) == 1 {
		return "was"
	}
	return "were"
}

// numbered are the sections, a copy, numbered 1, 2, 3, ... in the order
// they stand. A title's own number ("4. Who stalls", "3b. Each loop's own
// lag") is its place on a page of every phase: sections of one number (a
// server each) share theirs, and a letter after it (3b) goes with the
// section before, whatever the page leaves out.
func numbered(secs []section) []section {
	out := slices.Clone(secs)
	n, key, letter := 0, "", 'a'
	for i := range out {
		m := sectionNumber.FindStringSubmatch(out[i].Title)
		if m == nil {
			continue
		}
		num, sub := m[1], m[2]
		if m[1]+m[2] != key {
			prev := sectionNumber.FindStringSubmatch(key + ". ")
			switch {
			case sub != "" && prev != nil && prev[1] == num:
				letter++
			default:
				n, letter = n+1, 'a'
			}
			key = num + sub
		}
		label := strconv.Itoa(n)
		if letter > 'a' {
			label += string(letter)
		}
		out[i].Title = label + ". " + out[i].Title[len(m[0]):]
	}
	return out
}

// sectionNumber is a section title's number, its letter, and the ". "
// after them.
var sectionNumber = regexp.MustCompile(`^([0-9]+)([a-z]?)\. `)

// asIsLine says what each server measured as it is was asked ("" for
// none).
func asIsLine(ts []results.Server) string {
	var out []string
	for _, t := range ts {
		if t.AsIs() {
			out = append(out, fmt.Sprintf("%s: the load %s, the bystander %s", t.Name, t.Load, t.Bystander))
		}
	}
	return strings.Join(out, "; ")
}

// targetsLine lists the servers the user started, as the run resolved them.
func targetsLine(ts []results.Server) string {
	if len(ts) == 0 {
		return "none"
	}
	var out []string
	for _, t := range ts {
		out = append(out, fmt.Sprintf("%s at %s: %s", t.Name, t.URL, t.Facts))
	}
	return strings.Join(out, "; ")
}
