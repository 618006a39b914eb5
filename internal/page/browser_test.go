package page

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bystander-kit/bystander/internal/browsertest"
	"github.com/bystander-kit/bystander/internal/compare"
	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/prose"
)

// inlined is the verified echarts Asset; without it the browser tests
// skip, except in CI, where .ci/run fetches it first.
func inlined(t *testing.T) Asset {
	t.Helper()
	a := loadAsset("", false, os.Stderr)
	if a.js == nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI: echarts could not be had: %s", a.note)
		}
		t.Skipf("echarts could not be had (%s)", a.note)
	}
	return a
}

// TestInBrowser opens a report of a real run in headless chromium with the
// network closed, at 1300 px wide and on a 1600x900 projector page: it
// must draw every chart from the inlined echarts, ask for nothing but
// file: and data: URLs, and log no error; every legend whole, every
// ceiling labelled on its line, the headline card's numbers those of the
// tables; and it writes a screenshot of every chart for a person to look at.
func TestInBrowser(t *testing.T) {
	chrome, a := browsertest.Chromium(t), inlined(t)
	run := readTestRun(t)
	f := findings.Compute(testRun, run)
	out, size := writeReport(t, f, a)
	t.Logf("report of a default run: %d KB", size>>10)
	if size > 400<<10 { // 520 KB with each chart's script beside it; packed, under 400 (TestChartsPacked)
		t.Errorf("a default run's report is %d KB, over 400", size>>10)
	}
	shots := browsertest.ShotsDir(t)
	for _, size := range [][2]int{{1300, 9000}, {1600, 900}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			checkReport(t, chrome, out, f, size[0], size[1], shots)
		})
	}
}

// writeReport writes f's report, echarts from a, to a file of the test's
// and returns its path and size.
func writeReport(t *testing.T, f *findings.Findings, a Asset) (string, int) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report.html")
	var buf bytes.Buffer
	if err := writePage(&buf, buildPage(f, a)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out, buf.Len()
}

// openDrawn opens the page at out in a w x h browser, once ready holds,
// and waits until the page has drawn every chart at load, by itself.
func openDrawn(t *testing.T, chrome, out, ready string, w, h int) (context.Context, func() []string) {
	t.Helper()
	ctx, problems := browsertest.Open(t, chrome, w, h)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+out), chromedp.WaitReady(ready)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool]("window.bystanderAllDrawnMs > 0", chromedp.WithPollingInterval(10*time.Millisecond))); err != nil {
		t.Fatalf("the charts were not drawn: %v; the page said: %q", err, problems())
	}
	return ctx, problems
}

// blankChartsJS evaluates to the ids of the chart containers with nothing
// painted on their canvas.
const blankChartsJS = `(() => {
	  const blank = [];
	  for (const el of document.querySelectorAll('.item')) {
	    const c = el.querySelector('canvas');
	    let painted = false;
	    if (c && c.width > 0 && c.height > 0) {
	      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
	      for (let i = 3; i < d.length; i += 4 * 97) { if (d[i] > 0 && (d[i-3] < 240 || d[i-2] < 240 || d[i-1] < 240)) { painted = true; break; } }
	    }
	    if (!painted) { blank.push(el.id); }
	  }
	  return blank;
	})()`

