package experiment

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

func ids(p Plan) []string {
	var out []string
	for _, s := range p.Steps {
		out = append(out, s.ID)
	}
	return out
}

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(o *Options)
		want []string
	}{
		{"sweep only", func(o *Options) { o.Phases, o.Conc = []string{"sweep"}, []int{4, 16} },
			[]string{"sweep-loop-gnet-c4", "sweep-pool-c4", "sweep-loop-gnet-c16", "sweep-pool-c16"}},
		{"both engines", func(o *Options) {
			o.Phases, o.Conc, o.Engines, o.Servers = []string{"sweep"}, []int{8}, []string{"gnet", "evio"}, []string{"loop"}
		}, []string{"sweep-loop-gnet-c8", "sweep-loop-evio-c8"}},
		{"stall", func(o *Options) { o.Phases = []string{"stall"} },
			[]string{"stall-loop-gnet-k0", "stall-loop-gnet-k1", "stall-loop-gnet-k2", "stall-loop-gnet-k3", "stall-loop-gnet-k4", "stall-pool-k0", "stall-pool-k4"}},
		{"offload at the highest concurrency", func(o *Options) { o.Phases, o.Conc = []string{"offload"}, []int{16, 64, 4} },
			[]string{"offload-loop-gnet-blocking", "offload-loop-gnet-offloaded", "offload-pool-pool"}},
		{"the published experiment's servers, in the catalogue's order", func(o *Options) {
			o.Phases, o.Conc, o.Servers = []string{"sweep", "offload"}, []int{8}, []string{"tomcat", "netty", "pool"}
		}, []string{"sweep-pool-c8", "sweep-netty-c8", "sweep-tomcat-c8", "offload-pool-pool", "offload-netty-blocking", "offload-netty-offloaded", "offload-tomcat-pool"}},
		{"trace and cliff", func(o *Options) { o.Phases = []string{"trace", "cliff"} },
			[]string{"trace-loop-gnet", "trace-pool", "cliff-pool-64pct", "cliff-pool-100pct", "cliff-pool-150pct"}},
		{"no pool, no cliff", func(o *Options) { o.Phases, o.Servers, o.Conc = []string{"cliff", "sweep"}, []string{"loop"}, []int{4} },
			[]string{"sweep-loop-gnet-c4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts(t, tc.edit)
			if got := ids(BuildPlan(o)); !slices.Equal(got, tc.want) {
				t.Fatalf("steps %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestPlanDetails(t *testing.T) {
	o := opts(t, func(o *Options) { o.Block, o.Conc = blk(5), []int{4, 16, 64} })
	p := BuildPlan(o)
	if wd, _ := os.Getwd(); o.Out != filepath.Join(filepath.Dir(wd), "experiment", "results", "20261130T080000Z") && o.Out != filepath.Join(wd, "results", "20261130T080000Z") {
		t.Errorf("default out %q: want results/20261130T080000Z beside the bin directory", o.Out)
	}
	for _, s := range p.Steps {
		wantBlock := 5 * time.Millisecond
		if s.Phase == "stall" || s.Phase == "trace" || s.Phase == "cliff" {
			wantBlock = 100 * time.Millisecond
		}
		if s.Block.D() != wantBlock {
			t.Errorf("%s: block %s, want %s", s.ID, s.Block.D(), wantBlock)
		}
		switch {
		case (s.Phase == "offload" || s.Phase == "slip") && s.Conc != 64:
			t.Errorf("%s at %d callers, want the highest (64)", s.ID, s.Conc)
		// The slip: halfway, each side as long as the stall's (1.25 s, on
		// a 100 ms tick) or, on the loops, as the queue of 16 callers a
		// loop of slowed calls can take to drain (0.8 s), and 0.8 s more.
		case s.ID == "slip-loop-gnet" && (s.SlipBlock.D() != 50*time.Millisecond || s.Duration != 3200*time.Millisecond || s.SlipAtNs != int64(1600*time.Millisecond)):
			t.Errorf("%s: slows to %s at %s of %s; want 50ms (10x the block) at 1.6s of 3.2s", s.ID, s.SlipBlock.D(), time.Duration(s.SlipAtNs), s.Duration)
		case s.ID == "slip-pool" && (s.Duration != 2600*time.Millisecond || s.SlipAtNs != int64(1300*time.Millisecond)):
			t.Errorf("%s: slows at %s of %s; want 1.3s of 2.6s", s.ID, time.Duration(s.SlipAtNs), s.Duration)
		case s.ID == "cliff-pool-150pct" && s.Conc != 300:
			t.Errorf("cliff at 150%% has %d callers, want 300", s.Conc)
		case s.Server.Kind == "loop" && s.Server.Workers != 4, s.Server.Kind == "pool" && s.Server.Workers != 200:
			t.Errorf("%s: %d workers", s.ID, s.Server.Workers)
		}
	}
	// The default run must fit in 2 minutes on this machine.
	if d := p.Expected(); d > 2*time.Minute {
		t.Errorf("default plan expects %s, over 2 minutes", d)
	}
	var sb strings.Builder
	p.Describe(&sb)
	for _, want := range []string{"sweep", "stall", "offload", "trace", "cliff", "slip", "expected", "then 50ms from halfway"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("plan description lacks %q:\n%s", want, sb.String())
		}
	}
	// Other loops and slots shape the stall, trace and cliff phases.
	c := opts(t, func(o *Options) { o.Loops, o.Slots = 3, 40 })
	var ks, cliff []int
	for _, s := range BuildPlan(c).Steps {
		switch {
		case s.Phase == "stall" && s.Server.Kind == "loop":
			ks = append(ks, s.K)
		case s.Phase == "cliff":
			cliff = append(cliff, s.Conc)
		case s.Phase == "trace" && s.Conc != 6:
			t.Errorf("%s: %d trace callers, want 2 per loop", s.ID, s.Conc)
		}
	}
	if !slices.Equal(ks, []int{0, 1, 2, 3}) || !slices.Equal(cliff, []int{25, 40, 60}) {
		t.Errorf("3 loops, 40 slots: stall k %v, cliff callers %v", ks, cliff)
	}
}

// TestStepIDsUnique: every step of every server, the kit's and targets of
// each kind beside them, has its own id, so no two measurements share a
// file or a row (a pool-kind target beside the pool once shared
// "offload-pool").
func TestStepIDsUnique(t *testing.T) {
	o := opts(t, func(o *Options) {
		o.Servers, o.Engines = []string{"loop", "pool", "netty", "tomcat"}, []string{"gnet", "evio"}
		o.Targets = []Target{{Name: "mypool", URL: "http://127.0.0.1:1", Workers: 50}, {Name: "myloop", URL: "http://127.0.0.1:2", Loops: 2},
			{Name: "other", URL: "http://127.0.0.1:3"}}
	})
	for i := range o.Targets { // as resolve would
		tg := &o.Targets[i]
		tg.Server = Server{Name: tg.Name, External: true, Kind: "other"}
		switch {
		case tg.Workers > 0:
			tg.Server.Kind, tg.Server.Workers = "pool", tg.Workers
		case tg.Loops > 0:
			tg.Server.Kind, tg.Server.Workers = "loop", tg.Loops
		}
	}
	seen := map[string]bool{}
	servers := map[string]map[string]bool{}
	for _, s := range BuildPlan(o).Steps {
		if seen[s.ID] {
			t.Errorf("step id %s twice", s.ID)
		}
		seen[s.ID] = true
		if !strings.Contains(s.ID, "-"+s.Server.Name+"-") && !strings.HasSuffix(s.ID, "-"+s.Server.Name) {
			t.Errorf("step id %s does not name its server %s", s.ID, s.Server.Name)
		}
		if servers[s.Phase] == nil {
			servers[s.Phase] = map[string]bool{}
		}
		servers[s.Phase][s.Server.Name] = true
	}
	if len(servers["offload"]) != 8 || len(servers["cliff"]) != 3 {
		t.Errorf("offload measures %v, cliff %v", servers["offload"], servers["cliff"])
	}
}

// TestPrepareOut: --out must be new or empty, so that no earlier run's
// files mix with this one's; --overwrite clears an earlier run directory,
// and nothing that is not one.
func TestPrepareOut(t *testing.T) {
	dir := t.TempDir()
	if err := prepareOut(filepath.Join(dir, "new"), false); err != nil {
		t.Fatalf("a new directory: %v", err)
	}
	if err := prepareOut(filepath.Join(dir, "new"), false); err != nil {
		t.Fatalf("an empty directory: %v", err)
	}
	// An earlier run of the kit's: a real run directory with the files the
	// kit writes beside its results.
	old := filepath.Join(dir, "old")
	if err := os.CopyFS(old, os.DirFS("../findings/testdata/quick-run")); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(filepath.Join(old, "findings.golden.json")) // the tests' own, not the kit's
	_ = os.Remove(filepath.Join(old, "tables.golden"))
	for _, f := range []string{"summary.txt", "findings.json", "report.html", "stage.ndjson", "sweep/sweep-pool-c4.ready", "stall/stall-pool-k4.live-perconn.ndjson"} {
		_ = os.WriteFile(filepath.Join(old, f), []byte("{}"), 0o644)
	}
	if err := prepareOut(old, false); err == nil || !strings.Contains(err.Error(), "--overwrite") {
		t.Fatalf("an earlier run's directory: %v", err)
	}
	if err := prepareOut(old, true); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(old); len(left) != 0 {
		t.Fatalf("--overwrite left %d entries", len(left))
	}
	// A run.json that is not the kit's, or a run beside what is not a
	// run's: refused with one line, and nothing removed.
	for name, fill := range map[string]func(string){
		"an empty run.json":    func(d string) { _ = os.WriteFile(filepath.Join(d, "run.json"), []byte("{}"), 0o644) },
		"a run beside others'": func(d string) { _ = os.CopyFS(d, os.DirFS("../findings/testdata/quick-run")) },
		"a run with a stranger in a phase": func(d string) {
			_ = os.CopyFS(d, os.DirFS("../findings/testdata/quick-run"))
			_ = os.WriteFile(filepath.Join(d, "sweep", "notes.txt"), []byte("mine"), 0o644)
		},
	} {
		d := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		_ = os.MkdirAll(filepath.Join(d, "mydata"), 0o755)
		_ = os.WriteFile(filepath.Join(d, "precious.txt"), []byte("mine"), 0o644)
		_ = os.WriteFile(filepath.Join(d, "mydata", "x"), []byte("mine"), 0o644)
		if name == "a run with a stranger in a phase" {
			_ = os.RemoveAll(filepath.Join(d, "mydata"))
			_ = os.Remove(filepath.Join(d, "precious.txt"))
		}
		fill(d)
		before := tree(t, d)
		err := prepareOut(d, true)
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: --overwrite said %v", name, err)
		}
		if after := tree(t, d); !slices.Equal(before, after) {
			t.Errorf("%s: --overwrite removed %d paths, %v first", name, len(diffList(before, after)), diffList(before, after)[:1])
		}
	}
	other := filepath.Join(dir, "other")
	_ = os.MkdirAll(other, 0o755)
	_ = os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644)
	if err := prepareOut(other, true); err == nil {
		t.Fatal("--overwrite cleared a directory that holds no run")
	}
	if _, err := os.Stat(filepath.Join(other, "notes.txt")); err != nil {
		t.Fatal("a file that is not a run's was removed")
	}
	file := filepath.Join(dir, "file")
	_ = os.WriteFile(file, nil, 0o644)
	if err := prepareOut(file, false); err == nil {
		t.Fatal("a file as --out")
	}
}

// TestResultsDirPerRun: runs started in the same second (one clock) each
// get a results directory of their own, made exclusively: results/<ts>,
// then <ts>-2, <ts>-3 (two run.sh in one second shared one, and one's files
// replaced the other's). At once too. An --out given keeps its rules.
func TestResultsDirPerRun(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "bin")
	base := filepath.Join(filepath.Dir(bin), "results", now.UTC().Format("20060102T150405Z"))
	var got []string
	for i := range 3 {
		o := opts(t, func(o *Options) { o.Bin = bin })
		d, err := newOutDir(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d.path, "run.json"), []byte(strconv.Itoa(i)), 0o644); err != nil {
			t.Fatal(err)
		}
		got = append(got, d.path)
	}
	if want := []string{base, base + "-2", base + "-3"}; !slices.Equal(got, want) {
		t.Fatalf("three runs in one second got %q, want %q", got, want)
	}
	for i, d := range got {
		if b, _ := os.ReadFile(filepath.Join(d, "run.json")); string(b) != strconv.Itoa(i) {
			t.Errorf("%s holds run %q, want run %d's", d, b, i)
		}
	}
	// Eight at once: eight directories, none shared.
	o := opts(t, func(o *Options) { o.Bin, o.Out, o.OutFresh = bin, DefaultOut(bin, now.Add(time.Second)), true })
	paths := make([]string, 8)
	var wg sync.WaitGroup
	for i := range paths {
		wg.Go(func() {
			if d, err := newOutDir(o); err != nil {
				t.Error(err)
			} else {
				paths[i] = d.path
			}
		})
	}
	wg.Wait()
	slices.Sort(paths)
	if n := len(slices.Compact(slices.Clone(paths))); n != len(paths) {
		t.Errorf("8 runs at once got %d directories: %q", n, paths)
	}
	// An --out given: a new or empty directory, as it is (TestPrepareOut).
	given := filepath.Join(t.TempDir(), "given")
	if err := os.Mkdir(given, 0o755); err != nil {
		t.Fatal(err)
	}
	o = opts(t, func(o *Options) { o.Bin, o.Out = bin, given })
	if d, err := newOutDir(o); err != nil || d.path != given {
		t.Errorf("--out %s (empty): %v, %v", given, d, err)
	}
}

