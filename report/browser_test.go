package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bystander-kit/bystander/internal/browsertest"
	"github.com/bystander-kit/bystander/internal/findings"
)

// inlined is the verified echarts asset; without it the browser tests
// skip, except in CI, where .ci/run fetches it first.
func inlined(t *testing.T) asset {
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
// network closed: it must draw every chart from the inlined echarts, ask
// for nothing but file: and data: URLs, and log no error.
func TestInBrowser(t *testing.T) {
	chrome, a := browsertest.Chromium(t), inlined(t)
	run := readTestRun(t)
	out := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := writePage(f, buildPage(findings.Compute(testRun, run), a)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	st, _ := os.Stat(out)
	t.Logf("report of a default run: %d KB", st.Size()/1024)
	if st.Size() > 700*1000 {
		t.Errorf("report is %d bytes, over 700 KB", st.Size())
	}

	// The height of a full-page screenshot: every chart must be drawn in
	// it without scrolling or printing.
	ctx, problems := browsertest.Open(t, chrome, 1300, 9000)
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+out), chromedp.WaitReady("#cost")); err != nil {
		t.Fatal(err)
	}
	// The page draws every chart at load, by itself.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool]("window.bystanderAllDrawnMs > 0", chromedp.WithPollingInterval(10*time.Millisecond))); err != nil {
		t.Fatalf("the charts were not drawn: %v; the page said: %q", err, problems())
	}
	// Every chart container holds a canvas with something painted on it.
	blank, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
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
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if len(blank) > 0 {
		t.Errorf("chart containers with nothing drawn at load: %v", blank)
	}
	// Every chart: an echarts instance with series that have data.
	type drawn struct {
		Charts  map[string]struct{ Series, Empty int }
		XType   string
		Ceiling []float64
		Painted bool
		DrawnMs float64
	}
	const js = `(() => {
	  let out = {Charts: {}, XType: "", Ceiling: [], Painted: false, DrawnMs: window.bystanderAllDrawnMs};
	  for (const el of document.querySelectorAll('.item')) {
	    const inst = echarts.getInstanceByDom(el);
	    if (!inst) { out.Charts[el.id] = {Series: -1, Empty: 0}; continue; }
	    const series = inst.getOption().series;
	    out.Charts[el.id] = {Series: series.length, Empty: series.filter(s => !s.data || s.data.length === 0).length};
	  }
	  const tp = echarts.getInstanceByDom(document.getElementById('throughput'));
	  out.XType = tp.getOption().xAxis[0].type;
	  const ceiling = tp.getOption().series.find(s => s.name.startsWith('ceiling loop-'));
	  if (ceiling) {
	    const p = tp.convertToPixel({seriesName: ceiling.name}, ceiling.data[0].value || ceiling.data[0]);
	    const q = tp.convertToPixel({seriesName: ceiling.name}, ceiling.data[1].value || ceiling.data[1]);
	    out.Ceiling = [p[0], p[1], q[0], q[1]];
	    const canvas = document.getElementById('throughput').querySelector('canvas');
	    const ctx = canvas.getContext('2d');
	    const dpr = canvas.width / canvas.clientWidth;
	    const y = Math.round(p[1] * dpr);
	    for (let x = Math.round((p[0] + (q[0] - p[0]) * 0.3) * dpr); x < (p[0] + (q[0] - p[0]) * 0.3 + 40) * dpr; x++) {
	      const d = ctx.getImageData(x, y, 1, 1).data;
	      if (d[3] > 0 && (d[0] < 230 || d[1] < 230 || d[2] < 230)) { out.Painted = true; break; }
	    }
	  }
	  return out;
	})()`
	check, err := chromedp.Run(ctx, chromedp.Evaluate[drawn](js))
	if err != nil {
		t.Fatal(err)
	}
	// From navigation start to the first frame after every chart was set up.
	marks, _ := chromedp.Run(ctx, chromedp.Evaluate[[]map[string]any](`performance.getEntriesByType('mark').map(m => ({name: m.name, ms: Math.round(m.startTime)}))`))
	// Timings for the note (docs/measurements.md), not assertions: the page's
	// clock starts at navigation.
	t.Logf("every chart drawn %.0f ms after navigation (%s with the test's polling); marks %v",
		check.DrawnMs, time.Since(start).Round(time.Millisecond), marks)
	want := []string{"throughput", "bystander", "timeline", "lag_sweep_loop_gnet", "stall_loop_gnet", "stall_pool", "lag_stall_loop_gnet", "offload", "trace", "cliff"}
	for _, id := range want {
		c, ok := check.Charts[id]
		switch {
		case !ok:
			t.Errorf("chart %s is not on the page", id)
		case c.Series <= 0:
			t.Errorf("chart %s has no echarts instance or no series", id)
		case c.Empty > 0:
			t.Errorf("chart %s has %d empty series", id, c.Empty)
		}
	}
	if len(check.Charts) != len(want) {
		t.Errorf("charts on the page: %v", check.Charts)
	}
	if check.XType != "log" {
		t.Errorf("throughput x axis is %q, want log", check.XType)
	}
	if len(check.Ceiling) != 4 || !check.Painted {
		t.Errorf("the ceiling line is not drawn where it should be: %v painted %v", check.Ceiling, check.Painted)
	}
	for _, p := range problems() {
		t.Error(p)
	}
}

// TestCompareInBrowser: the comparison page of two real runs draws both
// overlays with A's and B's series from the inlined echarts, with the
// network closed and no error.
func TestCompareInBrowser(t *testing.T) {
	chrome := browsertest.Chromium(t)
	inlined(t) // mainExit inlines the same cached asset
	out := filepath.Join(t.TempDir(), "compare.html")
	var stdout, stderr strings.Builder
	if rc := mainExit([]string{"--compare", testRun, offloadRun, "--out", out}, &stdout, &stderr); rc != 0 {
		t.Fatalf("exit %d: %s", rc, stderr.String())
	}
	ctx, problems := browsertest.Open(t, chrome, 1200, 900)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+out), chromedp.WaitReady("#cmp_table")); err != nil {
		t.Fatal(err)
	}
	type chart struct{ Series []string }
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool]("window.bystanderAllDrawnMs > 0", chromedp.WithPollingInterval(10*time.Millisecond))); err != nil {
		t.Fatalf("the charts were not drawn: %v; the page said: %q", err, problems())
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]chart](`(() => {
	  const out = {};
	  for (const id of ['cmp_throughput', 'cmp_fast']) {
	    const inst = echarts.getInstanceByDom(document.getElementById(id));
	    out[id] = {Series: inst ? inst.getOption().series.filter(s => s.data && s.data.length > 0).map(s => s.name) : []};
	  }
	  return out;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"cmp_throughput", "cmp_fast"} {
		names := strings.Join(got[id].Series, "|")
		if !strings.Contains(names, "A: loop-gnet /slow") || !strings.Contains(names, "B: loop-gnet /offload") {
			t.Errorf("%s: series %q, want A's /slow and B's /offload", id, names)
		}
	}
	if !strings.Contains(strings.Join(got["cmp_throughput"].Series, "|"), "B ceiling loop-gnet: 200 offload workers / 5ms") {
		t.Errorf("the throughput overlay lacks B's ceiling: %q", got["cmp_throughput"].Series)
	}
	for _, p := range problems() {
		t.Error(p)
	}
}
