package experiment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/prose"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/wiretest"
)

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// TestMain removes the kit's programs once the tests are done: about
// 120 MB a run, left in the temporary directory before.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// kit builds the kit's programs into one directory, as run.sh does.
func kit(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "bystander-bin")
		if binErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir+"/", "./loopserver", "./poolserver", "./goserver", "./loadgen", "./prober", "./report", "./internal/cmd/experiment", "./internal/cmd/noisy")
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binDir
}

// TestTwoRunsOneSecond: two run.sh started in the same second, as real
// processes, each keep their results in a directory of their own (they
// shared results/<ts>, and one's files replaced the other's).
func TestTwoRunsOneSecond(t *testing.T) {
	kitBin := kit(t)
	root := t.TempDir()
	bin := filepath.Join(root, "bin") // results/ lands beside it
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"experiment", "loopserver", "poolserver", "loadgen", "prober"} {
		if err := os.Symlink(filepath.Join(kitBin, p), filepath.Join(bin, p)); err != nil {
			t.Fatal(err)
		}
	}
	said := regexp.MustCompile(`(?m)^results: (\S+)$`)
	for try := 1; ; try++ {
		// Both start 50 ms into a second: both name it.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 50*time.Millisecond)))
		var wg sync.WaitGroup
		outs := make([][]byte, 2)
		for i := range outs {
			wg.Go(func() {
				cmd := exec.Command(filepath.Join(bin, "experiment"), "--bin", bin, "--servers", "loop", "--phases", "sweep", "--conc", "4",
					"--duration", "500ms", "--warmup", "100ms")
				cmd.WaitDelay = time.Second
				b, err := cmd.CombinedOutput()
				if err != nil {
					t.Errorf("run %d: %v\n%s", i, err, b)
				}
				outs[i] = b
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		var dirs []string
		for i, b := range outs {
			m := said.FindSubmatch(b)
			if m == nil {
				t.Fatalf("run %d said no results directory:\n%s", i, b)
			}
			dirs = append(dirs, string(m[1]))
		}
		if strings.TrimSuffix(dirs[0], "-2") != strings.TrimSuffix(dirs[1], "-2") && try < 3 {
			t.Logf("the runs named two seconds (%q): again", dirs)
			continue
		}
		if dirs[0] == dirs[1] {
			t.Fatalf("two runs in one second shared %s", dirs[0])
		}
		pids := map[int]string{}
		for _, d := range dirs {
			run, err := results.ReadRun(d)
			if err != nil {
				t.Fatalf("%s: %v", d, err)
			}
			for _, p := range run.Processes {
				if other, ok := pids[p.PID]; ok {
					t.Errorf("%s and %s both list pid %d: one run's files replaced the other's", other, d, p.PID)
				}
				pids[p.PID] = d
			}
		}
		return
	}
}

// noOrphans checks that every process the run started has ended.
func noOrphans(t *testing.T, run *results.Run) {
	t.Helper()
	if len(run.Processes) == 0 {
		t.Fatal("run.json lists no processes")
	}
	for _, p := range run.Processes {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID))
		if err != nil {
			continue // gone
		}
		if !bytes.Contains(b, []byte(") Z ")) { // a zombie has ended
			t.Errorf("%s (pid %d) outlived the run", p.Name, p.PID)
		}
	}
}

// custom gives every parameter a caption or heading states a value
// other than its default.
func custom(o *Options) {
	o.Loops, o.Slots, o.Block, o.StallBlock, o.Delay = 3, 40, blk(8), blk(60), ms(7)
	o.ProbeInterval, o.Conc, o.TraceCallers, o.BlockMode = ms(30), []int{6}, 5, "sleep"
}

// defaultsStated finds a default value stated in text: the block, the
// stall block, loops, slots, the probe interval, the /async delay, the
// stall connections and the trace callers of a default run.
var defaultsStated = regexp.MustCompile(`(^|[^0-9.])(5 ?ms|100 ?ms|50 ?ms|4 (event )?loops|200[ -](slots?|threads?|workers?)|12 (/async )?connections|of 12\b|8 callers|syscall)`)

