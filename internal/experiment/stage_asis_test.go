package experiment

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/bystander-kit/bystander/internal/browsertest"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/wiretest"
)

// TestStageAsIs gives the talk on a service measured as it is (--stage
// --load --bystander, --auto): a net/http service written without the kit
// in mind, on loopback. Walked slide by slide in the speaker view once the
// run ended: screen 1 draws its sweep with no ceiling the kit would have
// to guess, screen 2 its GET /health's waits while POST /login ran at the
// top callers, both named as the user gave them; screens 3 to 6 measure
// nothing and say why in one line, on the room's screen and in the
// speaker's notes; the phases that need the protocol are recorded as
// skipped with their reason, not as never reached.
func TestStageAsIs(t *testing.T) {
	chrome := browsertest.Chromium(t)
	bin := kit(t)
	stageInlined(t, bin)
	svc, srv := startService(t, 2*time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	addr := wiretest.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code, out := startRun(t, ctx, func(o *Options) {
		onStage(o)
		quick(o)
		o.Auto, o.Duration, o.Warmup, o.Conc, o.Servers = true, time.Second, ms(200), []int{4}, nil
		o.Targets = []Target{{Name: "svc", URL: srv.URL}}
		o.Load, o.Bystander = "POST /login", "GET /health"
		o.StageAddr, o.Out, o.Bin = addr, dir, bin
	})
	served(t, addr, out)

	bctx, problems := browsertest.Open(t, chrome, 1600, 900)
	if err := chromedp.Do(bctx, chromedp.Navigate("http://"+addr+"/presenter"), chromedp.WaitReady("#stage")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool]("window.stageLive.done === true", chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(3*time.Minute))); err != nil {
		t.Fatalf("the talk did not end: %v; the page said %q\n%s", err, problems(), out.String())
	}
	if c := <-code; c != 0 {
		t.Fatalf("exit %d\n%s", c, out.String())
	}

	// Each slide as it ended: Home, then the forward key.
	type slideSeen struct {
		Screen   int
		Headline string
		Waiting  bool
		Wait     string
		Notes    string
		YAxis    string
		Drawn    bool
		Next     string
	}
	const look = `(function () {
		var n = window.stageState.screen, sec = document.getElementById("s" + n), c = document.getElementById("c" + n);
		var ch = c && echarts.getInstanceByDom(c), y = ch && ch.getOption().yAxis;
		return {Screen: n, Headline: document.getElementById("headline").textContent, Waiting: sec.classList.contains("waiting"),
			Wait: sec.querySelector(".wait").textContent, Notes: document.getElementById("pnotes").textContent,
			YAxis: y && y[0] ? String(y[0].name) : "", Drawn: !!window.stageDrawn[n], Next: document.getElementById("pnext").textContent};
	})()`
	key := func(k string) {
		t.Helper()
		if err := chromedp.Do(bctx, chromedp.KeyEvent(k)); err != nil {
			t.Fatal(err)
		}
	}
	slides, err := chromedp.Run(bctx, chromedp.Evaluate[int]("window.stageView.slides"))
	if err != nil {
		t.Fatal(err)
	}
	if slides != screens {
		t.Fatalf("%d slides, want one a screen (%d)", slides, screens)
	}
	skips := asIsScreenSkips("POST /login", "GET /health")
	key(kb.Home)
	for i := range slides {
		if i > 0 {
			key(kb.ArrowRight)
		}
		js := fmt.Sprintf("window.stageState.screen === %d", i+1)
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
			t.Fatalf("slide %d: %v", i+1, err)
		}
		got, err := chromedp.Run(bctx, chromedp.Evaluate[slideSeen](look))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("slide %d: %+v", i+1, got)
		switch n := got.Screen; n {
		case 1:
			if !got.Drawn || got.Waiting || !strings.HasPrefix(got.Headline, "4 callers of POST /login: svc ") || !strings.HasSuffix(got.Headline, " req/s") {
				t.Errorf("screen 1: %+v", got)
			}
			if got.Next != "next: 2. The bystander: GET /health asked while POST /login runs" {
				t.Errorf("the speaker view's next on screen 1: %q", got.Next)
			}
			if strings.Contains(got.Notes+got.Headline, "ceiling:") || !strings.Contains(got.Notes, "No ceiling is drawn") {
				t.Errorf("screen 1 speaks of a ceiling the kit does not know: %+v", got)
			}
		case 2:
			// The figure the tables give at the step's end, not "so far".
			if !got.Drawn || got.Waiting || !strings.HasPrefix(got.Headline, "GET /health waited ") || strings.Contains(got.Headline, "so far") || !strings.HasSuffix(got.Headline, " on svc (4 callers of POST /login)") ||
				got.YAxis != "how long GET /health waited, ms" || !strings.Contains(got.Notes, "GET /health, asked on svc while 4 callers sent POST /login, waited ") {
				t.Errorf("screen 2: %+v", got)
			}
		default:
			if got.Drawn || !got.Waiting || got.Wait != skips[n] || got.Notes != skips[n] || got.Headline != "Not for a service measured as it is" {
				t.Errorf("screen %d: %+v, want the line %q", n, got, skips[n])
			}
		}
		if strings.Contains(got.Headline+got.Wait+got.Notes+got.YAxis, "/fast") || strings.Contains(got.Headline+got.Wait+got.YAxis, "/slow") {
			t.Errorf("screen %d speaks of the kit's endpoints: %+v", got.Screen, got)
		}
	}
	cover, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("coverwhat").textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if cover != "svc, measured as it is: POST /login under load, GET /health asked beside it." {
		t.Errorf("the cover says %q", cover)
	}
	for _, p := range problems() {
		if !strings.Contains(p, "/events") { // the run ended (--auto) and its stream with it
			t.Error(p)
		}
	}

	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	var sweeps int
	for _, m := range run.Measurements {
		switch {
		case m.Phase == "sweep":
			sweeps++
			if m.Status != "ok" {
				t.Errorf("%s: %s: %s", m.ID, m.Status, m.Reason)
			}
		case m.Status != "skipped" || !strings.Contains(m.Reason, "protocol"):
			t.Errorf("%s: %s: %q, want skipped for the protocol", m.ID, m.Status, m.Reason)
		}
	}
	if sweeps != 2 {
		t.Errorf("%d sweep measurements, want 1 caller and 4", sweeps)
	}
	if _, err := os.Stat(filepath.Join(dir, "talk.html")); err != nil {
		t.Errorf("no talk.html: %v", err)
	}
	svc.mu.Lock()
	defer svc.mu.Unlock()
	for k := range svc.asked {
		if k != "POST /login" && k != "GET /health" {
			t.Errorf("the service was asked %s, which no flag asked for", k)
		}
	}
}
