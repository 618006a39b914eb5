package prose

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
)

// realRun is a default run of ./run.sh kept by the report's tests.
const realRun = "../findings/testdata/run"

func TestTables(t *testing.T) {
	f, err := findings.Read(realRun)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	WriteTables(&sb, f)
	out := sb.String()
	for _, want := range []string{
		"/slow throughput against the ceiling (block 5ms, syscall mode", "loop-gnet", "workers", "callers",
		"Stalled connections", "12 of 12  12", "Blocking on the loop vs offloaded vs the pool",
		"taken apart", "The pools' cliff", "300 (150% of 200)", "Cost per request", "SATURATED", "grows without bound",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the tables lack %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Not measured") {
		t.Error("a complete run lists measurements as not measured")
	}
}

// TestTablesOfRepeats: repetitions give medians with [min-max].
func TestTablesOfRepeats(t *testing.T) {
	real, err := results.ReadRun(realRun)
	if err != nil {
		t.Fatal(err)
	}
	var ms []results.Measurement
	for rep := 1; rep <= 2; rep++ {
		for _, m := range real.Measurements {
			if m.Phase == "sweep" {
				m.Repeat = rep
				ms = append(ms, m)
			}
		}
	}
	real.Measurements = ms
	var sb strings.Builder
	WriteTables(&sb, findings.Compute(realRun, real))
	if !strings.Contains(sb.String(), "] ") && !strings.Contains(sb.String(), "]\n") {
		t.Fatalf("no [min-max] spread in:\n%s", sb.String())
	}
	if results.Median([]float64{3, 1, 2}) != 2 || results.Median([]float64{4, 1, 2, 3}) != 2.5 || results.Median(nil) != 0 {
		t.Fatal("Median")
	}
}

// TestTablesOnStage: a run given on stage says so once, above its tables;
// a run without the stage does not.
func TestTablesOnStage(t *testing.T) {
	run, err := results.ReadRun(realRun)
	if err != nil {
		t.Fatal(err)
	}
	var plain, staged strings.Builder
	WriteTables(&plain, findings.Compute(realRun, run))
	run.Params.Stage = true
	WriteTables(&staged, findings.Compute(realRun, run))
	if strings.Contains(plain.String(), findings.OnStage) {
		t.Error("a run without the stage says it was given on stage")
	}
	if n := strings.Count(staged.String(), findings.OnStage); n != 1 {
		t.Errorf("a run given on stage says so %d times, want once:\n%s", n, staged.String())
	}
}

// TestPublished: a default run's figures are set beside the published
// ones they correspond to, each with its share of its own ceiling; a run
// on other workers and blocks matches none and says why.
func TestPublished(t *testing.T) {
	f, err := findings.Read(realRun)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]FacePublished{}
	for _, r := range Published(f) {
		got[r.What+" | "+r.Server] = r
	}
	for key, want := range map[string][2]string{
		"stalled with 1 of 4 loops blocked | loop-gnet":             {"3 of 12", "3 of 12"},
		"stalled with 4 of 4 loops blocked | loop-gnet":             {"12 of 12", "12 of 12"},
		"/slow throughput, 5ms block | loop-gnet":                   {"", "549 req/s"},
		"/slow throughput at 300 callers, 100ms block | pool":       {"", "1,880 req/s"},
		"/async before its handler ran, every loop blocked (range)": {"", ""},
	} {
		r, ok := got[key]
		if strings.HasSuffix(key, "(range)") {
			r, ok = got[key+" | loop-gnet"]
		}
		if !ok {
			t.Errorf("no row %q in %v", key, got)
			continue
		}
		if want[0] != "" && r.This != want[0] || want[1] != "" && r.Published != want[1] {
			t.Errorf("%s: this %q published %q, want %q %q", key, r.This, r.Published, want[0], want[1])
		}
	}
	if r := got["/slow throughput, 5ms block | loop-gnet"]; r.PubShare != "69% of 800" || !strings.HasSuffix(r.ThisShare, "% of 800") || !strings.Contains(r.Differs, "callers") {
		t.Errorf("shares and differences: %+v", r)
	}
	var sb strings.Builder
	WriteTables(&sb, f)
	if !strings.Contains(sb.String(), "This run beside the published Netty-vs-Tomcat experiment") {
		t.Error("the tables lack the published comparison")
	}
	c, err := findings.Read("../findings/testdata/custom-run")
	if err != nil {
		t.Fatal(err)
	}
	if rows := Published(c); len(rows) != 0 {
		t.Errorf("a run on 3 loops, 40 slots and an 8ms block matched %v", rows)
	}
	sb.Reset()
	WriteTables(&sb, c)
	if !strings.Contains(sb.String(), PublishedNone) {
		t.Error("the tables do not say why nothing matched")
	}
}