// TestUnfinished: run.json is written as unfinished until the run ends.
func TestUnfinished(t *testing.T) {
	o := opts(t, func(o *Options) { o.Phases = []string{"sweep"} })
	if r := newRun(BuildPlan(o), now); !r.Partial || !strings.Contains(r.PartialReason, "unfinished") {
		t.Fatalf("a new run.json: partial %v %q", r.Partial, r.PartialReason)
	}
}

// TestSweepEndpoint: --sweep-endpoint=/offload loads the fix in the sweep
// (with the same step IDs, so report --compare matches them to a /slow
// run's) and nothing else changes.
func TestSweepEndpoint(t *testing.T) {
	o := opts(t, func(o *Options) { o.SweepEndpoint = "/offload" })
	slow := opts(t, nil)
	a, b := BuildPlan(slow), BuildPlan(o)
	if len(a.Steps) != len(b.Steps) {
		t.Fatalf("%d steps against %d", len(b.Steps), len(a.Steps))
	}
	for i, s := range b.Steps {
		want := a.Steps[i].Endpoint
		if s.Phase == "sweep" {
			want = "/offload"
		}
		if s.ID != a.Steps[i].ID || s.Endpoint != want {
			t.Errorf("%s %s, want %s %s", s.ID, s.Endpoint, a.Steps[i].ID, want)
		}
	}
	if _, err := tryOpts(func(o *Options) { o.SweepEndpoint = "/fast" }); err == nil {
		t.Error("--sweep-endpoint /fast accepted")
	}
}

