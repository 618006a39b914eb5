package page

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
)

var update = flag.Bool("update", false, "rewrite testdata/report.golden.html")

// stub stands in for echarts in tests that look at the page, not a browser.
var stub = Asset{js: []byte("/* echarts stub for tests */ var echarts = {};")}

const testRun = "../findings/testdata/run" // a real default run of ./run.sh, report.html left out

// customRun is a real --quick run with a value other than the default for
// every parameter a caption states (see internal/experiment's customArgs).
const customRun = "../findings/testdata/custom-run"

func readTestRun(t *testing.T) *results.Run {
	t.Helper()
	run, err := results.ReadRun(testRun)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// renderString is the page of run, its charts' scripts unpacked where the
// page carries them packed (readable): what the tests read.
func renderString(t *testing.T, dir string, run *results.Run, a Asset) string {
	t.Helper()
	var b bytes.Buffer
	if err := writePage(&b, buildPage(findings.Compute(dir, run), a)); err != nil {
		t.Fatal(err)
	}
	return readable(t, b.String())
}

var packedCharts = regexp.MustCompile(`window\.bystanderChartsPacked = "([A-Za-z0-9+/=]*)";`)

// readable is page with its packed charts' scripts unpacked in their
// place, as a reader of the page's source (or of the golden) wants them.
func readable(t *testing.T, page string) string {
	t.Helper()
	m := packedCharts.FindStringSubmatch(page)
	if m == nil {
		return page
	}
	return strings.Replace(page, m[0], "/* the charts' scripts, unpacked for the tests */\n"+unpacked(t, m[1]), 1)
}

// unpacked is what window.bystanderUnpack gives for b64.
func unpacked(t *testing.T, b64 string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	js, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}

// TestChartsPacked: the page carries every chart's script once, packed, in
// page order, and none beside its chart (TestInBrowser: a default run's
// report, echarts inlined, is then 400 KB at most, and draws every chart).
func TestChartsPacked(t *testing.T) {
	run := readTestRun(t)
	p := buildPage(findings.Compute(testRun, run), stub)
	var want strings.Builder
	for _, sec := range p.Sections {
		if sec.Script != "" {
			want.WriteString(strings.TrimSuffix(strings.TrimPrefix(string(sec.Script), "<script>"), "</script>") + "\n")
		}
	}
	var b bytes.Buffer
	if err := writePage(&b, p); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	m := packedCharts.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no packed charts in the page")
	}
	if got := unpacked(t, m[1]); got != want.String() || !strings.Contains(got, "bystanderCharts.push") {
		t.Errorf("the packed charts are not every chart's script in page order (%d bytes, want %d)", len(got), want.Len())
	}
	if n := strings.Count(page, "bystanderCharts.push"); n != 0 {
		t.Errorf("%d chart scripts beside their charts", n)
	}
}

// TestGolden: the same run gives the same page, byte for byte (fixed chart
// IDs, ordered data), and that page is the reviewed one.
func TestGolden(t *testing.T) {
	run := readTestRun(t)
	got := renderString(t, testRun, run, stub)
	if again := renderString(t, testRun, run, stub); again != got {
		t.Fatal("two renderings of the same run differ")
	}
	golden := filepath.Join("testdata", "report.golden.html")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./report -run TestGolden -update to write it)", err)
	}
	if got != string(want) {
		t.Fatal("the page differs from testdata/report.golden.html; if the change is intended, rerun with -update and review the diff")
	}
}