// TestQuickRun runs every phase, shortened, against the real binaries,
// with non-default values of every parameter the tables state: none of
// the defaults may appear in them.
func TestQuickRun(t *testing.T) {
	bin := kit(t)
	out := filepath.Join(t.TempDir(), "run")
	o := opts(t, func(o *Options) {
		quick(o)
		o.Duration, o.Warmup, o.Out, o.Bin = time.Second, ms(200), out, bin
		custom(o)
	})
	var stdout bytes.Buffer
	start := time.Now()
	code := runCode(context.Background(), o, &stdout, &stdout)
	t.Logf("quick run took %s", time.Since(start).Round(time.Second))
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stdout.String())
	}
	run, err := results.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	noOrphans(t, run)
	if run.Params.Stage {
		t.Error("a run without --stage says it was given on stage")
	}
	if run.Partial || run.Manifest.EndUnixNs <= run.Manifest.StartUnixNs || run.Manifest.GoVersion == "" || run.Manifest.Cores < 1 {
		t.Fatalf("manifest %+v partial %v", run.Manifest, run.Partial)
	}
	phases := map[string]int{}
	for _, m := range run.Measurements {
		if m.Status != "ok" {
			t.Errorf("%s: %s: %s", m.ID, m.Status, m.Reason)
			continue
		}
		phases[m.Phase]++
		files := []string{m.LoadFile, m.ProbeFile, m.PerConnFile, m.TraceFile}
		n := 0
		for _, f := range files {
			if f == "" {
				continue
			}
			n++
			r, err := results.Read(filepath.Join(out, f))
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			if r.Partial {
				t.Errorf("%s is partial: %s", f, r.PartialReason)
			}
		}
		if n == 0 {
			t.Errorf("%s produced no result file", m.ID)
		}
		if (m.Phase == "sweep" || m.Phase == "offload" || m.Phase == "cliff" || m.Phase == "stall") && (m.Use == nil || m.Use.Server == nil || m.Use.WindowNs <= 0) {
			t.Errorf("%s: /proc not read: %+v (notes %q)", m.ID, m.Use, m.Notes)
		}
	}
	f := findings.Compute(out, run)
	for _, r := range f.Cost {
		if r.Bound == nil || r.Bound.Case == 0 {
			t.Errorf("%s: no bound", r.ID)
		}
	}
	exactOrTooBusy(t, f)
	detectorMatches(t, f)
	for _, m := range run.Measurements {
		if m.Server.Kind == "loop" && (m.Phase == "sweep" || m.Phase == "stall") && m.LagFile == "" {
			t.Errorf("%s: the loop server's lag was not collected", m.ID)
		}
	}
	for _, p := range allPhases {
		if phases[p] == 0 {
			t.Errorf("phase %s measured nothing", p)
		}
	}
	slipHolds(t, f, map[string]string{"loop-gnet": "3 loops", "pool": "6 callers"})
	for _, want := range []string{"/slow throughput against the ceiling (block 8ms, sleep mode", "/fast bystander meanwhile", "a probe due every 30ms",
		"The bad afternoon: /slow at 6 callers asking for 8ms, then 80ms from halfway through each window", "before (0-1s)",
		"Stalled connections: 3 /async connections per loop (the kit's servers: 9)", "9 of 9", "Blocking on the loop vs offloaded vs the pool (6 callers, block 8ms)",
		"/async (delay 7ms) taken apart while 5 callers block on /slow (60ms)", "The pools' cliff: callers at shares of each pool's slots (a server with no pool: at the run's pool's), block 60ms", "60 (150% of 40)", "Cost per request", "results: " + out} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the terminal lacks %q", want)
		}
	}
	var sb strings.Builder
	prose.WriteTables(&sb, f)
	// The comparison with the published experiment states its conditions,
	// as the publication's: the rest may state none of the defaults.
	before, rest, _ := strings.Cut(sb.String(), "This run beside the published")
	published, after, _ := strings.Cut(rest, "\nCost per request")
	if !strings.Contains(published, "the published run: Netty on 4 event loops") || after == "" {
		t.Errorf("the published comparison does not say whose conditions it states, or the cost table is missing")
	}
	tables := before + after
	if m := defaultsStated.FindString(tables); m != "" {
		t.Errorf("the tables state a default the run did not use: %q in\n%s", m, sb.String())
	}
	if b, err := os.ReadFile(filepath.Join(out, "summary.txt")); err != nil || !bytes.Contains(b, []byte("Stalled connections")) {
		t.Errorf("summary.txt: %v", err)
	}
}

