package findings

import (
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/hist"
	"github.com/bystander-kit/bystander/internal/results"
)

// load is a closed-loop load result: throughput, mean latency and mean
// measured block.
func load(tput float64, meanLatency, block time.Duration) *results.Result {
	h := hist.New()
	h.Record(meanLatency)
	return &results.Result{Mode: "closed", Env: results.Env{NumCPU: 2}, Load: &results.Load{
		ThroughputPerS: tput, Latency: h.Summary(), MeanBlockedNs: float64(block), BlockedSamples: 100}}
}

func cost(server, gen, machine float64) *results.ServerCost {
	return &results.ServerCost{ServerCores: server, GeneratorCores: gen, MachineCores: machine, Cores: 2, ServerCPUUsPerRequest: 20}
}

// TestBoundOf: the rule that says what bounds a row, from the measured
// ceilings and the measured use of the machine.
func TestBoundOf(t *testing.T) {
	loop := results.Server{Name: "loop-gnet", Kind: "loop", Workers: 4}
	pool := results.Server{Name: "pool", Kind: "pool", Workers: 200}
	other := results.Server{Name: "mine", Kind: "other", External: true}
	node := results.Server{Name: "node", Kind: "loop", Workers: 1, External: true, OffloadWorkers: 32}
	notMeasured := func(c *results.ServerCost) *results.ServerCost { c.ServerNotMeasured = true; return c }
	ms5 := 5 * time.Millisecond
	// --block-mode postgres: each server's 10 database connections.
	dbPool, dbLoop, dbGo := pool, loop, results.Server{Name: "nethttp", Kind: "goroutine", DBConns: 10}
	dbPool.DBConns, dbLoop.DBConns = 10, 10
	for _, tc := range []struct {
		name    string
		step    results.Step
		lr      *results.Result
		c       *results.ServerCost
		kind    string
		share   float64 // 0: not checked
		flagged bool
		little  bool // Little's law holds
		notes   []string
		text    string
	}{
		{"loops at their ceiling", results.Step{Server: loop, Conc: 64}, load(780, 82*time.Millisecond, 5100*time.Microsecond), cost(0.1, 0.05, 0.2),
			"workers", 0.995, false, true, nil, "4 loops / 5.1ms measured block = 784 req/s"},
		{"pool bound by its callers", results.Step{Server: pool, Conc: 64}, load(12000, 5330*time.Microsecond, ms5), cost(0.7, 0.4, 1.2),
			"callers", 0.9375, false, true, nil, "64 callers / 5ms measured block"},
		{"no ceiling near: the server's own time", results.Step{Server: pool, Conc: 64, Variant: "offloaded", Endpoint: "/offload"}, load(10000, 6400*time.Microsecond, ms5),
			cost(0.3, 0.1, 0.45), "none", 0, false, true, nil, "a request took 6.4ms on average against the 5ms block"},
		{"no ceiling near: the client's turnaround", results.Step{Server: pool, Conc: 64}, load(10000, ms5, ms5), cost(0.3, 0.1, 0.45),
			"none", 0, false, false, []string{"Little's law off by 21."}, "the callers spent 22% of the window between requests"},
		{"Little's law off the other way: more in flight than callers", results.Step{Server: pool, Conc: 64}, load(12000, 6*time.Millisecond, ms5), cost(0.7, 0.4, 1.2),
			"callers", 0, false, false, []string{"Little's law off by 12.5%: throughput x mean latency / callers = 1.125, more requests in flight than callers"}, "64 callers / 5ms"},
		{"CPU: the kit uses the machine", results.Step{Server: pool, Conc: 256}, load(25000, 10240*time.Microsecond, ms5), cost(1.3, 0.6, 1.95),
			"cpu", 0, false, true, nil, "the kit's processes use 1.90 of 2 cores"},
		{"the generator: not the server's figure", results.Step{Server: pool, Conc: 256}, load(25000, 10240*time.Microsecond, ms5), cost(0.8, 1.0, 1.95),
			"generator", 0, true, true, nil, "not the server's figure"},
		{"a compiler beside it is not the server's CPU", results.Step{Server: pool, Conc: 64, Variant: "offloaded"}, load(6000, 10666*time.Microsecond, ms5),
			cost(0.12, 0.1, 1.98), "none", 0, false, true, []string{"machine shared: 88% used by other processes"}, "other processes using 1.76 of the machine's 2 cores"},
		{"shared machine, still at the workers' ceiling", results.Step{Server: loop, Conc: 16}, load(780, 20512*time.Microsecond, 5100*time.Microsecond),
			cost(0.1, 0.05, 1.5), "workers", 0, false, true, []string{"machine shared: 68% used"}, "workers"},
		{"callers dealt to 3 of 4 loops", results.Step{Server: loop, Conc: 4}, func() *results.Result {
			r := load(574, 6970*time.Microsecond, 5100*time.Microsecond)
			r.Load.ConnsPerLoop = []results.LoopCount{{Loop: 0, Count: 2}, {Loop: 1, Count: 1}, {Loop: 3, Count: 1}}
			return r
		}(), cost(0.1, 0.05, 0.2), "workers", 0.9757, false, true, nil, "the 3 of 4 loops the callers were dealt to (loop 0: 2, loop 1: 1, loop 3: 1) / 5.1ms"},
		{"no measured block: the requested one, said", results.Step{Server: loop, Conc: 16}, &results.Result{Mode: "closed", Load: &results.Load{ThroughputPerS: 790,
			Latency: hist.Percentiles{Count: 1, MeanUs: 20253}}}, cost(0.1, 0.05, 0.2), "workers", 0.9875, false, true, nil, "requested block (the server did not say"},
		{"external, workers unknown: the callers' ceiling", results.Step{Server: other, Conc: 64}, load(12000, 5330*time.Microsecond, ms5), cost(0.7, 0.4, 1.2),
			"callers", 0.9375, false, true, []string{"workers not known"}, "64 callers / 5ms measured block"},
		{"external without pid: a busy machine is not another tenant", results.Step{Server: node, Conc: 16}, load(190, 84*time.Millisecond, 5200*time.Microsecond),
			notMeasured(cost(0, 0.2, 1.2)), "workers", 0.988, false, true, nil, "1 loop / 5.2ms measured block"},
		{"external without pid, machine full: CPU, said so", results.Step{Server: other, Conc: 256}, load(25000, 10240*time.Microsecond, ms5),
			notMeasured(cost(0, 0.6, 1.95)), "cpu", 0, false, true, []string{"workers not known"}, "the server's own share is not measured"},
		{"a server that blocked its own default, not what was asked: said", results.Step{Server: loop, Conc: 64}, load(194, 330*time.Millisecond, 20600*time.Microsecond),
			cost(0.1, 0.05, 0.2), "workers", 0, false, true, []string{"the server blocked 20.6ms where 5ms was asked (+312%)"}, "4 loops / 20.6ms measured block"},
		{"200 slots behind 10 database connections: a pool of 10", results.Step{Server: dbPool, Conc: 64}, load(1850, 34594*time.Microsecond, 5300*time.Microsecond), cost(0.3, 0.2, 0.6),
			"workers", 0.9805, false, true, nil, "workers: its 10 database connections (behind 200 slots) / 5.3ms measured block = 1887 req/s"},
		{"4 loops in front of 10 connections: the loops bind", results.Step{Server: dbLoop, Conc: 64}, load(750, 85*time.Millisecond, 5300*time.Microsecond), cost(0.1, 0.05, 0.2),
			"workers", 0.99375, false, true, nil, "workers: 4 loops / 5.3ms measured block = 755 req/s"},
		{"the loop server's offload pool behind 10 connections", results.Step{Server: dbLoop, Conc: 64, Variant: "offloaded", Endpoint: "/offload"}, load(1850, 34594*time.Microsecond, 5300*time.Microsecond),
			cost(0.3, 0.2, 0.6), "workers", 0.9805, false, true, nil, "its 10 database connections (behind 200 offload workers)"},
		{"a goroutine per request behind 10 connections", results.Step{Server: dbGo, Conc: 64}, load(1850, 34594*time.Microsecond, 5300*time.Microsecond), cost(0.3, 0.2, 0.6),
			"workers", 0.9805, false, true, nil, "its 10 database connections (behind a goroutine per request)"},
		{"external offloaded: its own offload pool, not --slots", results.Step{Server: node, Conc: 64, Variant: "offloaded", Endpoint: "/offload"}, load(6300, 10150*time.Microsecond, ms5),
			notMeasured(cost(0, 0.3, 1.0)), "workers", 0.984, false, true, nil, "32 offload workers / 5ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.step.Block = results.Block(5e6)
			b := BoundOf(tc.step, tc.lr, tc.c, 200)
			if b.Kind != tc.kind || b.Flagged != tc.flagged || b.LittleOK != tc.little {
				t.Fatalf("kind %s flagged %v little %.3f ok %v, want %s %v %v: %s", b.Kind, b.Flagged, b.Little, b.LittleOK, tc.kind, tc.flagged, tc.little, b.Line())
			}
			if tc.share > 0 && (b.Share < tc.share-0.001 || b.Share > tc.share+0.001) {
				t.Errorf("share %.4f, want %.4f", b.Share, tc.share)
			}
			if !strings.Contains(b.Text, tc.text) {
				t.Errorf("text %q lacks %q", b.Text, tc.text)
			}
			if len(b.Notes) != len(tc.notes) {
				t.Fatalf("notes %q, want %q", b.Notes, tc.notes)
			}
			for i, n := range tc.notes {
				if !strings.HasPrefix(b.Notes[i], n) {
					t.Errorf("note %q, want %q", b.Notes[i], n)
				}
			}
		})
	}
	if BoundOf(results.Step{}, nil, nil, 200) != nil {
		t.Error("a bound without a load")
	}
}

