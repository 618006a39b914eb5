package page

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bystander-kit/bystander/internal/browsertest"
	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
)

const asIsRun = "../findings/testdata/asis-netty-run" // the Netty shop of examples/services measured as it is

// TestAsIsSection: a server measured as it is has its section: its sweep
// against the ceiling inferred from it, the bystander, who stalled at each
// step, its class; the protocol's sweep charts, which it has no figure
// for, are left out.
func TestAsIsSection(t *testing.T) {
	run, err := results.ReadRun(asIsRun)
	if err != nil {
		t.Fatal(err)
	}
	page := renderString(t, asIsRun, run, stub)
	for _, want := range []string{`id="h_asis_shop"`, "shop as it is: its own call", "GET /accounts/42/balance", "GET /health",
		"<th>stalled</th>", "<td>3 of 12</td>", "<td>1, 5, 9</td>", "Its class: loop: a few threads the load holds", "off the CPU",
		"ceiling: 4 workers / 6.11ms", "the load GET /accounts/42/balance, the bystander GET /health"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, gone := range []string{`id="h_throughput"`, `id="h_bystander"`, `id="h_timeline"`} {
		if strings.Contains(page, gone) {
			t.Errorf("the page has %s, the protocol's sweep, for a run that measured nothing with it", gone)
		}
	}
}

// TestAsIsNothingIsCode: what a run directory says a server measured as
// it is was asked (and its name) is text on the page, never markup or
// script: a stranger's run.json may say anything there.
func TestAsIsNothingIsCode(t *testing.T) {
	run, err := results.ReadRun(asIsRun)
	if err != nil {
		t.Fatal(err)
	}
	for i := range run.Measurements {
		s := &run.Measurements[i].Server
		s.Name, s.Load, s.Bystander = evil+s.Name, "GET /"+evil, "GET /h"+evil
	}
	for i := range run.Params.Targets {
		s := &run.Params.Targets[i]
		s.Name, s.Load, s.Bystander = evil+s.Name, "GET /"+evil, "GET /h"+evil
	}
	page := renderString(t, asIsRun, run, stub)
	for _, bad := range []string{"<script>window.pwned", `<img src=x`, "onerror=\"window.pwned"} {
		if i := strings.Index(page, bad); i >= 0 {
			t.Errorf("the page carries %q as markup: ...%s...", bad, page[max(0, i-120):min(len(page), i+120)])
		}
	}
	honest, err := results.ReadRun(asIsRun)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := strings.Count(page, "<script"), strings.Count(renderString(t, asIsRun, honest, stub), "<script"); a != b {
		t.Errorf("%d script elements, an honest run has %d", a, b)
	}
}

// TestAsIsInBrowser: in a real browser, the page of a server measured as
// it is, its name and requests hostile, draws its chart, says nothing
// wrong, and runs nothing of what the run directory said.
func TestAsIsInBrowser(t *testing.T) {
	chrome, a := browsertest.Chromium(t), inlined(t)
	run, err := results.ReadRun(asIsRun)
	if err != nil {
		t.Fatal(err)
	}
	for i := range run.Measurements {
		s := &run.Measurements[i].Server
		s.Name, s.Load = evil+s.Name, "GET /"+evil
	}
	out := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := writePage(f, buildPage(findings.Compute(asIsRun, run), a)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ctx, problems := browsertest.Open(t, chrome, 1300, 3000)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+out), chromedp.WaitReady("#cost")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool]("window.bystanderAllDrawnMs > 0", chromedp.WithPollingInterval(10*time.Millisecond))); err != nil {
		t.Fatalf("the charts were not drawn: %v; the page said: %q", err, problems())
	}
	time.Sleep(200 * time.Millisecond) // an onerror would have fired by now
	if pwned, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.pwned !== undefined`)); err != nil || pwned {
		t.Fatalf("a string from the run directory ran as code (window.pwned set): %v", err)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the page said: %q", p)
	}
}

// asIsWatchRun is the Netty and Tomcat shops measured as they are, each
// watched at its top step through Flight Recorder.
const asIsWatchRun = "../findings/testdata/asis-watch-run"

// TestAsIsWatchSection: the as-is section says the watched step: the
// culprit's sentence, the limits and what watching cost; and what a
// recording names (a thread, a frame, a peer, a limit: a stranger's
// service says them) is text, never markup or script.
func TestAsIsWatchSection(t *testing.T) {
	run, err := results.ReadRun(asIsWatchRun)
	if err != nil {
		t.Fatal(err)
	}
	page := renderString(t, asIsWatchRun, run, stub)
	for _, want := range []string{"Watched at 16 callers through Flight Recorder for 641 ms: 4 of 4 event-loop threads held 75 % of the window in a socket read to 127.0.0.1:39101 at shop.LedgerClient.balance (LedgerClient.java:35)",
		"What watching cost: throughput 0.37x", "Whether the pool forgave them meanwhile is not told: machine too busy to judge"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(asIsWatchRun)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sweep", "sweep-shop-c16-watched.watch.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	js := strings.ReplaceAll(evil, `"`, `\"`)
	for _, s := range []string{"in a socket read", "127.0.0.1:39101", "shop.LedgerClient.balance", "LedgerClient.java", "Flight Recorder"} {
		b = []byte(strings.ReplaceAll(string(b), `"`+s, `"`+js+s))
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	page = renderString(t, dir, run, stub)
	if !strings.Contains(page, "window.pwned") {
		t.Fatal("the hostile recording was not shown at all")
	}
	for _, bad := range []string{"<script>window.pwned", `<img src=x`, "onerror=\"window.pwned"} {
		if i := strings.Index(page, bad); i >= 0 {
			t.Errorf("the page carries %q as markup: ...%s...", bad, page[max(0, i-120):min(len(page), i+120)])
		}
	}
}
