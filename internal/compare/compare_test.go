package compare

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
)

// Real runs kept by the report's tests.
const (
	defaultRun = "../findings/testdata/run"        // a default ./run.sh
	customRun  = "../findings/testdata/custom-run" // --quick with other values of every parameter
	nodeRun    = "../findings/testdata/node-run"   // the Node.js example alone (--servers= --target)
	offloadRun = "../findings/testdata/offload-run"
	slipRun    = "../findings/testdata/slip-run" // ./run.sh --phases=slip
)

// TestTest: the U test across repetitions, benchstat's way.
func TestTest(t *testing.T) {
	for _, tc := range []struct {
		name        string
		a, b        findings.Figure
		tested, sig bool
		verdict     string
		ptext       string
	}{
		{"one repetition: the change, no test", findings.Figure{100}, findings.Figure{120}, false, false, "+20.0%", "no test (n=1+1)"},
		{"apart in every repetition", findings.Figure{100, 101, 99, 100, 102}, findings.Figure{120, 119, 121, 122, 118}, true, true, "+20.0%", "p=0.008 n=5+5"},
		{"overlapping: ~", findings.Figure{100, 120, 99, 118, 105}, findings.Figure{101, 119, 104, 117, 100}, true, false, "~", "n=5+5"},
		{"three each cannot show a change", findings.Figure{100, 101, 102}, findings.Figure{200, 201, 202}, true, false, "~", "p cannot go below 0.100"},
		{"both zero: no change", findings.Figure{0}, findings.Figure{0}, false, false, "+0.0%", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Cell{A: tc.a, B: tc.b}
			test(&c)
			if c.Tested != tc.tested || c.Significant != tc.sig || c.Verdict() != tc.verdict || !strings.Contains(c.PText(), tc.ptext) {
				t.Fatalf("tested %v significant %v verdict %q p %q; want %v %v %q %q", c.Tested, c.Significant, c.Verdict(), c.PText(), tc.tested, tc.sig, tc.verdict, tc.ptext)
			}
		})
	}
	c := Cell{A: findings.Figure{0}, B: findings.Figure{3}}
	test(&c)
	if !math.IsNaN(c.Delta) || c.Verdict() != "?" {
		t.Errorf("from 0: delta %v verdict %q, want no percentage", c.Delta, c.Verdict())
	}
	if p := minP(5, 5); p < 0.0079 || p > 0.0080 {
		t.Errorf("minP(5,5) = %f, want 2/252", p)
	}
}

// A run against itself: every measurement pairs, nothing differs, every
// change is 0.
func TestSameRun(t *testing.T) {
	phases := map[string]bool{}
	var sb strings.Builder
	// A default run has every phase but the slip, which a run of its own
	// (./run.sh --phases=slip) has.
	for _, run := range []string{defaultRun, slipRun} {
		c, err := Runs(run, run)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Differ) != 0 || len(c.Only) != 0 {
			t.Fatalf("differ %q only %q", c.Differ, c.Only)
		}
		for _, r := range c.Rows {
			phases[r.Phase] = true
			for _, cell := range r.Cells {
				if cell.Delta != 0 || cell.Tested {
					t.Errorf("%s %s: delta %v tested %v", r.Key, cell.Metric, cell.Delta, cell.Tested)
				}
			}
		}
		c.Write(&sb, true)
	}
	for _, p := range findings.Phases {
		if !phases[p] {
			t.Errorf("phase %s not compared", p)
		}
	}
	for _, want := range []string{"the runs have the same parameters", "sweep loop-gnet 64 callers", "/slow throughput (req/s)", "stalled connections", "no test (n=1+1)",
		"slip loop-gnet 64 callers (5ms -> 50ms)", "throughput at 50ms, after the slip (req/s)"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, sb.String())
		}
	}
}

// Different parameters: said, and only common measurements compared.
func TestDifferentRuns(t *testing.T) {
	c, err := Runs(defaultRun, customRun)
	if err != nil {
		t.Fatal(err)
	}
	differ := strings.Join(c.Differ, "\n")
	for _, want := range []string{"block: 5ms vs 8ms", "loops: 4 vs 3", "block mode: syscall vs sleep", "callers: [4 16 64] vs [6]"} {
		if !strings.Contains(differ, want) {
			t.Errorf("differences lack %q:\n%s", want, differ)
		}
	}
	only := strings.Join(c.Only, "\n")
	if !strings.Contains(only, "A only: sweep loop-gnet 64 callers") || !strings.Contains(only, "B only: sweep loop-gnet 6 callers") {
		t.Errorf("only: %s", only)
	}
	for _, r := range c.Rows {
		if r.Phase == "sweep" {
			t.Errorf("%s compared, but the runs had no sweep point in common", r.Key)
		}
	}
}

