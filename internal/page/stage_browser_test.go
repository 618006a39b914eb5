package page

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bystander-kit/bystander/internal/browsertest"
	"github.com/bystander-kit/bystander/internal/stage"
)

// quickStage is a real recording: ./run.sh --stage --auto --quick.
const quickStage = "../stage/testdata/quick-stage/stage.ndjson"

// TestStageScreens replays a real recording to the end of each screen and
// opens it on a 1600x900 projector page, light and dark: each screen is
// drawn with a headline; screen 1 labels each ceiling on its line in its
// server's hue and no two point labels on one side lie together; screen 3
// draws only what came after it opened; screen 4 lights exactly the
// connections its verdict counts as stalled; screen 5 draws each bar in
// its server's hue. A screenshot of each is written for a person to look at.
func TestStageScreens(t *testing.T) {
	chrome, a := browsertest.Chromium(t), inlined(t)
	page, err := writeStagePage(a)
	if err != nil {
		t.Fatal(err)
	}
	shots := browsertest.ShotsDir(t)
	for n := 1; n <= 5; n++ {
		t.Run(fmt.Sprintf("screen %d", n), func(t *testing.T) {
			hub, err := stage.NewHub("", page)
			if err != nil {
				t.Fatal(err)
			}
			frames, err := stage.ReplayWith(context.Background(), quickStage, hub, stage.ReplayOptions{Instant: true, Until: stage.EndOf(n, n == 4)})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(hub)
			t.Cleanup(srv.Close)
			hub.Allow(srv.Listener.Addr().String())
			ctx, problems := browsertest.Open(t, chrome, 1600, 900)
			if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
				t.Fatal(err)
			}
			ready := fmt.Sprintf("window.stageFrames >= %d && window.stageDrawn[%d] === true", frames, n)
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool](ready, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second))); err != nil {
				t.Fatalf("screen %d was not drawn: %v; the page said %q", n, err, problems())
			}
			for _, theme := range []string{"dark", "light"} {
				// T switches the theme and draws the screen again with
				// every frame in.
				if err := chromedp.Do(ctx, chromedp.KeyEvent("t")); err != nil {
					t.Fatal(err)
				}
				if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf("document.documentElement.classList.contains('dark') === %v", theme == "dark"))); err != nil {
					t.Fatal(err)
				}
				checkScreen(t, ctx, n, theme)
				browsertest.Shot(t, ctx, shots, "body", fmt.Sprintf("stage-%d-%s", n, theme))
			}
			for _, p := range problems() {
				if !strings.Contains(p, "favicon") {
					t.Error(p)
				}
			}
		})
	}
}

func checkScreen(t *testing.T, ctx context.Context, n int, theme string) {
	t.Helper()
	type check struct {
		Headline string
		Problems []string
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[check](fmt.Sprintf(`(() => {
	  const S = window.stageState, out = {Headline: document.getElementById('headline').textContent, Problems: []};
	  const opt = id => echarts.getInstanceByDom(document.getElementById(id)).getOption();
	  switch (%d) {
	  case 1: {
	    const o = opt('c1');
	    for (const name of Object.keys(S.info.ceiling_text || {})) {
	      const t = S.info.ceiling_text[name];
	      const line = o.series.find(s => s.label && String(s.label.formatter).indexOf(t) >= 0 && s.data.some(d => d.label && d.label.show));
	      if (!line) { out.Problems.push("no label on the line says " + name + "'s ceiling " + t); continue; }
	      if (line.lineStyle.color !== S.info.colors[line.name]) { out.Problems.push(name + "'s ceiling is not in its hue"); }
	    }
	    const shown = {};
	    for (const s of o.series) {
	      if (s.lineStyle && s.lineStyle.type === 'dashed') { continue; }
	      if (s.lineStyle.color !== S.info.colors[s.name]) { out.Problems.push(s.name + " is drawn " + s.lineStyle.color + ", its hue is " + S.info.colors[s.name]); }
	      for (const d of s.data) {
	        if (d.label && d.label.show === false) { continue; }
	        const key = s.label.position + d.value[0];
	        for (const v of (shown[key] || [])) {
	          if (Math.max(v, d.value[1]) <= 1.3 * Math.min(v, d.value[1])) { out.Problems.push("two labels lie together at " + key + ": " + v + " and " + d.value[1]); }
	        }
	        (shown[key] = shown[key] || []).push(d.value[1]);
	      }
	    }
	    break;
	  }
	  case 3: {
	    const o = opt('c3');
	    const from = Math.floor((S.screenAt - (S.t - 10000)) / 100);
	    for (const d of o.series[0].data) { if (d[0] < from) { out.Problems.push("a lane cell from before the screen opened: x=" + d[0] + " < " + from); break; } }
	    break;
	  }
	  case 4: {
	    const v = S.verdicts[S.stallStep];
	    const lit = document.querySelectorAll('#grid .cell.lit').length;
	    if (!v || !v.judged) { out.Problems.push("no judged verdict for " + S.stallStep); break; }
	    if (lit !== v.stalled) { out.Problems.push(lit + " cells lit, the verdict says " + v.stalled + " stalled"); }
	    if (S.steps[S.stallStep].kk > 0 && v.stalled === 0) { out.Problems.push("k > 0 blocked loops and none stalled: not the recording's story"); }
	    // A cell says its connection and its wait apart: "#3 · 679 ms" (a
	    // room read "#3 679 ms" as 3,679 ms).
	    for (const c of document.querySelectorAll('#grid .cell')) {
	      if (c.textContent !== '-' && !/^#\d+ \u00b7 [\d.,]+ ms$/.test(c.textContent)) { out.Problems.push("a cell reads " + JSON.stringify(c.textContent)); }
	    }
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
	})()`, n)))
	if err != nil {
		t.Fatal(err)
	}
	if got.Headline == "" || strings.Contains(got.Headline, "measuring ...") {
		t.Errorf("%s: the headline says %q", theme, got.Headline)
	}
	for _, p := range got.Problems {
		t.Errorf("%s: %s", theme, p)
	}
}