// TestSlipInBrowser: the bad afternoon of a real run (the slip phase of a
// default run) drawn at load in a real browser: both charts painted, each
// server's ceiling step labelled with its figures, the step's moment
// labelled, clear of every line, legends where they fit, and the page logs
// no error.
func TestSlipInBrowser(t *testing.T) {
	chrome, a := browsertest.Chromium(t), inlined(t)
	const slipRun = "../findings/testdata/slip-run"
	f, err := findings.Read(slipRun)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := writeReport(t, f, a)
	ctx, problems := openDrawn(t, chrome, out, "#slip_fast", 1300, 900)
	blank, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](blankChartsJS))
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(blank, "slip") || slices.Contains(blank, "slip_fast") {
		t.Errorf("nothing painted in %v", blank)
	}
	layout, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]browsertest.ChartLayout](browsertest.ChartLayoutJS))
	if err != nil {
		t.Fatal(err)
	}
	browsertest.CheckLegends(t, layout)
	// The step's label beside the step, on no line: neither the step's
	// own nor a server's.
	browsertest.CheckLabelsClear(t, ctx, "slip", "slip_fast")
	// Each ceiling's step is named in the legend; the step is labelled.
	labels, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
	  const opt = echarts.getInstanceByDom(document.getElementById('slip')).getOption();
	  const out = [...opt.legend[0].data];
	  for (const s of opt.series) {
	    for (const d of s.data) { if (d && d.name && s.label && s.label.show) { out.push(d.name); } }
	  }
	  return out;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Slip {
		if !slices.ContainsFunc(labels, func(l string) bool {
			return strings.Contains(l, r.Step.Server.Name) && strings.Contains(l, prose.SlipCeiling(r))
		}) {
			t.Errorf("no label says %s's ceiling %q: %q", r.Step.Server.Name, prose.SlipCeiling(r), labels)
		}
	}
	if !slices.Contains(labels, "the call: 5ms -> 50ms") || layout["slip"].Legend == "" {
		t.Errorf("the step is not labelled: %q", labels)
	}
	for _, p := range problems() {
		t.Error(p)
	}
}