// TestEveryChart: from a full run every chart is drawn, each under its
// fixed ID, with a caption.
func TestEveryChart(t *testing.T) {
	run := readTestRun(t)
	p := buildPage(findings.Compute(testRun, run), stub)
	ids := map[string]bool{}
	for _, s := range p.Sections {
		ids[s.ID] = true
		if s.Missing != "" {
			t.Errorf("%s: not drawn: %s", s.ID, s.Missing)
		}
		if s.Caption == "" || s.Title == "" {
			t.Errorf("%s: no title or caption", s.ID)
		}
		form := s.ID == "calc" && strings.Contains(string(s.Element), `id="calc_workers"`) // a form, not a chart
		if s.Table == nil && s.Grid == nil && !form && (!strings.Contains(string(s.Element), `id="`+s.ID+`"`) || !strings.Contains(string(s.Script), "echarts.init")) {
			t.Errorf("%s: no chart element or script", s.ID)
		}
	}
	for _, id := range []string{"throughput", "bystander", "timeline", "lag_sweep_loop_gnet", "stall_loop_gnet", "stall_pool", "lag_stall_loop_gnet", "offload", "trace", "cliff", "cost", "published", "classes", "calc"} {
		if !ids[id] {
			t.Errorf("no section %s", id)
		}
	}
	page := renderString(t, testRun, run, stub)
	for _, want := range []string{`"type":"log"`, "ceiling of loop-gnet: 4 loops / 5ms = 800 req/s", "Little", `id="headline"`, `data-figure="throughput"`, "stalled 3 of 12 (expected 3)", "workers: 4 loops",
		"SATURATED", "grows without bound", "p50 from send", "loop 0 #3", "unanswered when the window ended",
		"k=4, loop 3 (held in /slow)", "largest heartbeat lag"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// TestMissingPhases: a run with phases not run and one failed measurement
// still renders, and says what is missing and why: the phases not run in
// one line, without a section each.
func TestMissingPhases(t *testing.T) {
	run := readTestRun(t)
	var keep []results.Measurement
	for _, m := range run.Measurements {
		if m.Phase == "sweep" {
			keep = append(keep, m)
		}
	}
	keep[len(keep)-1].Status, keep[len(keep)-1].Reason = "failed", "the server died during the measurement: exit status 2"
	keep[len(keep)-1].LoadFile, keep[len(keep)-1].ProbeFile, keep[len(keep)-1].Cost = "", "", nil
	run.Measurements = keep
	run.Params.Phases = []string{"sweep"}
	run.Partial, run.PartialReason = true, "interrupted after 40s"
	page := renderString(t, testRun, run, stub)
	for _, want := range []string{
		// The phases not run have no section: one line says so.
		`<p class="caption" id="not_run">Not on this page: the stall, offload, trace, cliff and slip phases were not asked for (--phases sweep).</p>`,
		"not run</td>", "the server died during the measurement", "This run was cut short (interrupted after 40s)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, gone := range []string{"missing_stall", "missing_offload", "missing_trace", "missing_cliff", "missing_slip"} {
		if strings.Contains(page, gone) {
			t.Errorf("the page has %s, a section of a phase not run", gone)
		}
	}
	if !strings.Contains(page, `id="throughput"`) {
		t.Error("the sweep chart is gone with the failure")
	}
	// Nothing at all.
	run.Measurements = nil
	page = renderString(t, testRun, run, stub)
	if !strings.Contains(page, "missing_throughput") || !strings.Contains(page, "no load measurement completed") {
		t.Error("an empty run does not say why the charts are missing")
	}
}

var external = regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//`)

// TestSelfContained: with echarts inlined nothing is loaded from anywhere;
// without it the page uses the CDN and says so.
func TestSelfContained(t *testing.T) {
	run := readTestRun(t)
	page := renderString(t, testRun, run, stub)
	if m := external.FindString(page); m != "" || strings.Contains(page, "<script src") {
		t.Errorf("inlined page loads %q", m)
	}
	if !strings.Contains(page, `("`+base64.StdEncoding.EncodeToString(stub.packed())+`")`) {
		t.Error("echarts is not inlined")
	}
	page = renderString(t, testRun, run, Asset{note: "npm is not installed"})
	if !strings.Contains(page, `<script src="`+echartsCDN+`"></script>`) || !strings.Contains(page, "could not be inlined (npm is not installed)") {
		t.Error("the CDN fallback is not used or not said")
	}
	// Each time series stays within the bound.
	for _, s := range buildPage(findings.Compute(testRun, run), stub).Sections {
		var opt map[string]any
		if i := strings.Index(string(s.Script), "let option_"); i >= 0 {
			js := string(s.Script)[i:]
			js = js[strings.Index(js, "=")+1:]
			js = strings.TrimRight(strings.TrimSpace(js[:strings.Index(js, "goecharts_")]), ";")
			if err := json.Unmarshal([]byte(js), &opt); err != nil {
				t.Fatalf("%s: option is not JSON: %v", s.ID, err)
			}
			for _, se := range opt["series"].([]any) {
				if d, ok := se.(map[string]any)["data"].([]any); ok && len(d) > maxPoints {
					t.Errorf("%s: a series of %d points", s.ID, len(d))
				}
			}
		}
	}
}

func TestAssetChecks(t *testing.T) {
	if err := checkJS([]byte("not echarts")); err == nil {
		t.Error("a wrong file passed")
	}
	// An npm tarball unpacks under its package/ prefix; nothing lands
	// outside the directory and only regular files are written.
	var tgz bytes.Buffer
	zw := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(zw)
	for _, f := range []struct {
		name string
		kind byte
	}{{"package/lib/a.js", tar.TypeReg}, {"package/../../evil.js", tar.TypeReg}, {"package/link.js", tar.TypeSymlink}, {"other/b.js", tar.TypeReg}} {
		body := []byte("console.log(1)")
		if f.kind != tar.TypeReg {
			body = nil
		}
		_ = tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(body)), Typeflag: f.kind, Linkname: "/etc/passwd"})
		_, _ = tw.Write(body)
	}
	tw.Close()
	zw.Close()
	root := t.TempDir()
	into := filepath.Join(root, "node_modules", "x")
	if err := unpack(tgz.Bytes(), into); err != nil {
		t.Fatal(err)
	}
	var files []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			files = append(files, rel)
		}
		return nil
	})
	if strings.Join(files, ",") != "node_modules/x/lib/a.js" {
		t.Errorf("unpacked %v, want only node_modules/x/lib/a.js", files)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "echarts.min.js")
	_ = os.WriteFile(bad, []byte("x"), 0o644)
	if a := loadAsset(bad, true, &bytes.Buffer{}); a.js != nil || !strings.Contains(a.note, "sha256") {
		t.Errorf("a wrong --echarts file was used: %q", a.note)
	}
	t.Setenv("BYSTANDER_CACHE", dir)
	if a := loadAsset("", true, &bytes.Buffer{}); a.js != nil || !strings.Contains(a.note, "offline") {
		t.Errorf("offline without a cache: %q", a.note)
	}
}

