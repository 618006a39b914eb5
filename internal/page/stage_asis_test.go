package page

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/bystander-kit/bystander/internal/browsertest"
	"github.com/bystander-kit/bystander/internal/stage"
)

// TestStageAsIsPage: a talk on a service measured as it is (--stage
// --load), its requests named by the user with markup in them. Walked
// with the clicker's keys at 1600x900: screens 1 and 2 drawn, in the
// service's request names shown as text, never run; screens 3 to 6 the
// one line each that says why they show nothing; every slide passes the
// room's checks (stageCheck: overlaps, text out of its box, numbers
// without separators, a time axis the data fill).
func TestStageAsIsPage(t *testing.T) {
	chrome, hub, srv := stageOnPage(t)
	load, bystander := `POST /login?<img src=x onerror="window.pwned=1">`, `GET /health<script>window.pwned=2</script>`
	skips := map[int]string{3: "no loops to show " + load, 4: "no grid " + bystander, 5: "no fix " + load, 6: "no slip " + load}
	hub.Add(stage.Hello{Loops: 4, Slots: 200, BlockMs: 5, StallBlockMs: 100, Conc: []int{4, 16}, StallConns: 12,
		ServersKind: map[string]string{"shop": "other"}, Ceiling: map[string]float64{}, Colors: map[string]string{"shop": "#1b9e77"}, Pale: map[string]string{"shop": "#a4d8c9"},
		Rule: "r", Screens: 6, AsIs: true, Load: load, Bystander: bystander, Skips: skips})
	hub.Add(stage.Screen{Screen: 1})
	for i, c := range []int{1, 4, 16} {
		id := fmt.Sprintf("sweep-shop-c%d", c)
		hub.Add(stage.Step{ID: id, Phase: "sweep", Server: "shop", Conc: c, Endpoint: load, State: "start", Screen: 1})
		hub.Add(stage.Step{ID: id, Phase: "sweep", Server: "shop", Conc: c, Endpoint: load, State: "end", Screen: 1, Row: &stage.StepRow{RPS: []float64{210, 800, 1650}[i], FastP50Ms: 0.4}})
	}
	hub.Add(stage.Screen{Screen: 2, Focus: "sweep-shop-c16"})
	// The top step's bystander probes, over two seconds of frames.
	for i := range 8 {
		hub.Add(stage.Probe{ID: "sweep-shop-c16", Server: "shop", Ms: 0.3 + float64(i%3)*4})
		time.Sleep(stage.Every)
	}
	for n := 3; n <= 6; n++ {
		hub.Add(stage.Screen{Screen: n})
	}
	hub.Add(stage.Done{Report: "report.html", Dir: "/tmp/x"})
	bctx, problems := browsertest.Open(t, chrome, 1600, 900)
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitReady("#stage")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool]("window.stageLive.done === true && window.stageView.slides === 6", chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the frames did not arrive: %v; the page said %q", err, problems())
	}
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](stageCheckJS+"; true")); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		Screen         int
		Headline, Wait string
		Waiting, Drawn bool
		Fits           bool
		Problems       []string
		Axis           string
		XMin           float64
	}
	press(t, bctx, kb.Home)
	for n := 1; n <= 6; n++ {
		if n > 1 {
			press(t, bctx, kb.PageDown)
		}
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](fmt.Sprintf("window.stageState.screen === %d", n), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
			t.Fatalf("screen %d: %v", n, err)
		}
		got, err := chromedp.Run(bctx, chromedp.Evaluate[seen](`(() => {
		  const n = window.stageState.screen, sec = document.getElementById("s" + n), h = document.getElementById("headline"), c = document.getElementById("c" + n);
		  const y = c && echarts.getInstanceByDom(c) && echarts.getInstanceByDom(c).getOption().yAxis;
		  return {Screen: n, Headline: h.textContent, Wait: sec.querySelector(".wait").textContent, Waiting: sec.classList.contains("waiting"),
		    Drawn: !!window.stageDrawn[n], Fits: h.scrollWidth <= h.clientWidth + 1, Problems: window.stageCheck(), Axis: y && y[0] ? String(y[0].name) : "",
		    XMin: n === 1 ? echarts.getInstanceByDom(c).getOption().xAxis[0].min : 0};
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range got.Problems {
			t.Errorf("screen %d: %s", n, p)
		}
		browsertest.Shot(t, bctx, browsertest.ShotsDir(t), "body", fmt.Sprintf("stage-asis-%d", n))
		if !got.Fits {
			t.Errorf("screen %d: the headline %q does not fit one line", n, got.Headline)
		}
		switch n {
		case 1:
			if !got.Drawn || got.Headline != "16 callers of "+load+": shop 1,650 req/s" {
				t.Errorf("screen 1: %+v", got)
			}
			// The sweep starts at 1 caller, under --conc's 4: the callers
			// axis starts under it (0.8), or its point is clipped off
			// (the axis began at --conc's 3.2) or sits on the axis line.
			if !(got.XMin > 0 && got.XMin < 1) {
				t.Errorf("screen 1's callers axis starts at %v: want under the sweep's 1 caller, above 0", got.XMin)
			}
		case 2:
			if !got.Drawn || got.Headline != bystander+" waited 0.4 ms on shop (16 callers of "+load+")" || got.Axis != "how long it waited, ms" { // too long a name for the axis
				t.Errorf("screen 2: %+v", got)
			}
		default:
			if got.Drawn || !got.Waiting || got.Wait != skips[n] {
				t.Errorf("screen %d: %+v, want the line %q", n, got, skips[n])
			}
		}
	}
	time.Sleep(300 * time.Millisecond) // an onerror would have fired
	ran, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.pwned !== undefined || document.querySelectorAll('img, #stage script').length > 0`))
	if err != nil {
		t.Fatal(err)
	}
	if ran {
		t.Error("a request's name from the user ran or made markup")
	}
	for _, p := range problems() {
		if !strings.Contains(p, "favicon") {
			t.Error(p)
		}
	}
}