// The sweep of /slow against the sweep of /offload: matched by server and
// callers, the endpoints said.
func TestSlowAgainstOffload(t *testing.T) {
	c, err := Runs(defaultRun, offloadRun)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(c.Differ, "\n"), "sweep endpoint: /slow vs /offload") {
		t.Errorf("differ: %q", c.Differ)
	}
	n := 0
	for _, r := range c.Rows {
		if r.Phase != "sweep" {
			continue
		}
		n++
		if r.Endpoint != "/slow -> /offload" || r.Cells[0].Metric != "/slow throughput -> /offload throughput" {
			t.Errorf("%s: endpoint %q metric %q", r.Key, r.Endpoint, r.Cells[0].Metric)
		}
		if r.Key == "sweep loop-gnet 64 callers" && r.Cells[0].Delta < 100 {
			t.Errorf("%s: /offload at 64 callers is %+.0f%% against /slow on 4 loops, want several times more", r.Key, r.Cells[0].Delta)
		}
	}
	if n == 0 {
		t.Fatal("no sweep point compared")
	}
}

// Runs that cannot be compared are refused with why.
func TestRefused(t *testing.T) {
	_, err := Runs(defaultRun, nodeRun)
	if err == nil || !strings.Contains(err.Error(), "no measurement in common") || !strings.Contains(err.Error(), "sweep node 4 callers") ||
		!strings.Contains(err.Error(), "targets: none vs node=") {
		t.Fatalf("%v", err)
	}
	if _, err := Runs(defaultRun, t.TempDir()); err == nil || !strings.Contains(err.Error(), "B (") {
		t.Fatalf("not a run: %v", err)
	}
}

// A run given on stage against one without: said among the differences,
// since a browser on the machine may have shared the CPU.
func TestStageDiffers(t *testing.T) {
	on, off := &results.Run{Params: results.RunParams{Stage: true}}, &results.Run{}
	if d := strings.Join(differ(on, off), "\n"); !strings.Contains(d, "given on stage (--stage): true vs false") {
		t.Errorf("differences: %q", d)
	}
	if d := differ(off, off); len(d) != 0 {
		t.Errorf("two runs without the stage differ: %q", d)
	}
}

// TestSplit: the changes that matter come first, tested ones before
// untested, the largest first; the rest is folded unless all is asked.
func TestSplit(t *testing.T) {
	c, err := Runs(defaultRun, offloadRun)
	if err != nil {
		t.Fatal(err)
	}
	first, rest := c.Split()
	if len(first) == 0 || len(rest) == 0 {
		t.Fatalf("first %d, rest %d: want both", len(first), len(rest))
	}
	for i, ch := range first {
		if !ch.Matters() || ch.Cell.Tested || math.Abs(ch.Cell.Delta) < UntestedShown {
			t.Errorf("first[%d] %s %s: %+.1f%% tested %v", i, ch.Row.Key, ch.Cell.Metric, ch.Cell.Delta, ch.Cell.Tested)
		}
		if i > 0 && math.Abs(ch.Cell.Delta) > math.Abs(first[i-1].Cell.Delta) {
			t.Errorf("first[%d] %+.1f%% after %+.1f%%: not the largest first", i, ch.Cell.Delta, first[i-1].Cell.Delta)
		}
	}
	for _, ch := range rest {
		if ch.Matters() {
			t.Errorf("rest holds %s %s %+.1f%%", ch.Row.Key, ch.Cell.Metric, ch.Cell.Delta)
		}
	}
	var folded, whole strings.Builder
	c.Write(&folded, false)
	c.Write(&whole, true)
	if want := fmt.Sprintf("%d other figures", len(rest)); !strings.Contains(folded.String(), want) || strings.Count(folded.String(), "\n") >= strings.Count(whole.String(), "\n") {
		t.Errorf("folded output lacks %q or is not shorter:\n%s", want, folded.String())
	}
	// The first figure printed is the largest change.
	top := first[0].Cells()
	i := strings.Index(folded.String(), top[0]+"  ")
	if i < 0 || i > strings.Index(folded.String(), "other figures") {
		t.Errorf("the largest change %q is not printed first:\n%s", top[0], folded.String())
	}

	// A tested significant change comes before an untested larger one,
	// and a tested change that is not significant is folded however large.
	sig := Change{Cell: Cell{Tested: true, Significant: true, Delta: 5}}
	untested := Change{Cell: Cell{Delta: 80}}
	notSig := Change{Cell: Cell{Tested: true, Delta: 90}}
	small := Change{Cell: Cell{Delta: 3}}
	cmp := &Comparison{Rows: []Row{{Key: "x", Cells: []Cell{small.Cell, untested.Cell, notSig.Cell, sig.Cell}}}}
	first, rest = cmp.Split()
	if len(first) != 2 || first[0].Cell.Delta != 5 || first[1].Cell.Delta != 80 || len(rest) != 2 {
		t.Errorf("first %+v rest %+v", first, rest)
	}
}