// defaultsStated finds a default value stated in text: the block, the
// stall block, loops, slots, the probe interval, the /async delay, the
// stall connections, the trace callers and the block mode of a default run.
var defaultsStated = regexp.MustCompile(`(^|[^0-9.])(5 ?ms|100 ?ms|50 ?ms|4 (event )?loops|200[ -](slots?|threads?|workers?)|12 (/async )?connections|of 12\b|8 callers|syscall)`)

// TestCaptionsFromTheRun: a real run made with a non-default value of
// every parameter a caption, title or heading states: the page states the
// run's values and none of the defaults.
func TestCaptionsFromTheRun(t *testing.T) {
	run, err := results.ReadRun(customRun)
	if err != nil {
		t.Fatal(err)
	}
	p := buildPage(findings.Compute(customRun, run), stub)
	var text strings.Builder
	text.WriteString(p.Lead)
	for _, kv := range p.Params {
		text.WriteString("\n" + kv.K + ": " + kv.V)
	}
	for _, s := range p.Sections {
		if s.ID == "published" {
			// It states the publication's conditions, as the publication's.
			if !strings.Contains(s.Caption, "the published run: Netty on 4 event loops") {
				t.Errorf("the published section does not say whose conditions it states: %s", s.Caption)
			}
			continue
		}
		text.WriteString("\n" + s.Title + "\n" + s.Caption + "\n" + strings.Join(s.Notes, "\n"))
		// The chart's own words: series names, axis names, labels.
		text.WriteString("\n" + string(s.Script))
		if s.Table != nil {
			for _, r := range s.Table.Rows {
				text.WriteString("\n" + r.Bound)
			}
		}
	}
	got := text.String()
	if m := defaultsStated.FindString(got); m != "" {
		i := strings.Index(got, m)
		t.Fatalf("the page states a default the run did not use: %q in ...%s...", m, got[max(0, i-200):min(len(got), i+200)])
	}
	for _, want := range []string{"A 8ms blocking call is harmless on pool's 40 slots and ruinous on loop-gnet's 3 event loops", "3 loops / 8ms", "every 30ms",
		"9 connections", "delay 7ms", "5 callers blocked", "40 slots", "sleep"} {
		if !strings.Contains(got, want) {
			t.Errorf("the page does not state %q", want)
		}
	}
}