// TestPublishedWithoutBaseline: a run given on stage measures k = 1 and up
// only; the stalled connections' wait is set beside the published one
// without the others' (k = 0's), never as "others: 0.0 ms".
func TestPublishedWithoutBaseline(t *testing.T) {
	run, err := results.ReadRun(realRun)
	if err != nil {
		t.Fatal(err)
	}
	run.Measurements = slices.DeleteFunc(run.Measurements, func(m results.Measurement) bool {
		return m.Phase == "stall" && strings.HasSuffix(m.ID, "-k0")
	})
	found := false
	for _, r := range Published(findings.Compute(realRun, run)) {
		if !strings.HasPrefix(r.What, "a stalled connection's wait") {
			continue
		}
		found = true
		if strings.Contains(r.This, "others") || !strings.HasSuffix(r.This, " ms") {
			t.Errorf("%s %s: %q, with no k = 0 measured", r.What, r.Server, r.This)
		}
	}
	if !found {
		t.Fatal("no stalled wait row")
	}
}

// TestHostileRunDir: a run directory is a stranger's input. A file it
// names outside itself, a device, a FIFO, or one over the cap is refused
// at once with the field and the reason, and the rest of the run is read.
func TestHostileRunDir(t *testing.T) {
	src, err := results.ReadRun(realRun)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The run's own files, copied.
	err = filepath.WalkDir(realRun, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(realRun, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	big, err := os.Create(filepath.Join(dir, "big.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(results.MaxFileBytes + 1); err != nil {
		t.Fatal(err)
	}
	big.Close()
	hostile := map[string]string{
		"../../../../../dev/zero": "outside",
		"/etc/passwd":             "absolute",
		"fifo.json":               "not a regular file",
		"big.json":                "over",
	}
	i := 0
	for name, why := range hostile {
		src.Measurements[i].LoadFile = name
		hostile[name] = src.Measurements[i].ID + "|" + why
		i++
	}
	b, _ := json.Marshal(src)
	if err := os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan *findings.Findings, 1)
	go func() {
		f, err := findings.Read(dir)
		if err != nil {
			t.Error(err)
		}
		done <- f
	}()
	var f *findings.Findings
	select {
	case f = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("reading the run directory hangs")
	}
	if f == nil {
		return
	}
	for name, want := range hostile {
		id, why, _ := strings.Cut(want, "|")
		found := false
		for _, g := range f.Groups {
			if g.Step.ID == id && strings.Contains(GroupWhy(g), why) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s named %q: not refused with %q", id, name, why)
		}
	}
	if len(f.Sweep) == 0 || !f.Sweep[len(f.Sweep)-1].Throughput.OK() {
		t.Error("the rest of the run was not read")
	}
	// A run.json over its cap is refused before it is read.
	if err := os.Truncate(filepath.Join(dir, "run.json"), results.MaxRunBytes+1); err != nil {
		t.Fatal(err)
	}
	if _, err := findings.Read(dir); err == nil || !strings.Contains(err.Error(), "over") {
		t.Errorf("a run.json over the cap: %v", err)
	}
}

// TestRefusedFileNamed: a file a run directory names but the kit refuses
// (outside the directory, a device, a FIFO) is named with its measurement
// and why, and its figures say "not read": never 0, never left out of the
// card, the tables, the published table, findings.json or the phases.
func TestRefusedFileNamed(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../findings/testdata/quick-run")); err != nil {
		t.Fatal(err)
	}
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	refused := map[string]string{ // id -> what it names
		"sweep-loop-gnet-c64":         "../../etc/hostname",
		"offload-loop-gnet-offloaded": "fifo.json",
	}
	for i, m := range run.Measurements {
		if name, ok := refused[m.ID]; ok {
			run.Measurements[i].LoadFile = name
		}
	}
	b, _ := json.Marshal(run)
	if err := os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := findings.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	for id, name := range refused {
		found := false
		for _, u := range f.Unread {
			if u.ID == id && u.File == name && u.Why != "" {
				found = true
			}
		}
		if !found {
			t.Errorf("%s naming %q is not listed as not read: %+v", id, name, f.Unread)
		}
	}
	var sb strings.Builder
	WriteTables(&sb, f)
	tables := sb.String()
	for _, want := range []string{"64       loop-gnet  not read", "hostname", "fifo.json"} {
		if !strings.Contains(tables, want) {
			t.Errorf("the tables lack %q:\n%s", want, tables)
		}
	}
	for _, ph := range f.Phases {
		if ph.Phase != "sweep" {
			continue
		}
		if ph.N != 6 || ph.OK != 5 || len(ph.Misses) != 1 || ph.Misses[0].Unread == nil || ph.Misses[0].Unread.File != "../../etc/hostname" {
			t.Errorf("the sweep's phase: %+v", ph)
		}
		if st, p := PhaseStatus(ph), PhaseProblems(ph); st != "5 of 6 measurements; the others below" || len(p) != 1 ||
			!strings.HasPrefix(p[0], `sweep-loop-gnet-c64: not read: its load_file "../../etc/hostname": `) {
			t.Errorf("the sweep's phase says %q %q", st, p)
		}
	}
	for _, p := range Published(f) {
		if p.Server == "loop-gnet" && strings.Contains(p.This, "req/s") && strings.HasPrefix(p.This, "0 ") {
			t.Errorf("published row %q for loop-gnet says %q", p.What, p.This)
		}
	}
	var pubSweep, pubFix bool
	for _, p := range Published(f) {
		if p.Server == "loop-gnet" && strings.Contains(p.This, "not read") {
			if strings.HasPrefix(p.What, "/slow throughput") {
				pubSweep = true
			}
			if strings.HasPrefix(p.What, "/offload throughput") {
				pubFix = true
			}
		}
	}
	if !pubSweep || !pubFix {
		t.Errorf("the published table does not say not read for loop-gnet's sweep (%v) and fix (%v): %+v", pubSweep, pubFix, Published(f))
	}
	h := Headline(f)
	card := false
	for _, s := range h.Servers {
		if s.Name == "loop-gnet" && strings.Contains(s.Throughput, "not read") {
			card = true
		}
	}
	if !card {
		t.Errorf("the card does not say loop-gnet's throughput was not read: %+v", h.Servers)
	}
	if js := string(FaceJSON(f)); !strings.Contains(js, `"not_read"`) || !strings.Contains(js, "hostname") {
		t.Errorf("findings.json does not name the refused files")
	}
}

// asIsSkipped is a server measured as it is that every phase after the
// sweep skipped, its step as the plan gives it: no block of its own (its
// call is its own), the slip's from the params.
func asIsSkipped(run *results.Run, phase string) results.Measurement {
	m := results.Measurement{Step: results.Step{ID: phase + "-shop", Phase: phase, Endpoint: "/slow", Conc: 64,
		Server: results.Server{Name: "shop", Kind: "other", External: true, Load: "GET /accounts/42/balance", Bystander: "GET /health"}}}
	m.Block, m.SlipBlock = run.Params.BlockOf(m.Step), run.Params.SlipBlockOf(m.Step)
	m.Repeat, m.Status, m.Reason = 1, "skipped", "it needs the protocol's /slow?block= to slow the call mid-window"
	return m
}

// TestTablesSkippedPhases: a phase every server skipped (a server measured
// as it is skips each that needs the protocol) has no table, as it has no
// section in the report: one line says which and why, and Not measured
// lists each measurement's reason.
func TestTablesSkippedPhases(t *testing.T) {
	dir := filepath.Join("..", "findings", "testdata", "asis-netty-run") // its stall phase skipped shop
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	run.Params.Phases = append(run.Params.Phases, "slip")
	run.Params.SlipBlock = results.Block(50 * time.Millisecond)
	run.Measurements = append(run.Measurements, asIsSkipped(run, "slip"))
	var sb strings.Builder
	WriteTables(&sb, findings.Compute(dir, run))
	out := sb.String()
	for _, not := range []string{"Stalled connections", "The bad afternoon", "skipped (see below)"} {
		if strings.Contains(out, not) {
			t.Errorf("a phase every server skipped has a table (%q):\n%s", not, out)
		}
	}
	for _, want := range []string{
		"\nNot in these tables: the stall and slip phases skip shop, measured as it is: each needs the protocol (Not measured, at the end, says why, measurement by measurement).\n",
		"\nNot measured:\n  stall-shop-k0 (rep 1): skipped: ", "\n  slip-shop (rep 1): skipped: it needs the protocol's /slow?block=",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the tables lack %q:\n%s", want, out)
		}
	}
}