// slipHolds: every server's slip has both sides, each measured against
// the ceiling that binds it, what holds on any machine however busy: the
// blocks measured at least what was asked (slower after the step), and
// no side above its workers (or callers) / its measured block, but for
// the requests already in flight when the side began. binds names what
// each server's ceiling is (server name to "2 loops", "16 callers", ...).
func slipHolds(t *testing.T, f *findings.Findings, binds map[string]string) {
	t.Helper()
	if len(f.Slip) != len(binds) {
		t.Fatalf("%d slip rows, want %d", len(f.Slip), len(binds))
	}
	for _, r := range f.Slip {
		name := r.Step.Server.Name
		if b := prose.Workers(r.Workers, r.Binds); b != binds[name] || !r.Before.PerS.OK() || !r.After.PerS.OK() {
			t.Errorf("%s: binds %q (want %q), before %v after %v: %s", name, b, binds[name], r.Before.PerS, r.After.PerS, prose.SlipSentence(r))
			continue
		}
		t.Logf("%s", prose.SlipSentence(r))
		spans := []time.Duration{r.At, r.Step.Duration - time.Duration(r.AfterFrom.Median())}
		for i, h := range []findings.SlipHalf{r.Before, r.After} {
			mb := time.Duration(h.MeasuredBlock.Median())
			if mb < h.Block || (i == 1 && mb <= time.Duration(r.Before.MeasuredBlock.Median())) {
				t.Errorf("%s: side %d measured a block of %s for %s asked", name, i, mb, h.Block)
			}
			limit := findings.CeilingPerS(r.Workers, mb) + float64(r.Workers)/spans[i].Seconds()
			if h.PerS.Median() > limit {
				t.Errorf("%s: side %d at %.1f req/s, above %s / %s measured (%.1f with the requests in flight at its start)", name, i, h.PerS.Median(), prose.Workers(r.Workers, r.Binds), mb, limit)
			}
		}
	}
}

// exactOrTooBusy: every stall row is exact (3 stalled per blocked loop on
// a loop server, none on a pool) or says the machine was too busy to judge
// it, with why; none is silently wrong.
func exactOrTooBusy(t *testing.T, f *findings.Findings) {
	t.Helper()
	if len(f.Stall) == 0 {
		t.Fatal("no stall rows")
	}
	for _, r := range f.Stall {
		if r.Judged == 0 {
			switch {
			case len(r.Unjudged) > 0 && strings.Contains(r.Unjudged[0].Why, "machine too busy to judge"):
				t.Logf("%s: %s", r.Step.ID, prose.StallUnjudged(r.Unjudged[0]))
			case len(r.Unjudged) == 0 && !r.OK() && prose.GroupWhy(r.Group) != "":
				// Not measured (a measurement that failed on a machine this
				// busy), and the row says so: never a figure.
				t.Logf("%s: not measured: %s", r.Step.ID, prose.GroupWhy(r.Group))
			default:
				t.Errorf("%s: neither judged nor said why: %+v (why %q)", r.Step.ID, r.Unjudged, prose.GroupWhy(r.Group))
			}
			continue
		}
		want := 3 * r.Step.K
		if r.Step.Server.Kind == "pool" {
			want = 0
		}
		if !r.Match || r.Stalled.Median() != float64(want) || r.Expected.Median() != float64(want) {
			t.Errorf("%s: stalled %v, expected %v (match %v), want %d: %+v", r.Step.ID, r.Stalled, r.Expected, r.Match, want, r.Mismatch)
		}
	}
}

