package page

import (
	"context"
	"fmt"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/bystander-kit/bystander/internal/browsertest"
	"github.com/bystander-kit/bystander/internal/stage"
)

// talkRecording is a real recording, the one the docs show:
// docs/talk-run's (./run.sh --stage --auto --auto-wait=0).
const talkRecording = "../../docs/talk-run/stage.ndjson"

// The projectors the stage is tried on: a common one, the screenshots',
// and a large one.
var projectors = [][2]int{{1280, 720}, {1600, 900}, {1920, 1080}}

// slideSeen is what a slide shows, as the page says it.
type slideSeen struct {
	View, Screen, Slides int
	Focus                string
	Headline             string
	Problems             []string
}

// replayedServer serves a real recording, every frame in, on a hub of its
// own.
func replayedServer(t *testing.T) (*httptest.Server, int) {
	t.Helper()
	return replayedFrom(t, talkRecording)
}

// replayedFrom serves the recording at path, every frame in.
func replayedFrom(t *testing.T, path string) (*httptest.Server, int) {
	t.Helper()
	a := inlined(t)
	page, err := writeStagePage(a)
	if err != nil {
		t.Fatal(err)
	}
	hub, err := stage.NewHub("", page)
	if err != nil {
		t.Fatal(err)
	}
	frames, err := stage.ReplayWith(context.Background(), path, hub, stage.ReplayOptions{Instant: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(hub)
	t.Cleanup(srv.Close)
	hub.Allow(srv.Listener.Addr().String())
	return srv, frames
}

// TestStageScreens replays a real recording (every frame in) at 1280x720,
// 1600x900 and 1920x1080, light and dark, and walks through the talk with
// the keys a clicker sends: Home, then PageDown to every slide and on to
// live. On each: the slide the recording showed, drawn, its headline on
// one line and about the loop server first, its numbers in their server's
// hue; screen 1's point labels apart and its axes near the data; screen
// 3 only what came after it opened, in a window that fits it; screen 4
// opening on k = 1 (3 of 12), lighting exactly the connections its
// verdict counts, every cell's text inside it; screen 5 each bar in its
// server's hue. A screenshot of each is written for a person to look at.
func TestStageScreens(t *testing.T) {
	chrome := browsertest.Chromium(t)
	srv, frames := replayedServer(t)
	url := srv.URL
	shots := browsertest.ShotsDir(t)
	for _, size := range projectors {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			ctx, problems := browsertest.Open(t, chrome, size[0], size[1])
			if err := chromedp.Do(ctx, chromedp.Navigate(url+"/")); err != nil {
				t.Fatal(err)
			}
			ready := fmt.Sprintf("window.stageFrames >= %d", frames)
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool](ready, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second))); err != nil {
				t.Fatalf("the frames did not arrive: %v; the page said %q", err, problems())
			}
			if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](stageCheckJS+"; true")); err != nil {
				t.Fatal(err)
			}
			for _, theme := range []string{"dark", "light"} {
				press(t, ctx, "t")
				if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf("document.documentElement.classList.contains('dark') === %v", theme == "dark"))); err != nil {
					t.Fatal(err)
				}
				press(t, ctx, kb.Home)
				var seen []string
				for i := 0; ; i++ {
					got := checkSlide(t, ctx)
					seen = append(seen, fmt.Sprintf("%d:%s", got.Screen, got.Focus))
					for _, p := range got.Problems {
						t.Errorf("%s, slide %d (screen %d %s): %s", theme, i, got.Screen, got.Focus, p)
					}
					if got.Headline == "" || strings.Contains(got.Headline, "measuring ...") {
						t.Errorf("%s, slide %d: the headline says %q", theme, i, got.Headline)
					}
					if i == 3 && (got.Screen != 4 || !strings.HasSuffix(got.Focus, "-k1") || !strings.Contains(got.Headline, "3 of 12")) {
						t.Errorf("screen 4 does not open on one loop blocked, 3 of 12 stalled: %+v", got)
					}
					name := fmt.Sprintf("stage-%d-%s", got.Screen, theme)
					if got.Screen == 4 || got.Screen == 6 {
						name = fmt.Sprintf("stage-%d-%s-%s", got.Screen, got.Focus[strings.Index(got.Focus, "-")+1:], theme) // its step: loop-gnet-k2
					}
					browsertest.Shot(t, ctx, shots, "body", fmt.Sprintf("%s-%dx%d", name, size[0], size[1]))
					if got.View < 0 {
						break
					}
					if i > 20 {
						t.Fatalf("PageDown never reached the live slide: %v", seen)
					}
					press(t, ctx, kb.PageDown)
				}
				want := []string{"1:", "2:", "3:", "4:stall-loop-gnet-k1", "4:stall-loop-gnet-k2", "4:stall-loop-gnet-k3", "4:stall-loop-gnet-k4", "4:stall-pool-k4", "5:",
					"6:slip-loop-gnet", "6:slip-pool"}
				if strings.Join(seen, " ") != strings.Join(want, " ") {
					t.Errorf("%s: the slides went %v, the recording showed %v", theme, seen, want)
				}
			}
			for _, p := range problems() {
				if !strings.Contains(p, "favicon") {
					t.Error(p)
				}
			}
		})
	}
}

