package page

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bystander-kit/bystander/internal/browsertest"
	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/outside"
	"github.com/bystander-kit/bystander/internal/results"
)

// evil is what a stranger's run directory might name a server: markup and
// script for every place a name can land (HTML text, an attribute, a
// string inside the charts' script).
const evil = `</script><script>window.pwned=1</script><img src=x onerror="window.pwned=2">'"&` + "\u2028"

// hostileRun is the default test run with every server named evil.
func hostileRun(t *testing.T) *results.Run {
	t.Helper()
	run := readTestRun(t)
	for i := range run.Measurements {
		run.Measurements[i].Server.Name = evil + run.Measurements[i].Server.Name
	}
	return run
}

// TestNothingFromARunIsCode: a run whose server names are markup and
// script renders a page in which they are text: no script element or
// attribute comes of them.
func TestNothingFromARunIsCode(t *testing.T) {
	page := renderString(t, testRun, hostileRun(t), stub)
	for _, bad := range []string{"<script>window.pwned", `<img src=x`, "onerror=\"window.pwned"} {
		if strings.Contains(page, bad) {
			i := strings.Index(page, bad)
			t.Errorf("the page carries %q as markup: ...%s...", bad, page[max(0, i-120):min(len(page), i+120)])
		}
	}
	// Every script element the page has is the kit's own: as many as an
	// honest run gives.
	honest := renderString(t, testRun, readTestRun(t), stub)
	if a, b := strings.Count(page, "<script"), strings.Count(honest, "<script"); a != b {
		t.Errorf("%d script elements, an honest run has %d", a, b)
	}
}

// TestHostileInBrowser: in a real browser, the hostile run's page draws
// every chart and runs nothing of the names.
func TestHostileInBrowser(t *testing.T) {
	chrome, a := browsertest.Chromium(t), inlined(t)
	drawnNothingRan(t, chrome, buildPage(findings.Compute(testRun, hostileRun(t)), a), "a name")
}

// drawnNothingRan opens pg in chromium: its charts are drawn, the page
// says nothing wrong, and nothing of the run directory (what: "a name")
// ran as code (window.pwned, which its hostile strings set, unset).
func drawnNothingRan(t *testing.T, chrome string, pg page, what string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := writePage(f, pg); err != nil {
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
	pwned, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.pwned !== undefined`))
	if err != nil || pwned {
		t.Fatalf("%s from the run directory ran as code (window.pwned set): %v", what, err)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the page said: %q", p)
	}
}

// TestNotReadSaidAtTheTop: a measurement whose file was not read is named,
// with its file and why, at the top of the page, not only in the phases
// at its end; the name is escaped like every string from a run.
func TestNotReadSaidAtTheTop(t *testing.T) {
	run := readTestRun(t)
	for i, m := range run.Measurements {
		if m.Phase == "sweep" {
			run.Measurements[i].LoadFile = "../../etc/<b>hostname"
			break
		}
	}
	page := renderString(t, testRun, run, stub)
	i, j := strings.Index(page, "Not read: these measurements"), strings.Index(page, "<h2")
	if i < 0 || j < 0 || i > j || !strings.Contains(page[i:j], "../../etc/&lt;b&gt;hostname") {
		t.Fatalf("the page does not name the refused file above its first section")
	}
}

// TestHostileThreadNames: a thread seen from outside is named by the
// process it belongs to, which may be a stranger's: its name reaches the
// stall section's notes as text.
func TestHostileThreadNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(dir, os.DirFS(testRun)); err != nil {
		t.Fatal(err)
	}
	run := readTestRun(t)
	tr := outside.Trace{Schema: outside.Schema, Server: "pool", PID: 7}
	for i := range 8 {
		th := outside.Thread{TID: 8, Comm: evil, State: "S", Syscall: "35"}
		if i < 3 {
			th.Syscall = "232"
			tr.Before = append(tr.Before, outside.Look{TimeNs: int64(i) * 4e7, Threads: []outside.Thread{th}})
		}
		th.Syscall = "35"
		tr.During = append(tr.During, outside.Look{TimeNs: 1e9 + int64(i)*4e7, Threads: []outside.Thread{th}})
	}
	b, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	set := false
	for i, m := range run.Measurements {
		if m.Phase == "stall" && m.K > 0 && m.Server.Kind == "pool" && !set {
			run.Measurements[i].ThreadsFile = filepath.Join("stall", m.ID+".threads.json")
			if err := os.WriteFile(filepath.Join(dir, run.Measurements[i].ThreadsFile), b, 0o644); err != nil {
				t.Fatal(err)
			}
			set = true
		}
	}
	if !set {
		t.Fatal("the test run has no pool stall step with blockers")
	}
	page := renderString(t, dir, run, stub)
	if !strings.Contains(page, "Seen from outside (the threads in /proc") || !strings.Contains(page, "every held thread was in nanosleep: k=4 held &lt;/script&gt;") {
		t.Errorf("the held thread is not on the page")
	}
	for _, bad := range []string{"<script>window.pwned", `<img src=x`, "onerror=\"window.pwned"} {
		if strings.Contains(page, bad) {
			i := strings.Index(page, bad)
			t.Errorf("the page carries %q as markup: ...%s...", bad, page[max(0, i-120):min(len(page), i+120)])
		}
	}
}