// TestBlockOff: a measured block within 10 % of the asked one is not
// remarked; beyond, in either direction, it is, with the figures.
func TestBlockOff(t *testing.T) {
	for _, tc := range []struct {
		asked    time.Duration
		measured float64
		want     string
	}{
		{5 * time.Millisecond, 5.4e6, ""}, {5 * time.Millisecond, 4.6e6, ""}, {5 * time.Millisecond, 0, ""}, {0, 5e6, ""},
		{5 * time.Millisecond, 5.6e6, "the server blocked 5.6ms where 5ms was asked (+12%)"},
		{100 * time.Millisecond, 5.1e6, "the server blocked 5.1ms where 100ms was asked (-95%)"},
	} {
		if got := blockOff(tc.asked, tc.measured); got != tc.want {
			t.Errorf("blockOff(%s, %.0f) = %q, want %q", tc.asked, tc.measured, got, tc.want)
		}
	}
	r := LoadRow{Group: &Group{Step: results.Step{Server: results.Server{}, Block: 5e6}}, MeasuredBlock: Figure{5.05e6}}
	if got := r.BlockedText(); got != "5.05ms" {
		t.Errorf("BlockedText %q", got)
	}
	r.MeasuredBlock = Figure{20.6e6}
	if got := r.BlockedText(); got != "20.6ms (+312% of the 5ms asked)" {
		t.Errorf("BlockedText %q", got)
	}
	if got := (LoadRow{Group: r.Group}).BlockedText(); got != "not said" {
		t.Errorf("BlockedText %q", got)
	}
}

