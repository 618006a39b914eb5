package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bystander-kit/bystander/internal/browsertest"
	"github.com/bystander-kit/bystander/internal/stage"
)

// TestStageHostileNames: a recording a stranger made may name its
// servers with markup; the stage page shows every name as text, on every
// screen that names one, and runs nothing.
func TestStageHostileNames(t *testing.T) {
	chrome, a := browsertest.Chromium(t), inlined(t)
	page, err := writeStagePage(a)
	if err != nil {
		t.Fatal(err)
	}
	hub, err := stage.NewHub("", page)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(hub)
	t.Cleanup(srv.Close) // after the browser's cleanup (registered later, run first): its stream ends first
	hub.Allow(srv.Listener.Addr().String())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go hub.Run(ctx)
	evil := `<img src=x onerror="window.pwned=1">`
	hub.Add(stage.Event{"k": "hello", "loops": 2, "slots": 20, "block_ms": 5, "stall_block_ms": 100, "conc": []int{4}, "stall_conns": 6,
		"servers_kind": map[string]string{evil: "loop"}, "ceiling": map[string]float64{evil: 400}, "stall_threshold_ms": 50, "engines": []string{evil}})
	hub.Add(stage.Event{"k": "step", "id": "sweep-x", "phase": "sweep", "server": evil, "conc": 4, "kk": 0, "variant": evil, "endpoint": "/slow",
		"state": "done", "screen": 1, "workers": 2, "ceiling": 400, "rps": 390.0})
	hub.Add(stage.Event{"k": "probe", "server": evil, "ms": 3.5})
	hub.Add(stage.Event{"k": "step", "id": "stall-x", "phase": "stall", "server": evil, "conc": 1, "kk": 1, "variant": "", "endpoint": "/slow",
		"state": "running", "screen": 4, "workers": 2, "ceiling": 10})
	hub.Add(stage.Event{"k": "conn", "id": "stall-x", "conn": 0, "loop": 0, "ms": 120.0})
	hub.Add(stage.Event{"k": "step", "id": "off-x", "phase": "offload", "server": evil, "conc": 4, "kk": 0, "variant": "blocking", "endpoint": "/slow",
		"state": "done", "screen": 2, "workers": 2, "ceiling": 400, "rps": 390.0})
	hub.Add(stage.Event{"k": "step", "id": "off-y", "phase": "offload", "server": evil, "conc": 4, "kk": 0, "variant": "offloaded", "endpoint": "/offload",
		"state": "done", "screen": 5, "workers": 20, "ceiling": 4000, "rps": 3900.0})
	bctx, problems := browsertest.Open(t, chrome, 1600, 900)
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitReady("#stage")); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 4, 5} {
		hub.Add(stage.Event{"k": "screen", "screen": n})
		want := "window.stageState.screen === " + string(rune('0'+n)) + " && document.getElementById('headline').textContent.indexOf('onerror') >= 0"
		if n == 5 { // the fix's headline names no server; its chart draws them on a canvas
			want = "window.stageState.screen === 5 && window.stageDrawn[5] === true"
		}
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](want, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			h, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById('headline').textContent`))
			t.Fatalf("screen %d: the name is not shown as text (%v): %q; the page said %q", n, err, h, problems())
		}
	}
	time.Sleep(300 * time.Millisecond) // an onerror would have fired
	type seen struct {
		Pwned bool
		Imgs  int
	}
	got, err := chromedp.Run(bctx, chromedp.Evaluate[seen](`({Pwned: window.pwned !== undefined, Imgs: document.querySelectorAll('img').length})`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Pwned || got.Imgs != 0 {
		t.Fatalf("a name from the recording ran or made markup: %+v", got)
	}
	for _, p := range problems() {
		if !strings.Contains(p, "favicon") {
			t.Error(p)
		}
	}
}
