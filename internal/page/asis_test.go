package page

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

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
		"ceiling: 4 workers / 6.11ms", "the load GET /accounts/42/balance, the bystander GET /health",
		// The calculator starts from it: the workers it behaves as, its call.
		`data-workers="4" data-block-ms="6.11"`, "shop: 4 workers it behaves as, 6.11 ms</button>", `id="calc_block" type="number" min="0.001" max="3600000" step="any" value="6.11"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Nor the run's parameters of the kit's servers and of the protocol's
	// phases: it measured none.
	for _, gone := range []string{`id="h_throughput"`, `id="h_bystander"`, `id="h_timeline"`, "block (stall, trace, cliff)", "how the call blocks", "/async delay",
		"200 pool slots", "stall phase</td>", "trace phase</td>", "/fast bystander</td>"} {
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
	drawnNothingRan(t, chrome, buildPage(findings.Compute(asIsRun, run), a), "a string")
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

// TestSectionsNumbered: a page's sections are numbered 1, 2, 3, ... in
// the order they stand, whatever the run left out (a server measured as
// it is has no protocol sweep, so its section is the first), a letter
// after a number for a section that goes with the one before (3b).
func TestSectionsNumbered(t *testing.T) {
	for _, dir := range []string{asIsRun, testRun} {
		run, err := results.ReadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		page := renderString(t, dir, run, stub)
		want, letter := 0, 'a'
		for _, m := range sectionTitle.FindAllStringSubmatch(page, -1) {
			n, err := strconv.Atoi(m[1])
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case m[2] == "" && (n == want || n == want+1):
				want, letter = n, 'a'
			case m[2] != "" && n == want && (rune(m[2][0]) == letter || rune(m[2][0]) == letter+1):
				letter = rune(m[2][0])
			default:
				t.Errorf("%s: section %q after %d%c", dir, m[0], want, letter)
			}
		}
		if want < 3 {
			t.Errorf("%s: %d numbered sections", dir, want)
		}
	}
}

var sectionTitle = regexp.MustCompile(`<h2 id="h_[^"]*">([0-9]+)([a-z]?)\. `)

// TestAsIsPhasesNotRunLeftOut: a run that measured a server as it is ran
// none of the phases that need the protocol: the page shows no section for
// them ("Not drawn" boxes), and says once, in one line, which were not run
// and why.
func TestAsIsPhasesNotRunLeftOut(t *testing.T) {
	run, err := results.ReadRun(asIsRun)
	if err != nil {
		t.Fatal(err)
	}
	page := renderString(t, asIsRun, run, stub)
	for _, gone := range []string{`id="h_stall`, `id="h_offload"`, `id="h_trace"`, `id="h_cliff"`, `id="h_slip`, "Not drawn: the stall phase", "phase was not run"} {
		if strings.Contains(page, gone) {
			t.Errorf("the page has %q, for a phase this run did not run", gone)
		}
	}
	line := regexp.MustCompile(`<p class="caption" id="not_run">([^<]*)</p>`).FindAllStringSubmatch(page, -1)
	if len(line) != 1 {
		t.Fatalf("%d lines say which phases were not run, want 1", len(line))
	}
	for _, want := range []string{"stall", "offload", "trace", "cliff", "slip", "shop", "as it is", "--phases"} {
		if !strings.Contains(line[0][1], want) {
			t.Errorf("the line %q does not say %q", line[0][1], want)
		}
	}
}

// TestTraceCaptionWithoutSamples: the trace's caption says how many
// samples each server measured only when it has them: never a sentence
// built from nothing, "of the samples measured ()".
func TestTraceCaptionWithoutSamples(t *testing.T) {
	run, err := results.ReadRun(asIsRun)
	if err != nil {
		t.Fatal(err)
	}
	sec := traceChart(findings.Compute(asIsRun, run))
	if strings.Contains(sec.Caption, "()") {
		t.Errorf("the trace's caption: %q", sec.Caption)
	}
	withSamples := traceChart(findings.Compute(testRun, readTestRun(t)))
	if !strings.Contains(withSamples.Caption, "of the samples measured (loop-gnet ") {
		t.Errorf("the trace's caption of a run with samples: %q", withSamples.Caption)
	}
}

// TestAsIsLabelsApart: in a real browser, at 1300 px wide and on a
// 1600x900 page, no two labels of the as-is chart lie on each other (its
// ceiling's and its steps' "N of 12 stalled").
func TestAsIsLabelsApart(t *testing.T) {
	chrome, a := browsertest.Chromium(t), inlined(t)
	run, err := results.ReadRun(asIsRun)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := writeReport(t, findings.Compute(asIsRun, run), a)
	for _, size := range [][2]int{{1300, 3000}, {1600, 900}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			ctx, problems := openDrawn(t, chrome, out, "#cost", size[0], size[1])
			labels := browsertest.CheckLabelsApart(t, ctx)["asis_shop_chart"].Texts
			for _, want := range []string{"3 of 12 stalled", "machine too busy to judge", "12 of 12 stalled", "ceiling: 4 workers / 6.11ms = 655 req/s"} {
				if !slices.Contains(labels, want) {
					t.Errorf("the chart does not show %q: %q", want, labels)
				}
			}
			if p := problems(); len(p) > 0 {
				t.Errorf("the page said: %q", p)
			}
		})
	}
}

// TestNotRunLine: the one line says each kind of phase left out once: those
// that skip servers measured as they are (for the protocol), a server a
// phase skipped for its own reason, those not asked for, those no server
// took part in.
func TestNotRunLine(t *testing.T) {
	asIs := findings.Skipped{Server: "shop", AsIs: true, Why: "it needs the protocol's /async and /slow"}
	got := notRunLine([]string{"sweep", "stall", "trace", "cliff"}, []findings.PhaseSkips{
		{Phase: "stall", Asked: true, Ran: true, Skipped: []findings.Skipped{asIs}},
		{Phase: "offload"},
		{Phase: "trace", Asked: true, Ran: true, Skipped: []findings.Skipped{asIs, {Server: "mine", Why: "no X-Continuation-Start"}}},
		{Phase: "cliff", Asked: true},
		{Phase: "slip"},
	})
	want := "Not on this page: the stall phase skips shop, measured as it is: it needs the protocol (the phases at the end say why, phase by phase); " +
		"the trace phase skipped shop: it needs the protocol's /async and /slow; the trace phase skipped mine: no X-Continuation-Start; " +
		"the offload and slip phases were not asked for (--phases sweep,stall,trace,cliff); " +
		"the cliff phase was asked for, but no server of this run takes part (see --servers)."
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := notRunLine([]string{"sweep"}, nil); got != "" {
		t.Errorf("a run that ran every phase it asked for: %q", got)
	}
}