// TestSharedMachine: a run measured beside other processes is said so,
// with how many of its measurements were.
func TestSharedMachine(t *testing.T) {
	c, err := Runs(customRun, customRun)
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Shared(); len(s) != 0 {
		t.Fatalf("a run on a quiet machine said shared: %q", s)
	}
	f := c.A
	if len(f.Cost) == 0 {
		t.Fatal("no cost rows")
	}
	b := *f.Cost[0].Bound
	b.Shared, b.OtherCores = true, 0.5*float64(f.Run.Manifest.Cores)
	f.Cost[0].Bound = &b
	got := c.Shared()
	if len(got) != 1 || !strings.HasPrefix(got[0], "A: other processes used 10 % or more of the machine during 1 of ") || !strings.HasSuffix(got[0], "(up to 50 %)") {
		t.Errorf("shared: %q", got)
	}
	var sb strings.Builder
	c.Write(&sb, false)
	if !strings.Contains(sb.String(), "shared machine, A: ") || strings.Contains(sb.String(), "shared machine, B") {
		t.Errorf("the table does not say it (or says it of B):\n%s", sb.String())
	}
}

// TestNotRead: a measurement whose file one run directory names but the
// kit refuses is said as not read in that run, with the file and why, not
// as a measurement the other run made alone.
func TestNotRead(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(defaultRun)); err != nil {
		t.Fatal(err)
	}
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range run.Measurements {
		if m.ID == "sweep-loop-gnet-c64" {
			run.Measurements[i].LoadFile = "../../etc/hostname"
		}
	}
	b, _ := json.Marshal(run)
	if err := os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Runs(dir, defaultRun)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	c.Write(&out, false)
	if !strings.Contains(out.String(), "sweep loop-gnet 64 callers: A's not read") || !strings.Contains(out.String(), "hostname") || strings.Contains(out.String(), "B only: sweep loop-gnet 64 callers") {
		t.Fatalf("the comparison does not say A's measurement was not read:\n%s", out.String())
	}
}

// TestAsIs: a server measured as it is is compared step by step, with
// what its sweep said of it (the call's own time, the workers it behaves
// as) and its bystander's stalled connections; a run measured as it is
// and one measured with the protocol have nothing in common.
func TestAsIs(t *testing.T) {
	const dir = "../findings/testdata/asis-netty-run"
	c, err := Runs(dir, dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range c.Rows {
		for _, cell := range r.Cells {
			seen[r.Key+": "+cell.Metric] = true
		}
	}
	for _, want := range []string{"sweep shop 1 callers: GET /accounts/42/balance throughput", "sweep shop 1 callers: the call's own time (the load's p50 at 1 caller)",
		"sweep shop 1 callers: workers it behaves as (plateau x the call's time)", "sweep shop 16 callers: stalled connections", "sweep shop 4 callers: bystander p50 from due"} {
		if !seen[want] {
			t.Errorf("no %q among %v", want, seen)
		}
	}
	if _, err := Runs(dir, "../findings/testdata/node-run"); err == nil || !strings.Contains(err.Error(), "no measurement in common") {
		t.Errorf("as it is against the protocol: %v", err)
	}
}