// TestSaturated: a bystander is saturated when fewer than 90 % of its due
// probes came back.
func TestSaturated(t *testing.T) {
	for _, tc := range []struct {
		p    results.Probe
		want bool
	}{
		{results.Probe{Due: 120, Completed: 45, Censored: 75}, true},
		{results.Probe{Due: 120, Completed: 120}, false},
		{results.Probe{Due: 120, Completed: 100, Failed: 20}, false},
		{results.Probe{Due: 100, Completed: 89, Censored: 11}, true},
		{results.Probe{}, false},
	} {
		if got := probeSaturated(&tc.p); got != tc.want {
			t.Errorf("%+v: saturated %v", tc.p, got)
		}
	}
	b := bystanderOf([]*results.Result{{Params: results.Params{IntervalNs: 5e7}, Probe: &results.Probe{WindowNs: 6e9, Due: 120, Completed: 45, Censored: 75}}})
	if !b.Saturated || !strings.Contains(b.SaturatedWhy, saturatedText) || !strings.Contains(b.SaturatedWhy, "7.5 answers per second against 20.0") ||
		!strings.Contains(b.CensoredText(), "75 of 120") {
		t.Errorf("%q / %q", b.SaturatedWhy, b.CensoredText())
	}
}

// conn is a connection whose server made its probes wait wait.
func conn(id, loop int, wait time.Duration) results.ConnStat {
	h := hist.New()
	h.Record(wait)
	return results.ConnStat{Conn: id, Loop: loop, Due: 10, Samples: 10, Latency: h.Summary(), ServerWait: h.Summary()}
}