// press sends one key to the page as a keyboard would.
func press(t *testing.T, ctx context.Context, key string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.KeyEvent(key)); err != nil {
		t.Fatal(err)
	}
}

// checkSlide says what the page shows and what is wrong with it.
func checkSlide(t *testing.T, ctx context.Context) slideSeen {
	t.Helper()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[slideSeen](`(() => {
	  const S = window.stageState, V = window.stageView, n = S.screen;
	  const h = document.getElementById('headline');
	  const out = {View: V.view, Screen: n, Slides: V.slides, Focus: V.focus, Headline: h.textContent, Problems: []};
	  const opt = id => echarts.getInstanceByDom(document.getElementById(id)).getOption();
	  const band = hex => 'rgba(' + [1, 3, 5].map(i => parseInt(hex.substr(i, 2), 16)).join(',') + ',0.55)';
	  if (!window.stageDrawn[n]) { out.Problems.push("not drawn"); }
	  // One line, whole: the headline neither wraps nor runs out of its box.
	  if (h.scrollWidth > h.clientWidth + 1 || h.getClientRects().length !== 1 || h.offsetHeight > 1.6 * parseFloat(getComputedStyle(h).lineHeight || '0') + 2) {
	    out.Problems.push("the headline does not fit one line: " + h.scrollWidth + " > " + h.clientWidth + " px");
	  }
	  out.Problems.push(...window.stageCheck());
	  // Loop servers first, numbers in their server's hue.
	  const kinds = S.info.servers_kind, names = Object.keys(kinds);
	  const first = names.map(s => [s, h.textContent.indexOf(s)]).filter(x => x[1] >= 0).sort((a, b) => a[1] - b[1])[0];
	  if (first && kinds[first[0]] !== 'loop' && names.some(s => kinds[s] === 'loop' && h.textContent.indexOf(s) >= 0)) { out.Problems.push("the headline names " + first[0] + " before the loop server"); }
	  const hues = Object.values(S.info.colors).map(c => c.toLowerCase());
	  for (const b of h.querySelectorAll('b')) {
	    const rgb = getComputedStyle(b).color.match(/\d+/g).slice(0, 3).map(Number);
	    const hex = '#' + rgb.map(v => v.toString(16).padStart(2, '0')).join('');
	    if (hues.indexOf(hex) < 0) { out.Problems.push("a number in the headline is " + hex + ", no server's hue"); }
	  }
	  switch (n) {
	  case 1: {
	    // Each server's binding ceiling a pale band under its measured
	    // line, labelled with what binds it: the pool's callers / the call
	    // where the callers bind.
	    const o = opt('c1');
	    let lo = Infinity;
	    for (const name of Object.keys(S.info.ceiling_text || {})) {
	      const b = o.series.find(s => s.name === name + ' ceiling' && s.lineStyle.color === band(S.info.pale[name]) && s.lineStyle.width > 8);
	      if (!b) { out.Problems.push("no pale band for " + name + "'s ceiling"); continue; }
	      const top = Math.max(...S.order.map(id => S.steps[id]).filter(s => s.phase === 'sweep' && s.server === name).map(s => s.conc));
	      const w = S.steps['sweep-' + name + '-c' + top].workers, want = Math.min(top, w) + (top < w ? ' callers' : ' loops') + ' / 5 ms = ' + (Math.min(top, w) * 200).toLocaleString('en-US') + ' req/s';
	      const says = typeof b.label.formatter === 'function' ? b.label.formatter() : String(b.label.formatter);
	      if (says.indexOf(want) < 0) { out.Problems.push(name + "'s band says " + says + ", want " + want); }
	      const line = o.series.find(s => s.name === name && s.lineStyle.color === S.info.colors[name]);
	      if (!line || !(line.z > b.z)) { out.Problems.push(name + "'s measured line is not drawn over its band"); continue; }
	      for (const d of line.data) { lo = Math.min(lo, d.value[1]); }
	    }
	    const y = o.yAxis[0], xa = o.xAxis[0], conc = S.info.conc;
	    if (!(y.min > lo / 2 && y.min <= lo)) { out.Problems.push("the req/s axis starts at " + y.min + ", the lowest point is " + lo); }
	    if (!(xa.min >= Math.min(...conc) / 1.5 && xa.max <= Math.max(...conc) * 1.5)) { out.Problems.push("the callers axis runs " + xa.min + "-" + xa.max + " for " + conc); }
	    break;
	  }
	  case 2: {
	    // No point at the top edge: the highest lies under the axis's end.
	    const inst = echarts.getInstanceByDom(document.getElementById('c2')), ext = inst.getModel().getComponent('yAxis', 0).axis.scale.getExtent();
	    const hi = Math.max(...opt('c2').series.flatMap(s => s.data.map(d => d[1])));
	    if (!(Math.log10(hi) < ext[1] - 0.1)) { out.Problems.push("the highest point " + hi + " lies at the top edge (" + Math.pow(10, ext[1]) + ")"); }
	    if (/from due/.test(opt('c2').yAxis[0].name)) { out.Problems.push("the kit's words on the axis: " + opt('c2').yAxis[0].name); }
	    break;
	  }
	  case 3: {
	    // The held loop one colour throughout: every cell of its lane at
	    // or over half the call, the tick labels as big as the others.
	    const o = opt('c3'), held = S.info.stall_block_ms / 2, loop = +/loop (\d+)/.exec(h.textContent)[1];
	    const lane = o.series[0].data.filter(d => d[1] === loop), first = Math.min(...lane.map(d => d[0]));
	    const off = lane.filter(d => d[0] > first && d[2] < held);
	    if (off.length) { out.Problems.push("the held loop's lane has " + off.length + " cells under " + held + " ms: " + JSON.stringify(off.slice(0, 3))); }
	    if (o.xAxis[0].axisLabel.fontSize !== o.yAxis[0].axisLabel.fontSize) { out.Problems.push("tick labels " + o.xAxis[0].axisLabel.fontSize + " px beside " + o.yAxis[0].axisLabel.fontSize); }
	    if (/\(\d+ calls\)/.test(h.textContent)) { out.Problems.push("the headline's calls are not said: " + h.textContent); }
	    break;
	  }
	  case 4: {
	    const id = V.focus || S.stallStep, v = S.verdicts[id];
	    const lit = document.querySelectorAll('#grid .cell.lit').length;
	    if (!v || !v.judged) { out.Problems.push("no judged verdict for " + id); break; }
	    if (lit !== v.stalled) { out.Problems.push(lit + " cells lit, the verdict says " + v.stalled + " stalled"); }
	    // One measure in every cell, said: the median wait by the server's
	    // clock (the report's) when every cell has it, else (a recording
	    // made before the stage sent it) the slowest answer, said as such.
	    const grid = S.grids[id] || {}, conns = Object.keys(grid), waits = conns.length > 0 && conns.every(c => grid[c].wait !== undefined);
	    const says = document.getElementById('gridsays').textContent;
	    if (waits ? !/its requests waiting \(median ms, as the report gives it\)/.test(says) : !/slowest \/fast answer.*an older recording: no median/.test(says)) { out.Problems.push("the grid says " + JSON.stringify(says) + (waits ? " over median waits" : " over slowest answers")); }
	    for (const c of document.querySelectorAll('#grid .cell')) {
	      const m = /^#(\d+) \u00b7 ([\d.,]+) ms$/.exec(c.textContent), x = m && grid[m[1]];
	      const want = x && (waits ? x.wait : x.ms).toLocaleString('en-US', {maximumFractionDigits: waits ? 1 : 0});
	      if (m && m[2] !== want) { out.Problems.push("cell #" + m[1] + " reads " + m[2] + " ms, its connection's " + (waits ? "median wait" : "slowest answer") + " is " + want); }
	    }
	    if (kinds[S.steps[id].server] === 'loop' && v.stalled !== 3 * S.steps[id].kk) { out.Problems.push("k = " + S.steps[id].kk + " and " + v.stalled + " stalled: not the recording's story"); }
	    // A cell says its connection and its wait apart: "#3 · 679 ms" (a
	    // room read "#3 679 ms" as 3,679 ms), inside the cell.
	    for (const c of document.querySelectorAll('#grid .cell')) {
	      if (c.textContent !== '-' && !/^#\d+ \u00b7 [\d.,]+ ms$/.test(c.textContent)) { out.Problems.push("a cell reads " + JSON.stringify(c.textContent)); }
	      if (c.scrollWidth > c.clientWidth + 1) { out.Problems.push("a cell's text runs out of it: " + c.textContent); }
	    }
	    break;
	  }
	  case 6: {
	    // The slip: its rate before and after the call slowed, the key's
	    // moment on the chart, both ceilings, in the server's hue.
	    const o = opt('c6'), s = S.steps[V.focus], marks = o.series[0].markLine.data;
	    if (!/ → [\d,]+ req\/s, the call 5 ms → 50 ms$/.test(h.textContent)) { out.Problems.push("the headline does not say the rate before and after: " + h.textContent); }
	    if (!s.slip || !(s.slip.after < s.slip.before)) { out.Problems.push("no fall in the findings: " + JSON.stringify(s.slip)); }
	    if (!marks.some(m => m.xAxis !== undefined)) { out.Problems.push("no line where the call slowed"); }
	    const drawn = echarts.getInstanceByDom(document.getElementById('c6')).getZr().storage.getDisplayList(true);
	    if (!drawn.some(el => el.style && /^the call: 5 → 50 ms$/.test(el.style.text))) { out.Problems.push("the moment the call slowed is not labelled on the chart"); }
	    if (marks.filter(m => m.yAxis !== undefined && m.lineStyle.color === band(S.info.pale[s.server]) && m.lineStyle.width > 8).length !== 2) { out.Problems.push("not both ceilings as bands in the server's pale hue"); }
	    break;
	  }
	  case 5: {
	    const o = opt('c5');
	    const off = S.order.map(id => S.steps[id]).filter(s => s.phase === 'offload' && s.rps !== undefined);
	    o.series[0].data.forEach((d, i) => {
	      const s = off[i], want = s.variant === 'offloaded' ? (S.info.pale || S.info.colors)[s.server] : S.info.colors[s.server];
	      if (d.itemStyle.color !== want) { out.Problems.push(s.variant + " " + s.server + " drawn " + d.itemStyle.color + ", want " + want); }
	    });
	    break;
	  }
	  }
	  return out;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestStagePresenter opens the stage (1280x720) and the speaker view
// (/presenter, 1600x900) in two windows of one browser, on a real
// recording, and presses every key a clicker or a keyboard sends in the
// speaker view: the stage's window follows it to the same slide, blanks
// and comes back, and both say a key not taken (nothing before the first
// slide, a screen the talk has not, a key the stage dropped). The speaker
// view says what the screen shows, what comes next, and the time.
func TestStagePresenter(t *testing.T) {
	chrome := browsertest.Chromium(t)
	srv, frames := replayedServer(t)
	url := srv.URL
	sctx, sproblems := browsertest.Open(t, chrome, 1280, 720)
	pctx, pproblems := browsertest.Tab(t, sctx, 1600, 900)
	ready := fmt.Sprintf("window.stageFrames >= %d", frames)
	for _, w := range []struct {
		ctx  context.Context
		path string
	}{{sctx, "/"}, {pctx, "/presenter"}} {
		if err := chromedp.Do(w.ctx, chromedp.Navigate(url+w.path)); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(w.ctx, chromedp.Poll[bool](ready, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			t.Fatalf("%s: the frames did not arrive: %v", w.path, err)
		}
	}
	// The recording's slides: 1, 2, 3, five of screen 4 (k = 1 to 4, the
	// pool), 5, two of screen 6 (the loops, the pool: live).
	const live = -1
	for i, step := range []struct {
		key          string
		view, screen int
		blank        bool
		toast        string
	}{
		{kb.ArrowLeft, 9, 6, false, ""},
		{kb.Backspace, 8, 5, false, ""},
		{kb.PageUp, 7, 4, false, ""},
		{kb.ArrowRight, 8, 5, false, ""},
		{" ", 9, 6, false, ""},
		{kb.PageDown, live, 6, false, ""},
		{kb.Home, 0, 1, false, ""},
		{kb.ArrowLeft, 0, 1, false, "nothing before"},
		{kb.End, live, 6, false, ""},
		{"3", 2, 3, false, ""},
		{"4", 7, 4, false, ""},
		{"1", 0, 1, false, ""},
		{"5", 8, 5, false, ""},
		{"6", live, 6, false, ""},
		{"9", live, 6, false, "no screen 9"},
		{"b", live, 6, true, ""},
		{".", live, 6, false, ""},
		{"B", live, 6, true, ""},
		{".", live, 6, false, ""},
	} {
		press(t, pctx, step.key)
		want := fmt.Sprintf("window.stageView.view === %d && window.stageView.screen === %d && window.stageView.blank === %v", step.view, step.screen, step.blank)
		if step.toast != "" {
			want += fmt.Sprintf(" && (window.stageToasts || []).some(m => m.indexOf(%q) >= 0)", step.toast)
		}
		for _, w := range []struct {
			name string
			ctx  context.Context
		}{{"the speaker view", pctx}, {"the stage", sctx}} {
			if _, err := chromedp.Run(w.ctx, chromedp.Poll[bool](want, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(5*time.Second))); err != nil {
				got, _ := chromedp.Run(w.ctx, chromedp.Evaluate[map[string]any](`({view: window.stageView, toasts: window.stageToasts || []})`))
				t.Fatalf("key %d %q: %s shows %v, want %s", i, step.key, w.name, got, want)
			}
		}
	}
	// The stage's window goes black; the speaker view never does.
	press(t, pctx, "b")
	if _, err := chromedp.Run(sctx, chromedp.Poll[bool](`getComputedStyle(document.getElementById('blank')).display === 'block'`, chromedp.WithPollingTimeout(5*time.Second))); err != nil {
		t.Error("B did not blank the stage's window")
	}
	if on, _ := chromedp.Run(pctx, chromedp.Evaluate[bool](`getComputedStyle(document.getElementById('blank')).display === 'block'`)); on {
		t.Error("B blanked the speaker view")
	}
	press(t, pctx, ".")
	// What the speaker reads: the screen, what it shows in words, what
	// comes next, the time.
	type panel struct{ Now, Notes, Next, Clock, State string }
	got, err := chromedp.Run(pctx, chromedp.Evaluate[panel](`({Now: document.getElementById('pnow').textContent, Notes: document.getElementById('pnotes').textContent,
	  Next: document.getElementById('pnext').textContent, Clock: document.getElementById('pclock').textContent, State: document.getElementById('pstate').textContent})`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.Now, "6.") || !strings.Contains(got.Notes, "Its ceiling fell with the call") || !strings.Contains(got.Next, "report") || !regexp.MustCompile(`^\d+:\d\d$`).MatchString(got.Clock) || got.State != "live" {
		t.Errorf("the speaker view: %+v", got)
	}
	// The speaker view's layout: the right column clear of the window's
	// edge, the lower third carrying the notes, and the key hint listing
	// every key the handler takes (both read the one table); the room's
	// window shows none of the speaker's lines.
	press(t, pctx, "4")
	press(t, pctx, kb.ArrowLeft)
	press(t, pctx, kb.ArrowLeft)
	press(t, pctx, kb.ArrowLeft)
	press(t, pctx, kb.ArrowLeft) // the first slide of screen 4: 3 of 12, the longest notes
	layout, err := chromedp.Run(pctx, chromedp.Evaluate[[]string](`(() => {
	  const out = [], W = innerWidth, H = innerHeight;
	  for (const e of document.querySelectorAll('#panel > *, #pbelow > *')) {
	    const r = e.getBoundingClientRect();
	    if (r.width && r.right > W - 0.025 * W) { out.push('#' + e.id + ' ends ' + Math.round(W - r.right) + ' px from the edge'); }
	  }
	  const notes = document.getElementById('pnotes').getBoundingClientRect();
	  if (notes.bottom < 0.85 * H) { out.push('the notes lie ' + Math.round(notes.top) + '-' + Math.round(notes.bottom) + ' px of ' + H + ': the lower third is empty'); }
	  if (notes.bottom > H) { out.push('the notes run past the window: ' + Math.round(notes.bottom) + ' px of ' + H); }
	  const hint = document.getElementById('pkeys').textContent;
	  for (const row of window.stageKeyTable) { if (hint.indexOf(row.says) < 0 || hint.indexOf(row.does) < 0) { out.push('the key hint leaves out ' + row.says + ': ' + row.does); } }
	  if (hint.indexOf('1-6') < 0 || hint.indexOf('1-9') >= 0) { out.push('the key hint does not say the talk\'s screens, 1-6: ' + hint); }
	  for (const k of ['PageDown', 'PageUp', 'Home', 'End', 'b', '.', 'p', 'r', 't', 'o', '1']) { if (!window.stageKeyTable.some(row => row.keys.indexOf(k) >= 0)) { out.push('the key table has no ' + k); } }
	  return out;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range layout {
		t.Errorf("the speaker view: %s", p)
	}
	if _, err := chromedp.Run(sctx, chromedp.Evaluate[bool](stageCheckJS+"; true")); err != nil {
		t.Fatal(err)
	}
	if got, err := chromedp.Run(sctx, chromedp.Evaluate[[]string](`window.stageCheck().filter(p => /operator/.test(p))`)); err != nil || len(got) > 0 {
		t.Errorf("the room's window shows the speaker's lines: %q (%v)", got, err)
	}
	press(t, pctx, "4")
	if got, err := chromedp.Run(pctx, chromedp.Evaluate[string](`document.getElementById('pnotes').textContent`)); err != nil || !strings.Contains(got, "0 of 12") {
		t.Errorf("the speaker view on the pool's slide of screen 4 says %q (%v)", got, err)
	}
	browsertest.Shot(t, pctx, browsertest.ShotsDir(t), "body", "stage-presenter")
	press(t, pctx, kb.End)
	// A key the stage did not take is said on the page: this replay's stage
	// takes no keys, so the 17th waits behind 16 and is dropped.
	for range 17 {
		press(t, pctx, kb.PageDown)
	}
	if _, err := chromedp.Run(sctx, chromedp.Poll[bool](`(window.stageToasts || []).some(m => /key not taken: the stage has 16 keys waiting/.test(m))`, chromedp.WithPollingTimeout(5*time.Second))); err != nil {
		toasts, _ := chromedp.Run(sctx, chromedp.Evaluate[[]string](`window.stageToasts || []`))
		t.Errorf("a dropped key was not said: %q", toasts)
	}
	for _, p := range append(sproblems(), pproblems()...) {
		if !strings.Contains(p, "favicon") && !strings.Contains(p, "503") {
			t.Error(p)
		}
	}
}

// TestStageReconnects: a page whose stream is cut reconnects and is sent
// every frame again; it takes each once: the same slides, the same count
// of frames, the same headlines.
func TestStageReconnects(t *testing.T) {
	chrome := browsertest.Chromium(t)
	srv, frames := replayedServer(t)
	ctx, problems := browsertest.Open(t, chrome, 1280, 720)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf("window.stageFrames >= %d", frames), chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		Frames, Slides int
		Headlines      []string
	}
	const js = `({Frames: window.stageFrames, Slides: window.stageView.slides, Headlines: window.stageHeadlines})`
	before, err := chromedp.Run(ctx, chromedp.Evaluate[seen](js))
	if err != nil {
		t.Fatal(err)
	}
	// The stream cut: the browser opens it again (its retry: 3 s) and
	// is sent every frame so far.
	srv.CloseClientConnections()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool]("window.stageOpens >= 2", chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the page did not open its stream again: %v", err)
	}
	time.Sleep(time.Second) // the frames sent again reach the page
	after, err := chromedp.Run(ctx, chromedp.Evaluate[seen](js))
	if err != nil {
		t.Fatal(err)
	}
	if after.Frames != before.Frames || after.Slides != before.Slides || strings.Join(after.Headlines, "|") != strings.Join(before.Headlines, "|") {
		t.Errorf("after the stream reopened: %+v\nbefore: %+v", after, before)
	}
	for _, p := range problems() {
		if !strings.Contains(p, "favicon") && !strings.Contains(p, "events") {
			t.Error(p)
		}
	}
}

// TestStageBeforeAndWhileMeasuring: what the room sees before the first
// key (the talk's title and the servers it measures) and on a slide that
// has nothing to draw yet (what it will show, never an empty plot), the
// speaker's lines on neither, each passing stageCheck.
func TestStageBeforeAndWhileMeasuring(t *testing.T) {
	chrome := browsertest.Chromium(t)
	page, err := writeStagePage(inlined(t))
	if err != nil {
		t.Fatal(err)
	}
	hub, err := stage.NewHub("", page)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(hub)
	t.Cleanup(srv.Close)
	hub.Allow(srv.Listener.Addr().String())
	hub.Add(stage.Hello{Loops: 4, Slots: 200, BlockMs: 5, StallBlockMs: 100, Conc: []int{4, 16, 64}, StallConns: 12, Screens: 6,
		ServersKind: map[string]string{"loop-gnet": "loop", "pool": "pool"}, Colors: map[string]string{"loop-gnet": "#d62728", "pool": "#1f77b4"}})
	hub.Add(stage.State{State: "waiting: press Space"})
	hub.Flush()
	ctx, problems := browsertest.Open(t, chrome, 1280, 720)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		Text     string
		Problems []string
	}
	look := func(want string) seen {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](want, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			t.Fatalf("the page never showed %s: %v", want, problems())
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](stageCheckJS+"; true")); err != nil {
			t.Fatal(err)
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[seen](`({Text: document.getElementById('stage').innerText, Problems: window.stageCheck()})`))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	cover := look(`window.stageFrames >= 1`)
	browsertest.Shot(t, ctx, browsertest.ShotsDir(t), "body", "stage-cover-1280x720")
	if !strings.Contains(cover.Text, "What one blocking call does to everyone else") || !strings.Contains(cover.Text, "loop-gnet (4 event loops) beside pool (200 threads), each answering the same 5 ms call") ||
		strings.Contains(cover.Text, "press Space") || len(cover.Problems) > 0 {
		t.Errorf("before the first key the room sees %q (%q)", cover.Text, cover.Problems)
	}
	hub.Add(stage.Screen{Screen: 1})
	hub.Add(stage.State{State: "now: loop-gnet at 4 callers"})
	hub.Add(stage.Step{ID: "sweep-loop-gnet-c4", Phase: "sweep", Server: "loop-gnet", Conc: 4, Endpoint: "/slow", State: "start", Screen: 1, Workers: 4, Ceiling: 800})
	hub.Flush()
	wait := look(`window.stageState.screen === 1`)
	browsertest.Shot(t, ctx, browsertest.ShotsDir(t), "body", "stage-measuring-1280x720")
	if !strings.Contains(wait.Text, "Throughput as callers grow, against each server's ceiling: measuring") || !strings.Contains(wait.Text, "Measuring now, live") || strings.Contains(wait.Text, "now: loop-gnet at 4 callers") || len(wait.Problems) > 0 {
		t.Errorf("while screen 1 measures the room sees %q (%q)", wait.Text, wait.Problems)
	}
	hub.Add(stage.Throughput{ID: "sweep-loop-gnet-c4", RPS: 751})
	hub.Flush()
	drawn := look(`window.stageDrawn[1] === true`)
	if strings.Contains(drawn.Text, "Measuring now") || len(drawn.Problems) > 0 {
		t.Errorf("with its first figure screen 1 still says %q (%q)", drawn.Text, drawn.Problems)
	}
	for _, p := range problems() {
		if !strings.Contains(p, "favicon") {
			t.Error(p)
		}
	}
}