// tree lists every path under dir.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func diffList(before, after []string) []string {
	var gone []string
	for _, p := range before {
		if !slices.Contains(after, p) {
			gone = append(gone, p)
		}
	}
	return gone
}

// TestSlotsTheCliffCanDrive: --slots is bounded by what the cliff can
// drive (its largest share of the slots in callers, each a connection of
// one load generator); the bound is said.
func TestSlotsTheCliffCanDrive(t *testing.T) {
	if _, err := tryOpts(func(o *Options) { o.Slots = 6666 }); err != nil {
		t.Errorf("--slots=6666: %v", err)
	}
	_, err := tryOpts(func(o *Options) { o.Slots = 6667 })
	if err == nil || !strings.Contains(err.Error(), "6666") || !strings.Contains(err.Error(), "cliff") {
		t.Errorf("--slots=6667: %v", err)
	}
}

// TestToolsBounded: the commands the run asks for its manifest (git, go)
// are waited for within a bound, also when a child of theirs keeps their
// output open after they answered.
func TestToolsBounded(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"git", "go"} {
		script := "#!/bin/sh\nsleep 20 &\necho $! >> " + filepath.Join(dir, "children") + "\necho answer\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { // the children the test's own scripts left
		b, _ := os.ReadFile(filepath.Join(dir, "children"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}()
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	began := time.Now()
	c, v := gitCommit(), goVersion()
	if took := time.Since(began); took > 10*time.Second { // 60 s before: 20 s each
		t.Errorf("git and go answered at once, their children held their output: waited %s (%q, %q)", took, c, v)
	}
}

// TestCallTimeout: every loadgen the run starts waits for its calls longer
// than they are asked to hold (--stall-block up to 10 s, the slip's slower
// call), so a call answered late is an answer, not a timeout.
func TestCallTimeout(t *testing.T) {
	for _, blocks := range [][]time.Duration{{5 * time.Millisecond}, {10 * time.Second}, {100 * time.Millisecond, 10 * time.Second}, {}} {
		d, err := time.ParseDuration(callTimeout(blocks...))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			if d < b+5*time.Second {
				t.Errorf("callTimeout(%v) = %s: not well past the block %s", blocks, d, b)
			}
		}
		if d < 10*time.Second {
			t.Errorf("callTimeout(%v) = %s: under loadgen's own default", blocks, d)
		}
	}
}