// TestStallExpected: the expected stalls are the connections on the loops
// the blockers' requests were answered on, whatever k says, and each cell
// keeps the loop of its own measurement.
func TestStallExpected(t *testing.T) {
	ms := func(d int) time.Duration { return time.Duration(d) * time.Millisecond }
	perconn := func(cs ...results.ConnStat) *results.Result {
		return &results.Result{PerConn: &results.PerConn{Conns: cs}}
	}
	blockers := func(loops ...int) *results.Result {
		l := &results.Load{}
		for _, x := range loops {
			l.RequestsPerLoop = append(l.RequestsPerLoop, results.LoopCount{Loop: x, Count: 20})
		}
		return &results.Result{Load: l}
	}
	step := results.Step{ID: "stall-loop-gnet-k1", Phase: "stall", K: 1, Server: results.Server{Kind: "loop"}, Block: 100e6}
	// The blocker landed on loop 2, not loop 0: its connections stalled.
	g := &Group{Step: step, Reps: []Rep{{Conns: perconn(conn(0, 0, ms(1)), conn(1, 2, ms(150)), conn(2, 1, ms(1))), Load: blockers(2)}}}
	r := stallRow(g)
	if !r.Match || r.Expected.Median() != 1 || r.Stalled.Median() != 1 || len(r.BlockedLoops) != 1 || r.BlockedLoops[0] != 2 || r.Cells[1].Loop != 2 || !r.Cells[1].OnBlockedLoop {
		t.Fatalf("%+v", r)
	}
	// A healthy connection called stalled, or a stalled one on a free loop: no match.
	g.Reps[0].Conns = perconn(conn(0, 0, ms(150)), conn(1, 2, ms(150)), conn(2, 1, ms(1)))
	if r := stallRow(g); r.Match || r.Stalled.Median() != 2 || r.Expected.Median() != 1 {
		t.Fatalf("%+v", r)
	}
	if r := stallRow(g); len(r.Mismatch) != 1 || !strings.Contains(r.Mismatch[0], "connection 0 (loop 0) stalled, though no blocker was on its loop: the server made it wait 150ms") {
		t.Fatalf("the mismatch is not said: %q", r.Mismatch)
	}
	// Without the blockers' result nothing is expected for k > 0: no match claimed.
	g.Reps[0].Load = nil
	if r := stallRow(g); r.Match || r.Expected.OK() || len(r.Mismatch) != 1 {
		t.Fatalf("%+v", r)
	}
}

// TestStallTooBusy: a repetition the rule cannot judge is never counted:
// the row says so with the figure (the tables say it: prose's
// TestStallTooBusySaid); with a judged one beside it, the count is of the
// judged one and says how many were judged.
func TestStallTooBusy(t *testing.T) {
	ms := func(d int) time.Duration { return time.Duration(d) * time.Millisecond }
	step := results.Step{ID: "stall-loop-gnet-k1", Phase: "stall", K: 1, Server: results.Server{Name: "loop-gnet", Kind: "loop"}, Block: 40e6}
	blockers := &results.Result{Load: &results.Load{RequestsPerLoop: []results.LoopCount{{Loop: 0, Count: 20}}, MeanBlockedNs: 40.1e6, BlockedSamples: 20}}
	busy := &results.Use{WindowNs: 1e9, Cores: 2, MachineBusy: 1, Server: &results.ProcUse{CPUNs: 1e8, RunqWaitNs: 2e9}, Prober: &results.ProcUse{CPUNs: 1e8}}
	unclear := Rep{M: results.Measurement{Step: step, Repeat: 1, Use: busy}, Load: blockers,
		Conns: &results.Result{PerConn: &results.PerConn{Conns: []results.ConnStat{conn(0, 0, ms(75)), conn(1, 1, ms(14)), conn(2, 2, ms(1))}}}}
	g := &Group{Step: step, Reps: []Rep{unclear}}
	r := stallRow(g)
	if r.Judged != 0 || r.Stalled.OK() || r.StalledText() != "machine too busy to judge" || r.Match || len(r.Unjudged) != 1 ||
		!strings.Contains(r.Unjudged[0], "connection 1 (loop 1) waited 14ms") || !strings.Contains(r.Unjudged[0], "100% busy (90% by other processes)") ||
		!r.Shared() || r.MachineOthers.Median() != 0.9 {
		t.Fatalf("%+v\n%s", r, r.Unjudged)
	}
	judged := unclear
	judged.M.Repeat = 2
	judged.Conns = &results.Result{PerConn: &results.PerConn{Conns: []results.ConnStat{conn(0, 0, ms(75)), conn(1, 1, ms(1)), conn(2, 2, ms(1))}}}
	g.Reps = append(g.Reps, judged)
	if r := stallRow(g); r.Judged != 1 || r.StalledText() != "1 of 3 (1 of 2 repetitions judged)" || !r.Match {
		t.Fatalf("%q match %v", r.StalledText(), r.Match)
	}
}