// TestStageLiveMoments: the recording cut at 24 moments, each shown
// as the live page showed it then (a slide half measured, a screen just
// opened), passes stageCheck at 1280x720, as the finished slides do.
func TestStageLiveMoments(t *testing.T) {
	chrome := browsertest.Chromium(t)
	page, err := writeStagePage(inlined(t))
	if err != nil {
		t.Fatal(err)
	}
	all, err := stage.Recording(talkRecording)
	if err != nil {
		t.Fatal(err)
	}
	ctx, problems := browsertest.Open(t, chrome, 1280, 720)
	for i := 1; i <= 24; i++ {
		cut := i * len(all) / 25
		hub, err := stage.NewHub("", page)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		frames, err := stage.ReplayWith(context.Background(), talkRecording, hub, stage.ReplayOptions{Instant: true, Until: func(stage.Frame) bool { n++; return n > cut }})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(hub)
		hub.Allow(srv.Listener.Addr().String())
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitReady("#stage")); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf("window.stageFrames >= %d", frames), chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // a frame of the browser's
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](stageCheckJS+"; true")); err != nil {
			t.Fatal(err)
		}
		type seen struct {
			Screen   int
			Problems []string
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[seen](`({Screen: window.stageState.screen, Problems: window.stageCheck()})`))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range got.Problems {
			t.Errorf("%d of %d frames (screen %d, live): %s", frames, len(all), got.Screen, p)
		}
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
			t.Fatal(err)
		}
		srv.CloseClientConnections()
		srv.Close()
	}
	for _, p := range problems() {
		if !strings.Contains(p, "favicon") && !strings.Contains(p, "events") {
			t.Error(p)
		}
	}
}