// TestStallBusyMachine: beside noisy neighbours (processes that run 2 ms
// and sleep 0.5 ms, as a browser or an IDE does) every stall row is exact
// or says the machine was too busy to judge it; the rows say how much of
// the machine others used, which must be most of it for the test to mean
// anything.
func TestStallBusyMachine(t *testing.T) {
	bin := kit(t)
	wiretest.Noisy(t, filepath.Join(bin, "noisy"), 4, 2*time.Minute)
	out := filepath.Join(t.TempDir(), "run")
	o := opts(t, func(o *Options) {
		quick(o)
		o.Phases, o.Servers, o.StallBlock, o.Out, o.Bin = []string{"stall"}, []string{"loop", "pool"}, blk(40), out, bin
	})
	var stdout bytes.Buffer
	if code := runCode(context.Background(), o, &stdout, &stdout); code != 0 {
		t.Fatalf("exit %d\n%s", code, stdout.String())
	}
	f, err := findings.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	exactOrTooBusy(t, f)
	var others findings.Figure
	for _, r := range f.Stall {
		others = append(others, r.MachineOthers...)
	}
	if others.Median() < 0.3 {
		t.Errorf("the noisy neighbours used %.0f%% of the machine: not busy enough to test anything", 100*others.Median())
	}
	if !strings.Contains(stdout.String(), "shared:") {
		t.Errorf("the stall rows do not say the machine was shared:\n%s", stdout.String())
	}
}

// detectorMatches: in every stall measurement of a loop server, the loops
// the server's own detector saw held in /slow are exactly the loops the
// blockers' requests were answered on (none for k=0).
func detectorMatches(t *testing.T, f *findings.Findings) {
	t.Helper()
	n := 0
	for _, r := range f.Stall {
		if r.Step.Server.Kind != "loop" {
			continue
		}
		n++
		if r.DetectorReps == 0 || !r.DetectorMatch || len(r.DetectorLoops) != r.Step.K {
			t.Errorf("%s: the detector saw %v blocked in /slow (%d repetitions read, match %v); the blockers' loops were %v",
				r.Step.ID, r.DetectorLoops, r.DetectorReps, r.DetectorMatch, r.BlockedLoops)
		}
		// Each blocked loop is named where it was held: the blocking call
		// of the run's block mode (syscall: nanosleep; sleep: block.For),
		// or, in sleep mode, where Go parks the loop's thread in the call
		// and only a hold whose stack was taken is judged, said held in
		// /slow and not judged.
		for _, l := range r.DetectorLoops {
			named := slices.ContainsFunc(r.Culprits, func(c culprit.Record) bool { return c.Loop == l })
			if !named && !(slices.Contains(r.NotJudged, l) && f.Params.BlockMode != "syscall") {
				t.Errorf("%s: loop %d held in /slow, neither named nor said not judged: %+v (not judged %v)", r.Step.ID, l, r.Culprits, r.NotJudged)
			}
		}
		if len(r.Culprits) > r.Step.K {
			t.Errorf("%s: %d loops named where held, want %d at most: %+v", r.Step.ID, len(r.Culprits), r.Step.K, r.Culprits)
		}
		for _, c := range r.Culprits {
			fn := c.Culprit().Function
			if !(strings.HasSuffix(fn, "internal/block.nanosleep") && c.State == "syscall" || strings.HasSuffix(fn, "internal/block.For") && c.State == "sleep") {
				t.Errorf("%s: %s, want held in the blocking call (block.nanosleep in syscall, or block.For in sleep)", r.Step.ID, c.Words())
			}
		}
	}
	if n == 0 {
		t.Error("no stall measurement of a loop server")
	}
}

// TestStallDetectorEvio: the same for evio, whose loops take connections
// by least connections and its heartbeat by a wake.
func TestStallDetectorEvio(t *testing.T) {
	bin := kit(t)
	out := filepath.Join(t.TempDir(), "run")
	o := opts(t, func(o *Options) {
		quick(o)
		o.Phases, o.Servers, o.Engines, o.Out, o.Bin = []string{"stall"}, []string{"loop"}, []string{"evio"}, out, bin
	})
	var stdout bytes.Buffer
	if code := runCode(context.Background(), o, &stdout, &stdout); code != 0 {
		t.Fatalf("exit %d\n%s", code, stdout.String())
	}
	f, err := findings.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	detectorMatches(t, f)
	if !strings.Contains(stdout.String(), "(the blockers' loops)") || !strings.Contains(stdout.String(), "held in syscall at block.nanosleep (block/block.go:") {
		t.Errorf("the stall table does not give the detector's loops, and where they were held:\n%s", stdout.String())
	}
}

