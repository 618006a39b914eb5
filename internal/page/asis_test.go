package page

import (
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
	drawnNothingRan(t, chrome, buildPage(findings.Compute(asIsRun, run), a), "a string")
}