// TestTablesSlipHeader: the bad afternoon's header says what the phase
// asked for, the params' blocks, even when its first server was measured
// as it is (its step asks for no block: its call is its own) and skipped.
func TestTablesSlipHeader(t *testing.T) {
	dir := filepath.Join("..", "findings", "testdata", "slip-run")
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	run.Measurements = append([]results.Measurement{asIsSkipped(run, "slip")}, run.Measurements...)
	var sb strings.Builder
	WriteTables(&sb, findings.Compute(dir, run))
	out := sb.String()
	if want := "\nThe bad afternoon: /slow at 64 callers asking for 5ms, then 50ms from halfway through each window"; !strings.Contains(out, want) {
		t.Errorf("the tables lack %q:\n%s", want, out)
	}
	if !regexp.MustCompile(`\nshop +skipped \(see below\)`).MatchString(out) {
		t.Errorf("a server one phase skipped, the others measured, has no row that says so:\n%s", out)
	}
}

// TestSkippedPhasesPlannedNone: a phase that planned nothing for servers
// measured as they are (the cliff: no declared pool) is said apart from
// those whose skips the list at the end explains: that list has no line
// for it, so "says why, measurement by measurement" would not hold of it.
func TestSkippedPhasesPlannedNone(t *testing.T) {
	skips := []findings.PhaseSkips{
		{Phase: "stall", Asked: true, Skipped: []findings.Skipped{{Server: "shop", Why: "it needs the protocol's /async and /slow", AsIs: true}}},
		{Phase: "cliff", Asked: true, Skipped: []findings.Skipped{{Server: "shop", AsIs: true}}},
	}
	got := strings.Join(SkippedPhases(skips, "Not measured says why"), "; ")
	want := "the stall phase skips shop, measured as it is: it needs the protocol (Not measured says why); the cliff phase planned no measurement of shop, for the same reason"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	got = strings.Join(SkippedPhases(skips[1:], "Not measured says why"), "; ")
	if want := "the cliff phase planned no measurement of shop, measured as it is: it needs the protocol"; got != want {
		t.Errorf("the cliff alone: got %q\nwant %q", got, want)
	}
}
