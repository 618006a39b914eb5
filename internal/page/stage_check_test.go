package page

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/bystander-kit/bystander/internal/browsertest"
)

// stageCheckJS defines window.stageCheck(): what is wrong with the slide
// the page shows, as the room would see it, read from what was drawn (the
// page's boxes and echarts' display list of rendered text), never from the
// charts' options:
//   - two text boxes that overlap (of the page or of a chart's canvas);
//   - text outside its box (an element's text past its edge, a chart's
//     text past its canvas, anything past the stage);
//   - a number of four digits or more without separators (years and
//     ports aside);
//   - a line drawn wholly outside its chart's plot (a tick, a split line,
//     a band, a series' line);
//   - a label a series' line is drawn on (browsertest.LabelsOnLinesJS),
//     screen 1's points' labels aside;
//   - a time plot (screens 2, 3 and 6) whose data fill less than 80 % of
//     its time axis (data of one moment, a screen's first frame, fill
//     none);
//   - on the projector (not the speaker view), any data-operator element
//     shown.
//
// TestStageCheckCatches shows that each of these fails on a case made to
// break it.
const stageCheckJS = browsertest.LabelsOnLinesJS + `;
window.stageCheck = function () {
  const out = [], presenter = document.documentElement.classList.contains('presenter');
  const shown = e => {
    const r = e.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) { return false; }
    for (let x = e; x && x.nodeType === 1; x = x.parentElement) {
      const cs = getComputedStyle(x);
      if (cs.display === 'none' || cs.visibility === 'hidden' || +cs.opacity === 0) { return false; }
    }
    return true;
  };
  if (!presenter) {
    for (const e of document.querySelectorAll('[data-operator]')) {
      if (shown(e)) { out.push('an operator element on the projector: #' + e.id + ' ' + JSON.stringify(e.textContent.slice(0, 60))); }
    }
  }
  const stage = document.getElementById('stage'), sr = stage.getBoundingClientRect();
  const boxes = [], texts = [];
  let drawn = 0;
  const outside = (r, b) => r.left < b.left - 1 || r.top < b.top - 1 || r.right > b.right + 1 || r.bottom > b.bottom + 1;
  // The page's text: every text node shown in the stage, its own box.
  const walk = document.createTreeWalker(stage, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const e = n.parentElement;
    if (!n.textContent.trim() || !shown(e) || e.closest('.chart')) { continue; }
    const range = document.createRange();
    range.selectNodeContents(n);
    for (const r of range.getClientRects()) {
      if (r.width < 1 || r.height < 1) { continue; }
      boxes.push({what: n.textContent.trim().slice(0, 40), r: r});
      if (outside(r, sr)) { out.push('text outside the stage: ' + JSON.stringify(n.textContent.trim().slice(0, 40))); }
    }
    texts.push(n.textContent);
    const cs = getComputedStyle(e);
    if (cs.display !== 'inline' && (e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 2)) {
      out.push('text outside its box: ' + JSON.stringify(n.textContent.trim().slice(0, 40)) + ' (' + e.scrollWidth + 'x' + e.scrollHeight + ' in ' + e.clientWidth + 'x' + e.clientHeight + ')');
    }
    const er = e.getBoundingClientRect();
    for (const r of range.getClientRects()) {
      if (r.width >= 1 && cs.overflow === 'visible' && outside(r, er)) { out.push('text outside its box: ' + JSON.stringify(n.textContent.trim().slice(0, 40))); break; }
    }
  }
  // The charts' text, as echarts drew it: its display list (zrender draws
  // a text as its tspans).
  for (const div of stage.querySelectorAll('.chart')) {
    const inst = echarts.getInstanceByDom(div);
    if (!inst || !shown(div)) { continue; }
    const cr = div.getBoundingClientRect(), W = inst.getWidth(), H = inst.getHeight();
    for (const el of inst.getZr().storage.getDisplayList(true)) {
      if ((el.type !== 'tspan' && el.type !== 'text') || el.invisible || !el.style || !String(el.style.text || '').trim()) { continue; }
      if (el.style.opacity === 0) { continue; }
      const r = el.getBoundingRect().clone();
      if (el.transform) { r.applyTransform(el.transform); }
      const what = String(el.style.text).slice(0, 40);
      drawn++;
      texts.push(String(el.style.text));
      if (r.x < -1 || r.y < -1 || r.x + r.width > W + 1 || r.y + r.height > H + 1) { out.push('text outside its chart: ' + JSON.stringify(what) + ' at ' + [r.x, r.y, r.width, r.height].map(Math.round)); }
      boxes.push({what: what, r: {left: cr.left + r.x, top: cr.top + r.y, right: cr.left + r.x + r.width, bottom: cr.top + r.y + r.height}});
    }
    // A line drawn wholly outside the plot (an axis's tick or split line,
    // a band, a series' line), as screen 1's callers axis once drew its
    // first split line left of the req/s axis.
    const gm = inst.getModel().getComponent('grid'), g = gm && gm.coordinateSystem && gm.coordinateSystem.getRect();
    if (g) {
      for (const el of inst.getZr().storage.getDisplayList(true)) {
        if (!/^(line|ec-line|polyline|ec-polyline)$/.test(el.type) || el.invisible || el.ignore) { continue; }
        const r = el.getBoundingRect().clone(), m = el.getComputedTransform(), w = (el.style && el.style.lineWidth) || 1;
        if (m) { r.applyTransform(m); }
        r.x += w / 2; r.y += w / 2; r.width = Math.max(0, r.width - w); r.height = Math.max(0, r.height - w); // its path, not its stroke
        if (r.x + r.width < g.x - 1 || r.x > g.x + g.width + 1 || r.y + r.height < g.y - 1 || r.y > g.y + g.height + 1) {
          out.push('a line outside the plot of ' + div.id + ': ' + [r.x, r.y, r.width, r.height].map(Math.round) + ', the plot ' + [g.x, g.y, g.width, g.height].map(Math.round));
        }
      }
    }
    // Labels clear of the series' lines (browsertest.LabelsOnLinesJS), on
    // every chart but screen 1's: its points' labels sit beside their
    // points, where the bands and the pool's steep line pass (not yet
    // placed apart from them).
    if (div.id !== 'c1') {
      for (const p of labelsOnLines(inst)) { out.push('a label on a line of ' + div.id + ': ' + p); }
    }
    // A time axis the data fill (screens 2 and 6: value; 3: category).
    const time = {c2: 1, c3: 1, c6: 1}[div.id];
    if (!time) { continue; }
    const o = inst.getOption(), axis = inst.getModel().getComponent('xAxis', 0).axis;
    let lo = Infinity, hi = -Infinity;
    for (const s of o.series) { for (const d of s.data || []) { const x = Array.isArray(d) ? d[0] : d.value[0]; lo = Math.min(lo, x); hi = Math.max(hi, x); } }
    if (!(hi > lo)) { continue; } // no point yet, or one moment: nothing to fill
    let fill;
    if (axis.type === 'category') { fill = (hi - lo + 1) / o.xAxis[0].data.length; } else { const ext = axis.scale.getExtent(); fill = (hi - lo) / (ext[1] - ext[0]); }
    if (!(fill >= 0.8)) { out.push('the data fill ' + Math.round(100 * fill) + ' % of the time axis of ' + div.id); }
  }
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i].r, b = boxes[j].r;
      const ix = Math.min(a.right, b.right) - Math.max(a.left, b.left), iy = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (ix > 2 && iy > 2) { out.push('text overlaps: ' + JSON.stringify(boxes[i].what) + ' and ' + JSON.stringify(boxes[j].what)); }
    }
  }
  for (const t of texts) {
    for (const m of t.matchAll(/(^|[^\d,.:])(\d{4,})(?!\d)/g)) {
      const v = +m[2];
      if (m[2].length === 4 && v >= 1900 && v <= 2099) { continue; } // a year
      out.push('a number without separators: ' + m[2] + ' in ' + JSON.stringify(t.slice(0, 60)));
    }
  }
  window.stageCheckSeen = {boxes: boxes.length, drawn: drawn};
  return out;
};`