func checkReport(t *testing.T, chrome, out string, f *findings.Findings, w, h int, shots string) {
	start := time.Now()
	ctx, problems := openDrawn(t, chrome, out, "#cost", w, h)
	// Every chart container holds a canvas with something painted on it.
	blank, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](blankChartsJS))
	if err != nil {
		t.Fatal(err)
	}
	if len(blank) > 0 {
		t.Errorf("chart containers with nothing drawn at load: %v", blank)
	}
	layout, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]browsertest.ChartLayout](browsertest.ChartLayoutJS))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"throughput", "bystander", "timeline", "lag_sweep_loop_gnet", "stall_loop_gnet", "stall_pool", "lag_stall_loop_gnet", "offload", "trace", "cliff", "classes_chart"}
	for _, id := range want {
		c, ok := layout[id]
		switch {
		case !ok:
			t.Errorf("chart %s is not on the page", id)
		case c.Series <= 0:
			t.Errorf("chart %s has no echarts instance or no series", id)
		case c.Empty > 0:
			t.Errorf("chart %s has %d empty series", id, c.Empty)
		}
	}
	if len(layout) != len(want) {
		t.Errorf("charts on the page: %v", layout)
	}
	browsertest.CheckLegends(t, layout)
	browsertest.CheckLabelsApart(t, ctx)
	for _, id := range []string{"throughput", "bystander", "timeline", "offload", "trace", "cliff", "classes_chart"} {
		if layout[id].Legend == "" {
			t.Errorf("%s: no legend", id)
		}
	}

	// The ceilings: each labelled on its line, and the loops' drawn where
	// its value is.
	type ceilings struct {
		XType   string
		Labels  []string
		Line    []float64
		Painted bool
		Bars    []float64 // the cliff's: the axis's start and its smallest bar
	}
	check, err := chromedp.Run(ctx, chromedp.Evaluate[ceilings](`(() => {
	  const out = {XType: "", Labels: [], Line: [], Painted: false, Bars: []};
	  const tp = echarts.getInstanceByDom(document.getElementById('throughput'));
	  const opt = tp.getOption();
	  out.XType = opt.xAxis[0].type;
	  for (const s of opt.series) {
	    for (const d of s.data) {
	      if (d && d.name && d.name.startsWith('ceiling of') && s.label && s.label.show) { out.Labels.push(d.name); }
	    }
	  }
	  const loops = opt.series.find(s => s.data.length === 2 && s.data[1].name && s.data[1].name.startsWith('ceiling of loop-gnet'));
	  if (loops) {
	    const p = tp.convertToPixel({seriesName: loops.name}, loops.data[0].value);
	    const q = tp.convertToPixel({seriesName: loops.name}, loops.data[1].value);
	    out.Line = [p[0], p[1], q[0], q[1]];
	    const canvas = document.getElementById('throughput').querySelector('canvas');
	    const ctx = canvas.getContext('2d');
	    const dpr = canvas.width / canvas.clientWidth;
	    const y = Math.round(p[1] * dpr);
	    for (let x = Math.round((p[0] + (q[0] - p[0]) * 0.3) * dpr); x < (p[0] + (q[0] - p[0]) * 0.3 + 40) * dpr; x++) {
	      const d = ctx.getImageData(x, y, 1, 1).data;
	      if (d[3] > 0 && (d[0] < 230 || d[1] < 230 || d[2] < 230)) { out.Painted = true; break; }
	    }
	  }
	  const cl = echarts.getInstanceByDom(document.getElementById('cliff'));
	  const y = cl.getModel().getComponent('yAxis').axis;
	  let smallest = Infinity;
	  for (const s of cl.getOption().series) { for (const d of s.data) { smallest = Math.min(smallest, d.value); } }
	  out.Bars = [y.scale.getExtent()[0], smallest, cl.getModel().getComponent('yAxis').get('startValue') || 1];
	  return out;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if check.XType != "log" {
		t.Errorf("throughput x axis is %q, want log", check.XType)
	}
	for _, sv := range f.Servers {
		if prose.ServerCeiling(sv) == "" || !slices.Contains(sv.Phases, "sweep") {
			continue
		}
		found := false
		for _, l := range check.Labels {
			found = found || strings.Contains(l, prose.ServerCeiling(sv)) && strings.Contains(l, sv.Name)
		}
		if !found {
			t.Errorf("no label on the chart says %s's ceiling %q: %q", sv.Name, prose.ServerCeiling(sv), check.Labels)
		}
	}
	if len(check.Line) != 4 || !check.Painted {
		t.Errorf("the loops' ceiling is not drawn where it should be: %v painted %v", check.Line, check.Painted)
	}
	// Bars on a log axis start below the smallest: the axis, and the value
	// the bars rise from (echarts: 1, unless the axis's startValue says).
	if b := check.Bars; len(b) != 3 || b[0] > b[1] || b[2] > b[1] {
		t.Errorf("the cliff's bars: axis from %v, bars from %v, the smallest bar %v: a bar hangs from the axis", b[0], b[2], b[1])
	}

	// The headline card: its numbers are the findings' (which are the
	// tables', internal/findings), and the same as the published
	// comparison's table on the same page.
	type tile struct{ Server, Throughput, Fast, PubThroughput string }
	type card struct {
		Tiles     []tile
		Published [][]string
		Stalled   map[string]string
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[card](`(() => {
	  const text = (el, sel) => { const e = el.querySelector(sel); return e ? e.textContent : ""; };
	  const out = {Tiles: [], Published: [], Stalled: {}};
	  for (const el of document.querySelectorAll('#headline .tile')) {
	    out.Tiles.push({Server: el.dataset.server, Throughput: text(el, '[data-figure=throughput]'), Fast: text(el, '[data-figure=fast]'),
	      PubThroughput: text(el, '[data-figure=published-throughput]')});
	  }
	  for (const el of document.querySelectorAll('#headline .line')) {
	    const s = el.querySelector('[data-figure=stalled]');
	    if (s) { out.Stalled[el.dataset.server] = s.textContent; }
	  }
	  for (const tr of document.querySelectorAll('#published tr')) { out.Published.push([...tr.querySelectorAll('td')].map(td => td.textContent)); }
	  return out;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	hl := prose.Headline(f)
	if len(got.Tiles) != len(hl.Servers) || len(hl.Servers) == 0 {
		t.Errorf("the card shows %d servers, the findings %d", len(got.Tiles), len(hl.Servers))
	}
	for i, s := range hl.Servers {
		if i >= len(got.Tiles) {
			break
		}
		g := got.Tiles[i]
		if g.Server != s.Name || g.Throughput != s.Throughput || g.Fast != s.Fast || g.PubThroughput != s.PublishedThroughput {
			t.Errorf("card tile %+v, findings %+v", g, s)
		}
		matched := false
		for _, row := range got.Published {
			if len(row) > 2 && row[0] == "/slow throughput, 5ms block" && row[1] == s.Name {
				matched = true
				if row[2] != g.Throughput {
					t.Errorf("%s: the card says %q, the published comparison %q", s.Name, g.Throughput, row[2])
				}
			}
		}
		if !matched && s.PublishedThroughput != "" {
			t.Errorf("%s: the card gives a published figure the comparison's table has no row for", s.Name)
		}
	}
	for _, st := range hl.Stalls {
		if got.Stalled[st.Name] != st.Line() {
			t.Errorf("%s: the card says stalled %q, the findings %q", st.Name, got.Stalled[st.Name], st.Line())
		}
	}

	// The ceiling calculator: a preset of this run's first server, then a
	// figure typed, then one it refuses.
	type calcOut struct{ Preset, Typed, Over, Bad string }
	calc, err := chromedp.Run(ctx, chromedp.Evaluate[calcOut](`(() => {
	  const $ = id => document.getElementById(id), out = {};
	  const set = (id, v) => { $(id).value = v; $(id).dispatchEvent(new Event('input', {bubbles: true})); };
	  document.querySelector('.calc-preset').click();
	  out.Preset = $('calc_out').textContent;
	  set('calc_workers', '4'); set('calc_block', '5'); set('calc_share', '100'); set('calc_peak', '500');
	  out.Typed = $('calc_out').textContent;
	  set('calc_peak', '1000');
	  out.Over = $('calc_out').textContent;
	  set('calc_block', '0');
	  out.Bad = $('calc_out').textContent;
	  return out;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if p := f.Presets(); len(p) == 0 || !strings.HasPrefix(calc.Preset, fmt.Sprintf("Ceiling: %d / ", p[0].Workers)) {
		t.Errorf("the calculator's first preset %+v gave %q", p, calc.Preset)
	}
	for got, want := range map[string]string{
		calc.Typed: "Ceiling: 4 / 5 ms = 800 requests/s. Peak 500/s: headroom 1.60x (60 % to spare). If the call slows 10x (5 to 50 ms), the ceiling falls to 80/s, below the peak.",
		calc.Over:  "Peak 1,000/s is 1.25x what it can serve: it needs 5 workers, or a call 4.00 ms long.",
		calc.Bad:   "Give workers (1 or more)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the calculator says %q, want %q in it", got, want)
		}
	}

	// From navigation start to the first frame after every chart was set up.
	marks, _ := chromedp.Run(ctx, chromedp.Evaluate[[]map[string]any](`performance.getEntriesByType('mark').map(m => ({name: m.name, ms: Math.round(m.startTime)}))`))
	// Timings for the note (docs/measurements.md), not assertions.
	t.Logf("every chart drawn, %s with the test's polling; marks %v", time.Since(start).Round(time.Millisecond), marks)

	// A screenshot of the card and of every chart, for a person to look at.
	name := fmt.Sprintf("report-%dx%d", w, h)
	browsertest.Shot(t, ctx, shots, "#headline", name+"-headline")
	browsertest.Shot(t, ctx, shots, "#calc", name+"-calc")
	for _, id := range want {
		browsertest.Shot(t, ctx, shots, "#"+id, name+"-"+id)
	}
	for _, p := range problems() {
		t.Error(p)
	}
}

// TestCompareInBrowser: the comparison page of two real runs draws both
// overlays with A's and B's series from the inlined echarts, with the
// network closed and no error: each server in one hue in both runs, every
// legend whole, each ceiling labelled on its line, the changes that matter
// in a table of their own and the rest folded; at 1300 px and 1600x900.
func TestCompareInBrowser(t *testing.T) {
	chrome := browsertest.Chromium(t)
	c, err := compare.Runs(testRun, offloadRun)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Compare(c, inlined(t))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "compare.html")
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	shots := browsertest.ShotsDir(t)
	for _, size := range [][2]int{{1300, 3000}, {1600, 900}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			ctx, problems := browsertest.Open(t, chrome, size[0], size[1])
			if err := chromedp.Do(ctx, chromedp.Navigate("file://"+out), chromedp.WaitReady("#cmp_table")); err != nil {
				t.Fatal(err)
			}
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool]("window.bystanderAllDrawnMs > 0", chromedp.WithPollingInterval(10*time.Millisecond))); err != nil {
				t.Fatalf("the charts were not drawn: %v; the page said: %q", err, problems())
			}
			type series struct {
				Name, Color, Type string
				Ceiling           bool
			}
			type chart struct {
				Series []series
				Labels []string
			}
			type pageCheck struct {
				Charts              map[string]chart
				FirstRows, RestRows int
				RestOpen            bool
			}
			got, err := chromedp.Run(ctx, chromedp.Evaluate[pageCheck](`(() => {
			  const out = {Charts: {}, FirstRows: document.querySelectorAll('#cmp_table tr').length - 1,
			    RestRows: document.querySelectorAll('#cmp_rest tr').length - 1, RestOpen: !!document.querySelector('details[open]')};
			  for (const id of ['cmp_throughput', 'cmp_fast']) {
			    const inst = echarts.getInstanceByDom(document.getElementById(id));
			    const c = {Series: [], Labels: []};
			    for (const s of (inst ? inst.getOption().series : [])) {
			      if (!s.data || !s.data.length) { continue; }
			      const ceiling = s.data.some(d => d && d.name && d.name.startsWith('ceiling of'));
			      c.Series.push({Name: s.name, Color: (s.itemStyle || {}).color || "", Type: (s.lineStyle || {}).type || "solid", Ceiling: ceiling});
			      for (const d of s.data) { if (d && d.name && d.name.startsWith('ceiling of') && s.label && s.label.show) { c.Labels.push(d.name); } }
			    }
			    out.Charts[id] = c;
			  }
			  return out;
			})()`))
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"cmp_throughput", "cmp_fast"} {
				var names []string
				hue := map[string]string{}
				for _, s := range got.Charts[id].Series {
					names = append(names, s.Name)
					// "A: loop-gnet /slow" and "B: loop-gnet /offload": one hue,
					// A solid and B dashed.
					run, rest, _ := strings.Cut(s.Name, ": ")
					server, _, _ := strings.Cut(rest, " ")
					if h, ok := hue[server]; ok && h != s.Color {
						t.Errorf("%s: %s is %s here and %s elsewhere", id, server, s.Color, h)
					}
					hue[server] = s.Color
					if want := map[string]string{"A": "solid", "B": "dashed"}[run]; !s.Ceiling && s.Type != want {
						t.Errorf("%s: %s drawn %s, want %s", id, s.Name, s.Type, want)
					}
				}
				joined := strings.Join(names, "|")
				if !strings.Contains(joined, "A: loop-gnet /slow") || !strings.Contains(joined, "B: loop-gnet /offload") {
					t.Errorf("%s: series %q, want A's /slow and B's /offload", id, joined)
				}
			}
			labels := strings.Join(got.Charts["cmp_throughput"].Labels, "|")
			if !strings.Contains(labels, "B loop-gnet: 200 offload workers / 5ms") || !strings.Contains(labels, "A loop-gnet") || !strings.Contains(labels, "4 loops / 5ms = 800 req/s") {
				t.Errorf("the throughput overlay's ceiling labels: %q", labels)
			}
			if got.FirstRows <= 0 || got.RestRows <= 0 || got.RestOpen {
				t.Errorf("changes that matter: %d rows; the rest: %d rows, open %v: want both, the rest folded", got.FirstRows, got.RestRows, got.RestOpen)
			}
			layout, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]browsertest.ChartLayout](browsertest.ChartLayoutJS))
			if err != nil {
				t.Fatal(err)
			}
			browsertest.CheckLegends(t, layout)
			name := fmt.Sprintf("compare-%dx%d", size[0], size[1])
			for _, id := range []string{"cmp_throughput", "cmp_fast", "cmp_table"} {
				browsertest.Shot(t, ctx, shots, "#"+id, name+"-"+id)
			}
			for _, p := range problems() {
				t.Error(p)
			}
		})
	}
}
