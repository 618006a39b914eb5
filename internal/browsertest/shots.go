package browsertest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

var logged sync.Once

// ShotsDir is where the browser tests write their screenshots, for a
// person to look at: $BYSTANDER_SHOTS when set (docs/development.md); ""
// when not, and then Shot takes none (a picture no one opens costs CI its
// time).
func ShotsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("BYSTANDER_SHOTS")
	if dir == "" {
		logged.Do(func() { t.Log("no screenshots taken: BYSTANDER_SHOTS=DIR writes them") })
		return ""
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	logged.Do(func() { t.Logf("screenshots in %s", dir) })
	return dir
}

// Shot writes a PNG of the element sel (a CSS selector) to dir/name.png;
// with no dir (ShotsDir's ""), nothing.
func Shot(t *testing.T, ctx context.Context, dir, sel, name string) {
	t.Helper()
	if dir == "" {
		return
	}
	if err := chromedp.Do(ctx, chromedp.ScrollIntoView(chromedp.CSS(sel))); err != nil {
		t.Errorf("scrolling to %s: %v", sel, err)
		return
	}
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	if err != nil {
		t.Errorf("screenshot of %s: %v", sel, err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Error(err)
	}
}

// ChartLayout is, for every echarts chart of a page (by its element's
// id), how it is laid out: its legend's type, whether shown, and its box
// beside the plot's, in the chart's pixels.
type ChartLayout struct {
	Series, Empty int
	Legend        string // "plain", "scroll", or "" when there is none
	LegendItems   int
	LegendBox     [4]float64 // x, y, width, height
	Grid          [4]float64
	Width, Height float64
}

// ChartLayoutJS evaluates to a map of ChartLayout by element id, over
// every element of class item (go-echarts' chart containers).
const ChartLayoutJS = `(() => {
  const out = {};
  for (const el of document.querySelectorAll('.item')) {
    const inst = echarts.getInstanceByDom(el);
    if (!inst) { out[el.id] = {Series: -1}; continue; }
    const series = inst.getOption().series;
    const o = {Series: series.length, Empty: series.filter(s => !s.data || s.data.length === 0).length, Legend: "", LegendItems: 0,
      LegendBox: [0, 0, 0, 0], Grid: [0, 0, 0, 0], Width: inst.getWidth(), Height: inst.getHeight()};
    const lm = inst.getModel().getComponent('legend');
    if (lm && lm.get('show')) {
      const g = inst.getViewOfComponentModel(lm).group;
      const r = g.getBoundingRect().clone();
      g.updateTransform();
      if (g.transform) { r.applyTransform(g.transform); }
      o.Legend = lm.get('type') || 'plain';
      o.LegendItems = lm.getData().length;
      o.LegendBox = [r.x, r.y, r.width, r.height];
    }
    const gm = inst.getModel().getComponent('grid');
    if (gm && gm.coordinateSystem) { const r = gm.coordinateSystem.getRect(); o.Grid = [r.x, r.y, r.width, r.height]; }
    out[el.id] = o;
  }
  return out;
})()`

// CheckLegends fails for a chart whose legend is paginated, leaves the
// chart, or lies on its plot or the x axis's name below it.
func CheckLegends(t *testing.T, charts map[string]ChartLayout) {
	t.Helper()
	for id, c := range charts {
		if c.Legend == "" {
			continue
		}
		lb, g := c.LegendBox, c.Grid
		switch {
		case c.Legend != "plain":
			t.Errorf("%s: a %s legend (paginated), want plain and whole", id, c.Legend)
		case lb[0] < 0 || lb[1] < 0 || lb[0]+lb[2] > c.Width+1 || lb[1]+lb[3] > c.Height+1:
			t.Errorf("%s: the legend %v leaves the chart (%.0fx%.0f)", id, lb, c.Width, c.Height)
		case g[3] > 0 && lb[1] < g[1]+g[3]+20:
			t.Errorf("%s: the legend (top %.0f) lies on the plot or its axis (plot bottom %.0f)", id, lb[1], g[1]+g[3])
		}
	}
}

// LabelsJS evaluates to, for every echarts chart of a page (by its
// element's id), the labels its series show (a point's, a ceiling's: texts
// on a chart's element, not its axes' or legend's), and the pairs of them,
// "A | B", that lie on each other by more than a pixel each way.
const LabelsJS = `(() => {
  const out = {};
  for (const el of document.querySelectorAll('.item')) {
    const inst = echarts.getInstanceByDom(el);
    if (!inst) { continue; }
    // On a canvas a label is drawn as tspans, children of its text, whose
    // host is the element it labels (axes' and legends' texts have none).
    const boxes = [], seen = new Set();
    for (const span of inst.getZr().storage.getDisplayList(true)) {
      const d = span.type === 'text' ? span : span.parent;
      if (!d || d.type !== 'text' || seen.has(d) || !d.__hostTarget || d.ignore || d.invisible || !d.style || !d.style.text) { continue; }
      seen.add(d);
      const r = d.getBoundingRect().clone();
      const m = d.getComputedTransform();
      if (m) { r.applyTransform(m); }
      boxes.push({text: String(d.style.text), r: r});
    }
    const o = {Texts: boxes.map(b => b.text), Overlaps: []};
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i].r, b = boxes[j].r;
        const w = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
        const h = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
        if (w > 1 && h > 1) { o.Overlaps.push(boxes[i].text + ' | ' + boxes[j].text); }
      }
    }
    out[el.id] = o;
  }
  return out;
})()`

// Labels are the labels a chart's series show, and those that overlap.
type Labels struct {
	Texts, Overlaps []string
}

// CheckLabelsApart fails for every chart of the page in ctx where two of
// its series' labels lie on each other (LabelsJS), naming them, and
// returns every chart's labels.
func CheckLabelsApart(t *testing.T, ctx context.Context) map[string]Labels {
	t.Helper()
	labels, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]Labels](LabelsJS))
	if err != nil {
		t.Fatal(err)
	}
	for id, l := range labels {
		if len(l.Overlaps) > 0 {
			t.Errorf("%s: labels lie on each other: %q", id, l.Overlaps)
		}
	}
	return labels
}