// TestStageCheckCatches shows that stageCheck fails on each thing it is
// for: on a slide of the real recording it says nothing, and it says each
// of a case made to break it (two labels drawn on one spot, a label past
// its chart, a number without separators beside a year, a port and one
// with them, an operator's line on the projector, a headline too long for
// its box, screen 1's callers axis starting at 3.2 (echarts draws its
// first split line at 3, left of the plot), a label on the middle of its
// own line, a time plot whose data fill a third of its axis).
func TestStageCheckCatches(t *testing.T) {
	chrome := browsertest.Chromium(t)
	srv, frames := replayedServer(t)
	ctx, _ := browsertest.Open(t, chrome, 1280, 720)
	open := func(keys ...string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf("window.stageFrames >= %d", frames), chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](stageCheckJS+"; true")); err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			press(t, ctx, k)
		}
	}
	check := func() []string {
		t.Helper()
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.stageCheck()`))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, c := range []struct {
		name, keys, breakJS, want string
		wants                     int
	}{
		{"labels on one spot", "home", `echarts.getInstanceByDom(document.getElementById('c1')).setOption({title: [
		  {text: 'one label', left: 300, top: 200, textStyle: {fontSize: 24}}, {text: 'another', left: 320, top: 206, textStyle: {fontSize: 24}}]})`, "text overlaps", 1},
		{"a label past its chart", "home", `echarts.getInstanceByDom(document.getElementById('c1')).setOption({title: [{text: 'cut at the edge', left: -40, top: 200, textStyle: {fontSize: 24}}]})`, "text outside its chart", 1},
		{"a number without separators", "home", `document.getElementById('where').textContent = '12345 req/s in 2026 on :8300, 12,345 and 0.12345'`, "a number without separators: 12345 ", 1},
		{"an operator's line", "home", `(() => { const d = document.createElement('div'); d.dataset.operator = ''; d.style.setProperty('display', 'block', 'important'); d.textContent = 'live: done'; document.getElementById('stage').append(d); })()`, "an operator element on the projector", 1},
		{"a headline past its box", "home", `(() => { const h = document.getElementById('headline'); h.style.fontSize = '80px'; h.textContent = 'a headline far too long for any projector this page is shown on'; })()`, "text outside its box", 1},
		{"a line outside the plot", "home", `echarts.getInstanceByDom(document.getElementById('c1')).setOption({xAxis: {min: 3.2}})`, "a line outside the plot of c1", 1},
		{"a label on its line", "home pgdn", `(() => { const c = echarts.getInstanceByDom(document.getElementById('c2')), e = c.getModel().getComponent('xAxis', 0).axis.scale.getExtent();
		  c.setOption({series: [{markLine: {symbol: 'none', data: [{xAxis: (e[0] + e[1]) / 2, label: {formatter: 'the call slows', position: 'insideMiddle'}}]}}]}); })()`, "a label on a line of c2", 1},
		{"a time plot a third full", "home pgdn", `(() => { const c = echarts.getInstanceByDom(document.getElementById('c2')); c.setOption({xAxis: {min: 0, max: 3 * c.getModel().getComponent('xAxis', 0).axis.scale.getExtent()[1]}}); })()`, "the data fill", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var keys []string
			for _, k := range strings.Fields(c.keys) {
				keys = append(keys, map[string]string{"home": kb.Home, "pgdn": kb.PageDown}[k])
			}
			open(keys...)
			if before := check(); len(before) > 0 {
				t.Fatalf("the slide as drawn: %q", before)
			}
			seen, _ := chromedp.Run(ctx, chromedp.Evaluate[map[string]int](`window.stageCheckSeen`))
			if seen["drawn"] < 5 {
				t.Fatalf("the check saw %v of the chart's text: it does not read echarts' display list", seen)
			}
			if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](c.breakJS)); err != nil {
				t.Fatal(err)
			}
			n := 0
			after := check()
			for _, p := range after {
				if strings.Contains(p, c.want) {
					n++
				}
			}
			if n < c.wants {
				t.Errorf("broken by %s, the check says %q; want %q", c.name, after, c.want)
			}
			if c.name == "a number without separators" && n != 1 {
				t.Errorf("a year, a port, 12,345 or a decimal taken for a number without separators: %q", after)
			}
		})
	}
}