// TestMisalignedWindow: a bystander whose clock started more than 10 ms
// from the load's says so.
func TestMisalignedWindow(t *testing.T) {
	step := results.Step{ID: "sweep-pool-c4", Phase: "sweep", Conc: 4, Server: results.Server{Name: "pool", Kind: "pool", Workers: 200}, Block: 5e6}
	rep := func(offset time.Duration) Rep {
		return Rep{M: results.Measurement{Step: step, Status: "ok"},
			Load:  &results.Result{StartUnixNs: 1e18, Load: &results.Load{ThroughputPerS: 700}},
			Probe: &results.Result{StartUnixNs: 1e18 + int64(offset), Probe: &results.Probe{Due: 100, Completed: 100}}}
	}
	for _, tc := range []struct {
		offset time.Duration
		said   bool
	}{{0, false}, {3 * time.Millisecond, false}, {-40 * time.Millisecond, true}, {250 * time.Millisecond, true}} {
		r := rep(tc.offset)
		g := &Group{Step: step, Reps: []Rep{r}, Load: []*results.Result{r.Load}, Probe: []*results.Result{r.Probe}}
		row := loadRow(g, Params{OffloadWorkers: 200})
		if (row.Fast.Misaligned != "") != tc.said {
			t.Errorf("offset %s: %q", tc.offset, row.Fast.Misaligned)
		}
	}
}

// TestCostOf: a v6 measurement's cost is derived from /proc's raw figures
// over the load's; a v5 one is read as stored; a server without its
// process says its own figures are not measured.
func TestCostOf(t *testing.T) {
	lr := load(1000, 5*time.Millisecond, 5*time.Millisecond)
	lr.Generator.CPUUsPerRequest = 12
	m := results.Measurement{Use: &results.Use{WindowNs: 2e9, Cores: 2, MachineBusy: 0.5,
		Server:    &results.ProcUse{CPUNs: 1e8, VolCtxSw: 3000, InvolCtxSw: 1000, Threads: 14, PeakRSSBytes: 13 << 20},
		Generator: &results.ProcUse{CPUNs: 2e8}, Prober: &results.ProcUse{CPUNs: 2e7}}}
	c := CostOf(m, lr)
	// 1000 req/s over 2 s: 2000 requests; 100 ms of server CPU: 50 us each.
	if c.Requests != 2000 || c.ServerCPUUsPerRequest != 50 || c.CtxSwitchesPerRequest != 2 || c.ServerCores != 0.05 || c.GeneratorCores != 0.1 ||
		c.ProberCores != 0.01 || c.MachineCores != 1 || c.Threads != 14 || c.GeneratorCPUUsPerReq != 12 || c.ServerNotMeasured {
		t.Fatalf("%+v", c)
	}
	m.Use.Server = nil
	if c := CostOf(m, lr); !c.ServerNotMeasured || c.ServerCPUUsPerRequest != 0 {
		t.Fatalf("without the server's process: %+v", c)
	}
	stored := &results.ServerCost{ServerCPUUsPerRequest: 7}
	if c := CostOf(results.Measurement{Cost: stored}, lr); c != stored {
		t.Fatalf("a v5 cost: %+v", c)
	}
	if CostOf(m, nil) != nil {
		t.Error("a cost without a load")
	}
}

// Behind fewer database connections than workers, the ceiling is theirs,
// in the summary, its words and the pages' label.
func TestDatabaseCeiling(t *testing.T) {
	pool := results.Server{Name: "pool", Kind: "pool", Workers: 200, DBConns: 10}
	loop := results.Server{Name: "loop-gnet", Kind: "loop", Workers: 4, DBConns: 10}
	for _, tc := range []struct {
		step  results.Step
		want  int
		binds bool
		text  string
	}{
		{results.Step{Server: pool, Endpoint: "/slow", Block: 5e6}, 10, true, "10 database connections / 5ms = 2,000 req/s"},
		{results.Step{Server: loop, Endpoint: "/slow", Block: 5e6}, 4, false, "4 loops / 5ms = 800 req/s"},
		{results.Step{Server: loop, Endpoint: "/offload", Block: 5e6}, 10, true, "10 database connections / 5ms = 2,000 req/s"},
	} {
		if got := WorkersOf(tc.step, 200); got != tc.want || DBBinds(tc.step, 200) != tc.binds {
			t.Errorf("%s %s: workers %d binds %v, want %d %v", tc.step.Server.Name, tc.step.Endpoint, got, DBBinds(tc.step, 200), tc.want, tc.binds)
		}
		if got := StepCeilingText(tc.step, 200); got != tc.text {
			t.Errorf("%s %s: %q, want %q", tc.step.Server.Name, tc.step.Endpoint, got, tc.text)
		}
	}
}