// LabelsOnLinesJS defines window.labelsOnLines(inst): for the echarts
// chart inst, each label its series show (a point's, a markLine's: texts
// with a host element, not its axes' or legend's) that a series' line
// (its polyline, a markLine's line, a band) is drawn across, said as
// "LABEL on a line (COLOUR, W px)". A label is clear of a line when the
// line's stroke (half its width either side) stays 3 px or more from the
// label's box: a label touching a line reads as struck through, or as the
// line's end. A label's own line counts: the step's label on its step.
const LabelsOnLinesJS = `window.labelsOnLines = function (inst) {
  const out = [], labels = [], lines = [], seen = new Set();
  const apply = (m, x, y) => m ? [m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]] : [x, y];
  for (const el of inst.getZr().storage.getDisplayList(true)) {
    const d = el.type === 'tspan' ? el.parent : el;
    if (d && d.type === 'text') {
      if (seen.has(d) || !d.__hostTarget || d.ignore || d.invisible || !d.style || !String(d.style.text || '').trim()) { continue; }
      seen.add(d);
      const r = d.getBoundingRect().clone(), m = d.getComputedTransform();
      if (m) { r.applyTransform(m); }
      labels.push({text: String(d.style.text), r: r});
      continue;
    }
    if ((el.type !== 'ec-polyline' && el.type !== 'ec-line') || el.ignore || el.invisible || !el.style || !el.style.stroke || el.style.stroke === 'none') { continue; }
    const m = el.getComputedTransform(), s = el.shape, pts = [];
    if (el.type === 'ec-line') {
      pts.push(apply(m, s.x1, s.y1), apply(m, s.x2, s.y2));
    } else {
      const p = s.points || [];
      if (p.length && Array.isArray(p[0])) { for (const q of p) { pts.push(apply(m, q[0], q[1])); } } else { for (let i = 0; i + 1 < p.length; i += 2) { pts.push(apply(m, p[i], p[i + 1])); } }
    }
    lines.push({pts: pts, w: el.style.lineWidth || 1, what: String(el.style.stroke) + ', ' + (el.style.lineWidth || 1) + ' px'});
  }
  for (const l of labels) {
    for (const ln of lines) {
      const g = ln.w / 2 + 3, x0 = l.r.x - g, y0 = l.r.y - g, x1 = l.r.x + l.r.width + g, y1 = l.r.y + l.r.height + g;
      let hit = false;
      for (let i = 0; i + 1 < ln.pts.length && !hit; i++) {
        const a = ln.pts[i], b = ln.pts[i + 1], n = Math.max(1, Math.ceil(Math.hypot(b[0] - a[0], b[1] - a[1])));
        for (let k = 0; k <= n; k++) {
          const x = a[0] + (b[0] - a[0]) * k / n, y = a[1] + (b[1] - a[1]) * k / n;
          if (x > x0 && x < x1 && y > y0 && y < y1) { hit = true; break; }
        }
      }
      if (hit) { out.push(JSON.stringify(l.text.slice(0, 40)) + ' on a line (' + ln.what + ')'); }
    }
  }
  return out;
};`

// CheckLabelsClear fails for each label of the charts ids (their
// elements' ids) that a series' line is drawn on (LabelsOnLinesJS), naming
// it, and for an id with no chart.
func CheckLabelsClear(t *testing.T, ctx context.Context, ids ...string) {
	t.Helper()
	on, err := chromedp.Run(ctx, chromedp.Evaluate[map[string][]string](LabelsOnLinesJS+`; ((ids) => {
	  const out = {};
	  for (const id of ids) {
	    const el = document.getElementById(id), inst = el && echarts.getInstanceByDom(el);
	    out[id] = inst ? labelsOnLines(inst) : ['no chart'];
	  }
	  return out;
	})(`+jsonIDs(ids)+`)`))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if len(on[id]) > 0 {
			t.Errorf("%s: labels on the series' lines: %q", id, on[id])
		}
	}
}

func jsonIDs(ids []string) string {
	b, _ := json.Marshal(ids)
	return string(b)
}