// TestInterrupted: SIGINT to the orchestrator mid-run, Ctrl-C at a
// terminal (SIGINT to its whole process group, the servers too) or
// SIGTERM keeps what was measured, marks the run partial, says the
// measurement under way was interrupted (not that its server died), exits
// as a shell reports the signal, and leaves no process behind.
func TestInterrupted(t *testing.T) {
	bin := kit(t)
	for _, tc := range []struct {
		name  string
		sig   syscall.Signal
		group bool
		code  int
	}{{"SIGINT", syscall.SIGINT, false, 130}, {"Ctrl-C", syscall.SIGINT, true, 130}, {"SIGTERM", syscall.SIGTERM, false, 143}} {
		t.Run(tc.name, func(t *testing.T) { interrupted(t, bin, tc.sig, tc.group, tc.code) })
	}
}

func interrupted(t *testing.T, bin string, sig syscall.Signal, group bool, code int) {
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(filepath.Join(bin, "experiment"), "--bin", bin, "--quick", "--conc", "8", "--out", out)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt once the first measurement is in. Meanwhile run.json says
	// the run is unfinished, as it would stay if the orchestrator were
	// killed outright.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if run, err := results.ReadRun(out); err == nil && run.Measurements[0].Status == "ok" {
			if !run.Partial || !strings.Contains(run.PartialReason, "unfinished") {
				t.Errorf("run.json of a run under way: partial %v %q", run.Partial, run.PartialReason)
			}
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no measurement finished within 30 s\n%s", stdout.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(700 * time.Millisecond) // into the second measurement
	if group {
		_ = syscall.Kill(-cmd.Process.Pid, sig)
	} else {
		_ = cmd.Process.Signal(sig)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("still running 15 s after SIGINT\n%s", stdout.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != code {
		t.Fatalf("exit %v, want %d\n%s", err, code, stdout.String())
	}
	run, err := results.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	noOrphans(t, run)
	if !run.Partial || !strings.Contains(stdout.String(), "PARTIAL RUN") {
		t.Fatalf("partial %v\n%s", run.Partial, stdout.String())
	}
	first := run.Measurements[0]
	if first.Status != "ok" || first.LoadFile == "" {
		t.Fatalf("the finished measurement was not kept: %+v", first)
	}
	if _, err := results.Read(filepath.Join(out, first.LoadFile)); err != nil {
		t.Fatal(err)
	}
	for _, m := range run.Measurements {
		if m.Status == "failed" && (!strings.Contains(m.Reason, "interrupted") || strings.Contains(m.Reason, "died") || strings.Contains(m.Reason, "<nil>")) {
			t.Errorf("%s: %s", m.ID, m.Reason)
		}
	}
	last := run.Measurements[len(run.Measurements)-1]
	if last.Status != "skipped" {
		t.Fatalf("the last measurement is %s, want skipped", last.Status)
	}
}

// TestPinned: --pin puts servers and generators on disjoint CPU sets and
// checks every thread; with fewer than 2 CPUs it refuses.
func TestPinned(t *testing.T) {
	if _, _, err := cpuSets(1); err == nil {
		t.Error("--pin accepted 1 CPU")
	}
	if s, g, err := cpuSets(4); err != nil || s != "0-1" || g != "2-3" {
		t.Errorf("4 CPUs: %q %q %v", s, g, err)
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Skip("no taskset")
	}
	if runtime.NumCPU() < 2 {
		t.Skip("fewer than 2 CPUs")
	}
	bin := kit(t)
	out := filepath.Join(t.TempDir(), "run")
	o := opts(t, func(o *Options) {
		quick(o)
		o.Phases, o.Servers, o.Conc, o.Pin, o.Out, o.Bin = []string{"sweep"}, []string{"loop"}, []int{4}, true, out, bin
	})
	var stdout bytes.Buffer
	if code := runCode(context.Background(), o, &stdout, &stdout); code != 0 {
		t.Fatalf("exit %d\n%s", code, stdout.String())
	}
	if !strings.Contains(stdout.String(), "pinned: servers on CPUs") {
		t.Errorf("the plan does not say it pins:\n%s", stdout.String())
	}
	run, _ := results.ReadRun(out)
	if !run.Params.Pin || run.Measurements[0].Status != "ok" {
		t.Fatalf("%+v", run.Measurements[0])
	}
}

// TestServerDies: a server that dies mid-measurement is reported with the
// tail of its stderr, the run goes on to the next measurement, and nothing
// is left running.
func TestServerDies(t *testing.T) {
	real := kit(t)
	bin := t.TempDir()
	for _, name := range []string{"poolserver", "loadgen", "prober"} {
		if err := os.Symlink(filepath.Join(real, name), filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	// A loop server that says something on stderr and is killed 1 s in.
	script := "#!/bin/sh\necho 'loopserver: about to be killed by the test' >&2\n(sleep 1; kill -9 $$) &\nexec " + filepath.Join(real, "loopserver") + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "loopserver"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	o := opts(t, func(o *Options) {
		quick(o)
		o.Phases, o.Conc, o.Duration, o.Out, o.Bin = []string{"sweep"}, []int{4}, 2*time.Second, out, bin
	})
	var stdout bytes.Buffer
	if code := runCode(context.Background(), o, &stdout, &stdout); code != 1 {
		t.Fatalf("exit %d, want 1: a measurement failed, and the run went on\n%s", code, stdout.String())
	}
	run, err := results.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	noOrphans(t, run)
	loop, pool := run.Measurements[0], run.Measurements[1]
	if loop.Status != "failed" || !strings.Contains(loop.Reason, "died") || !strings.Contains(loop.Reason, "about to be killed") || loop.Cost != nil {
		t.Fatalf("loop measurement: %s: %s (cost %v)", loop.Status, loop.Reason, loop.Cost)
	}
	if pool.Status != "ok" {
		t.Fatalf("the run did not go on: pool %s: %s", pool.Status, pool.Reason)
	}
	if !strings.Contains(stdout.String(), "Not measured") || !strings.Contains(stdout.String(), "failed (see below)") {
		t.Fatalf("the summary does not say what failed:\n%s", stdout.String())
	}
}

// TestStallStarvedServer: a server that gets next to no CPU (the kit's loop
// server at nice 19 beside 12 noisy neighbours, measured as a --target with
// its pid) makes its free connections wait as long as held ones: every
// stall row is exact or says the machine was too busy to judge, with the
// wake-up waits that decided it. Before the rule read its threads'
// run-queue waits it said 12 of 12 stalled at k = 0.
func TestStallStarvedServer(t *testing.T) {
	bin := kit(t)
	addr := wiretest.FreeAddr(t)
	// Two loops: k = 0, 1, 2 starve as four would, in three steps of five.
	server := wiretest.Start(t, "nice", "-n", "19", filepath.Join(bin, "loopserver"), "--addr", addr, "--admin", "", "--block-warn", "0", "--loops", "2")
	wiretest.Noisy(t, filepath.Join(bin, "noisy"), 12, 3*time.Minute)
	time.Sleep(time.Second) // the neighbours at work
	out := filepath.Join(t.TempDir(), "run")
	o := opts(t, func(o *Options) {
		quick(o)
		o.Phases, o.Servers, o.StallBlock, o.Out, o.Bin = []string{"stall"}, nil, blk(40), out, bin
		o.Targets = []Target{{Name: "starved", URL: "http://" + addr, Loops: 2, PID: server.Process.Pid}}
	})
	var stdout bytes.Buffer
	runCode(context.Background(), o, &stdout, &stdout)
	f, err := findings.Read(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	exactOrTooBusy(t, f)
	starved := 0
	for _, r := range f.Stall {
		for _, u := range r.Unjudged {
			if strings.Contains(u.Why, "did not get a CPU") {
				starved++
			}
		}
	}
	if starved == 0 {
		t.Errorf("no row says the server did not get a CPU: the test did not starve it\n%s", stdout.String())
	}
}

// runCode runs the experiment as the command does: Run, then the status
// and the lines Exit writes.
func runCode(ctx context.Context, o Options, stdout, stderr io.Writer) int {
	return Exit(Run(ctx, o, stdout, stderr), stderr)
}
