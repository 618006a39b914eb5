package page

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bystander-kit/bystander/internal/browsertest"
	"github.com/bystander-kit/bystander/internal/stage"
)

// stageOnPage serves the stage page from a hub of its own on a loopback
// test server until the test ends, with chromium to open it.
func stageOnPage(t *testing.T) (string, *stage.Hub, *httptest.Server) {
	t.Helper()
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
	t.Cleanup(cancel)
	go hub.Run(ctx)
	return chrome, hub, srv
}

// TestStageHostileNames: a recording a stranger made may name its
// servers with markup; the stage page shows every name as text, on every
// screen that names one, and runs nothing.
func TestStageHostileNames(t *testing.T) {
	chrome, hub, srv := stageOnPage(t)
	evil := `<img src=x onerror="window.pwned=1">`
	hub.Add(stage.Hello{Loops: 2, Slots: 20, BlockMs: 5, StallBlockMs: 100, Conc: []int{4}, StallConns: 6,
		ServersKind: map[string]string{evil: "loop"}, Ceiling: map[string]float64{evil: 400}, Engines: []string{evil}, Rule: evil})
	hub.Add(stage.Step{ID: "sweep-x", Phase: "sweep", Server: evil, Conc: 4, Variant: evil, Endpoint: "/slow", State: "end", Screen: 1, Workers: 2, Ceiling: 400,
		Row: &stage.StepRow{RPS: 390}})
	hub.Add(stage.Probe{ID: "off-x", Server: evil, Ms: 3.5})
	hub.Add(stage.Step{ID: "stall-x", Phase: "stall", Server: evil, Conc: 1, K: 1, Endpoint: "/slow", State: "start", Screen: 4, Workers: 2, Ceiling: 10})
	hub.Add(stage.Conn{ID: "stall-x", Conn: 0, Loop: 0, Ms: 120, Stalled: true})
	hub.Add(stage.Verdict{ID: "stall-x", Judged: false, Conns: 6, Why: evil})
	hub.Add(stage.Lag{Server: evil, Loop: 0, Ms: 120, Blocked: true, Where: "in syscall at " + evil, HeldMs: 100})
	hub.Add(stage.Step{ID: "off-x", Phase: "offload", Server: evil, Conc: 4, Variant: "blocking", Endpoint: "/slow", State: "end", Screen: 2, Workers: 2, Ceiling: 400,
		Row: &stage.StepRow{RPS: 390, FastP50Ms: 500, FastAtLeast: true}})
	hub.Add(stage.Step{ID: "off-y", Phase: "offload", Server: evil, Conc: 4, Variant: "offloaded", Endpoint: "/offload", State: "end", Screen: 5, Workers: 20, Ceiling: 4000,
		Row: &stage.StepRow{RPS: 3900, FastP50Ms: 0.3}})
	hub.Add(stage.Step{ID: "slip-x", Phase: "slip", Server: evil, Conc: 4, Endpoint: "/slow", State: "start", Screen: 6, Workers: 2, Ceiling: 400})
	hub.Add(stage.Throughput{ID: "slip-x", RPS: 390})
	hub.Add(stage.Slip{ID: "slip-x", At: 10})
	hub.Add(stage.Throughput{ID: "slip-x", RPS: 39})
	bctx, problems := browsertest.Open(t, chrome, 1600, 900)
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitReady("#stage")); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 4, 5, 6} {
		focus := ""
		if n == 6 {
			focus = "slip-x"
		}
		hub.Add(stage.Screen{Screen: n, Focus: focus})
		want := "window.stageState.screen === " + string(rune('0'+n)) + " && document.getElementById('headline').textContent.indexOf('onerror') >= 0"
		if n == 5 { // the fix's headline names no server; its chart draws them on a canvas
			want = "window.stageState.screen === 5 && window.stageDrawn[5] === true"
		}
		if n == 4 { // and where the loop was held, as text, under the grid; the screen's title stays
			want += " && document.getElementById('heldat').textContent.indexOf('loop 0 held 100 ms in syscall at <img') >= 0" +
				" && document.getElementById('where').textContent.indexOf('4. Who stalls') === 0"
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

// TestStageNotRead: a step whose result file was not read (a recording
// says so in its row) shows "not read" with why, on the sweep's and the
// stall's screens: never its live rate, never a 0, never a guess.
func TestStageNotRead(t *testing.T) {
	chrome, hub, srv := stageOnPage(t)
	why := `sweep-loop-gnet-c4 (rep 1): not read: its load_file "../../etc/hostname" was not read`
	hub.Add(stage.Hello{Loops: 4, Slots: 200, BlockMs: 5, StallBlockMs: 100, Conc: []int{4}, StallConns: 12,
		ServersKind: map[string]string{"loop-gnet": "loop"}, Ceiling: map[string]float64{"loop-gnet": 800}, Engines: []string{"gnet"}, Rule: "r"})
	hub.Add(stage.Step{ID: "sweep-loop-gnet-c4", Phase: "sweep", Server: "loop-gnet", Conc: 4, Endpoint: "/slow", State: "start", Screen: 1, Workers: 4, Ceiling: 800})
	hub.Add(stage.Throughput{ID: "sweep-loop-gnet-c4", RPS: 777})
	hub.Add(stage.Step{ID: "sweep-loop-gnet-c4", Phase: "sweep", Server: "loop-gnet", Conc: 4, Endpoint: "/slow", State: "end", Screen: 1, Workers: 4, Ceiling: 800,
		Row: &stage.StepRow{NotRead: why}})
	hub.Add(stage.Step{ID: "stall-loop-gnet-k1", Phase: "stall", Server: "loop-gnet", Conc: 1, K: 1, Endpoint: "/slow", State: "start", Screen: 4, Workers: 4, Ceiling: 40})
	hub.Add(stage.Conn{ID: "stall-loop-gnet-k1", Conn: 0, Loop: 0, Ms: 120, Stalled: true})
	hub.Add(stage.Verdict{ID: "stall-loop-gnet-k1", Judged: true, Stalled: 3, Conns: 12})
	hub.Add(stage.Step{ID: "stall-loop-gnet-k1", Phase: "stall", Server: "loop-gnet", Conc: 1, K: 1, Endpoint: "/slow", State: "end", Screen: 4, Workers: 4, Ceiling: 40,
		Row: &stage.StepRow{NotRead: "stall-loop-gnet-k1 (rep 1): not read: its perconn_file \"fifo.json\" was not read"}})
	bctx, problems := browsertest.Open(t, chrome, 1600, 900)
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitReady("#stage")); err != nil {
		t.Fatal(err)
	}
	for _, sc := range []struct {
		n    int
		want string
	}{{1, "hostname"}, {4, "fifo.json"}} {
		hub.Add(stage.Screen{Screen: sc.n})
		cond := fmt.Sprintf("window.stageState.screen === %d && document.getElementById('headline').textContent.indexOf(%q) >= 0", sc.n, sc.want)
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](cond, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			h, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById('headline').textContent`))
			t.Fatalf("screen %d does not say the step was not read (%v): %q; the page said %q", sc.n, err, h, problems())
		}
		h, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById('headline').textContent`))
		if !strings.Contains(h, "not read") || strings.Contains(h, "777") || strings.Contains(h, "3 of 12") {
			t.Errorf("screen %d: %q", sc.n, h)
		}
	}
}