// nodeRun is a real --quick run of the Node.js example alone (--servers=
// --target node=URL,offload=32, no pid=).
const nodeRun = "../findings/testdata/node-run"

// offloadRun is a real --quick run of the loop server's sweep alone with
// --sweep-endpoint=/offload, to compare with testRun's /slow.
const offloadRun = "../findings/testdata/offload-run"

// TestExternalRun: a server the user started is shown like the kit's, with
// its name, its own loops in the stall chart, and its cost said to be not
// measured rather than shown as 0.
func TestExternalRun(t *testing.T) {
	run, err := results.ReadRun(nodeRun)
	if err != nil {
		t.Fatal(err)
	}
	p := buildPage(findings.Compute(nodeRun, run), stub)
	ids := map[string]bool{}
	for _, s := range p.Sections {
		ids[s.ID] = true
	}
	for _, id := range []string{"throughput", "bystander", "stall_node", "offload", "trace", "cost"} {
		if !ids[id] {
			t.Errorf("no section %s", id)
		}
	}
	page := renderString(t, nodeRun, run, stub)
	for _, want := range []string{"ceiling of node: 1 loop / 5ms = 200 req/s", "Who stalls: 3 connections by blocked loops, node", "3 on each of the 1 loops",
		"not measured (external)", "no pid="} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// The story's claims are stated only for servers the run measured:
	// nothing of the kit's loops or pool, which never ran here.
	before, _, _ := strings.Cut(page, `<h2 id="h_published">`) // the publication's own conditions, said as its
	for _, bad := range []string{"12 connections", "0.0 us CPU", "4 event loops", "200-slot", "200 slots", "800 req/s"} {
		if strings.Contains(before, bad) {
			i := strings.Index(before, bad)
			t.Errorf("the page says %q, which is not this run's: ...%s...", bad, before[max(0, i-150):min(len(before), i+100)])
		}
	}
	if !strings.Contains(page, "This run measured node (1 event loop, ceiling 1 loop / 5ms = 200 req/s)") {
		t.Error("the lead does not say what this run measured")
	}
}

// TestStageRun: a run given on stage says so among its parameters; the
// same run without the stage does not.
func TestStageRun(t *testing.T) {
	run := readTestRun(t)
	plain := renderString(t, testRun, run, stub)
	run.Params.Stage = true
	staged := renderString(t, testRun, run, stub)
	for _, want := range []string{"the stage (--stage)", findings.OnStage} {
		if !strings.Contains(staged, want) {
			t.Errorf("the stage run's page lacks %q", want)
		}
		if strings.Contains(plain, want) {
			t.Errorf("the page of a run without the stage says %q", want)
		}
	}
}

// TestHoldsNotJudgedShown: a loop's holds the detector could not judge
// (not blocks) are said beside the loop, with the share of the window
// they held, and the caption says what they are: a sleep-mode run's
// loops held nearly all the window showed held 8% by their one block a
// second, the rest said nowhere.
func TestHoldsNotJudgedShown(t *testing.T) {
	f := findings.Compute(testRun, readTestRun(t))
	for i := range f.LagRows {
		if f.LagRows[i].Step.Phase == "stall" && f.LagRows[i].Step.K == 4 {
			f.LagRows[i].Loops[2].Unknown, f.LagRows[i].Loops[2].UnknownShare = 11, 0.91
		}
	}
	secs := lagCharts(f, "stall", "4b", "while k loops were kept blocked")
	if len(secs) == 0 {
		t.Fatal("no stall lag chart")
	}
	s := secs[0]
	if !strings.Contains(string(s.Script), "k=4, loop 2 (held in /slow) (11 holds not judged, 91% of the window)") {
		t.Error("the loop's holds not judged are not said beside it")
	}
	if !strings.Contains(s.Caption, "could not judge is not a block, and not left out") {
		t.Errorf("caption does not say what a hold not judged is: %s", s.Caption)
	}
	if w := notJudged(findings.LoopLag{Unknown: 1, UnknownShare: 0.004}); w != "1 hold not judged, 0% of the window" {
		t.Errorf("%q", w)
	}
}