// TestStageSeenFromOutside: a stall step of a server the kit looked at
// from outside shows, once it ended, the threads it found held under the
// grid, as text (thread names come from the server's process).
func TestStageSeenFromOutside(t *testing.T) {
	chrome, hub, srv := stageOnPage(t)
	evil := `<img src=x onerror="window.pwned=1">`
	hub.Add(stage.Hello{Loops: 4, Slots: 20, BlockMs: 5, StallBlockMs: 100, Conc: []int{4}, StallConns: 12,
		ServersKind: map[string]string{"netty": "loop"}, Ceiling: map[string]float64{"netty": 800}, Engines: []string{"gnet"}, Rule: "the rule"})
	hub.Add(stage.Step{ID: "stall-n", Phase: "stall", Server: "netty", Conc: 2, K: 2, Endpoint: "/slow", State: "start", Screen: 4, Workers: 4, Ceiling: 40})
	for c := range 12 {
		hub.Add(stage.Conn{ID: "stall-n", Conn: c, Loop: c / 3, Ms: 1, Stalled: c < 6})
	}
	hub.Add(stage.Step{ID: "stall-n", Phase: "stall", Server: "netty", Conc: 2, K: 2, Endpoint: "/slow", State: "end", Screen: 4, Workers: 4, Ceiling: 40,
		Row: &stage.StepRow{Stall: &stage.Verdict{ID: "stall-n", Final: true, Judged: true, Stalled: 6, Conns: 12,
			Seen: []string{"held in Thread.sleep at bystander.Protocol.block (Protocol.java:36): nioEventLoopGroup-3-2, " + evil,
				"2 of 4 nioEventLoopGroup-3-* threads held; the other 2 free (waiting for work)"}}}})
	hub.Add(stage.Screen{Screen: 4})
	bctx, problems := browsertest.Open(t, chrome, 1600, 900)
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitReady("#stage")); err != nil {
		t.Fatal(err)
	}
	want := "window.stageState.screen === 4 && document.getElementById('heldat').textContent.indexOf('seen from outside: held in Thread.sleep at bystander.Protocol.block (Protocol.java:36): nioEventLoopGroup-3-2, <img') >= 0" +
		" && document.getElementById('heldat').textContent.indexOf('2 of 4 nioEventLoopGroup-3-* threads held') >= 0"
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](want, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		h, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById('heldat').textContent`))
		t.Fatalf("the outside view is not under the grid (%v): %q; the page said %q", err, h, problems())
	}
	time.Sleep(300 * time.Millisecond)
	if imgs, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll('img').length + (window.pwned ? 1 : 0)`)); err != nil || imgs != 0 {
		t.Fatalf("a thread name made markup or ran: %d %v", imgs, err)
	}
	shot, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err == nil && os.Getenv("STAGE_SHOT") != "" {
		os.WriteFile(os.Getenv("STAGE_SHOT"), shot, 0o644)
	}
}
