package findings

import (
	"math"
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

// TestBlockOff: a measured block within 10 % of the asked one is not
// off; beyond, in either direction, it is, by its share (prose's
// TestBoundWords says it).
func TestBlockOff(t *testing.T) {
	for _, tc := range []struct {
		asked    time.Duration
		measured float64
		want     float64
		off      bool
	}{
		{5 * time.Millisecond, 5.4e6, 0.08, false}, {5 * time.Millisecond, 4.6e6, -0.08, false}, {5 * time.Millisecond, 0, 0, false}, {0, 5e6, 0, false},
		{5 * time.Millisecond, 5.6e6, 0.12, true},
		{100 * time.Millisecond, 5.1e6, -0.949, true},
	} {
		if got, off := BlockOff(tc.asked, tc.measured); off != tc.off || math.Abs(got-tc.want) > 0.001 {
			t.Errorf("BlockOff(%s, %.0f) = %.3f %v, want %.3f %v", tc.asked, tc.measured, got, off, tc.want, tc.off)
		}
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
	if !b.Saturated || b.SaturatedReps != 1 || len(b.Due) != 1 || b.AnswersPerS.Median() != 7.5 || b.DuePerS.Median() != 20 ||
		b.Censored.Median() != 75 || b.Due.Median() != 120 {
		t.Errorf("%+v", b)
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
	if r := stallRow(g); len(r.Mismatch) != 1 || r.Mismatch[0].NotKnown || r.Mismatch[0].Conn != 0 || r.Mismatch[0].Loop != 0 || !r.Mismatch[0].Stalled || r.Mismatch[0].Wait.Round(time.Millisecond) != 150*time.Millisecond {
		t.Fatalf("the mismatch is not told: %+v", r.Mismatch)
	}
	// Without the blockers' result nothing is expected for k > 0: no match claimed.
	g.Reps[0].Load = nil
	if r := stallRow(g); r.Match || r.Expected.OK() || len(r.Mismatch) != 1 || !r.Mismatch[0].NotKnown {
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
	if r.Judged != 0 || r.Stalled.OK() || r.Match || len(r.Unjudged) != 1 || r.Unjudged[0].Repeat != 0 ||
		!strings.Contains(r.Unjudged[0].Why, "connection 1 (loop 1) waited 14ms") || !strings.Contains(r.Unjudged[0].Why, "100% busy (90% by other processes)") ||
		!r.Shared() || r.MachineOthers.Median() != 0.9 {
		t.Fatalf("%+v\n%+v", r, r.Unjudged)
	}
	judged := unclear
	judged.M.Repeat = 2
	judged.Conns = &results.Result{PerConn: &results.PerConn{Conns: []results.ConnStat{conn(0, 0, ms(75)), conn(1, 1, ms(1)), conn(2, 2, ms(1))}}}
	g.Reps = append(g.Reps, judged)
	if r := stallRow(g); r.Judged != 1 || r.Stalled.Median() != 1 || r.Conns.Median() != 3 || len(r.Unjudged) != 1 || r.Unjudged[0].Repeat != 1 || !r.Match {
		t.Fatalf("%+v", r)
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
		if want := map[bool]time.Duration{true: tc.offset}[tc.said]; row.Fast.Misaligned != want {
			t.Errorf("offset %s: misaligned %s, want %s", tc.offset, row.Fast.Misaligned, want)
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

// Behind fewer database connections than workers, the ceiling is theirs
// (prose's TestStepCeilingWords says it).
func TestDatabaseCeiling(t *testing.T) {
	pool := results.Server{Name: "pool", Kind: "pool", Workers: 200, DBConns: 10}
	loop := results.Server{Name: "loop-gnet", Kind: "loop", Workers: 4, DBConns: 10}
	for _, tc := range []struct {
		step  results.Step
		want  int
		binds bool
		perS  float64
	}{
		{results.Step{Server: pool, Endpoint: "/slow", Block: 5e6}, 10, true, 2000},
		{results.Step{Server: loop, Endpoint: "/slow", Block: 5e6}, 4, false, 800},
		{results.Step{Server: loop, Endpoint: "/offload", Block: 5e6}, 10, true, 2000},
	} {
		if got := WorkersOf(tc.step, 200); got != tc.want || DBBinds(tc.step, 200) != tc.binds {
			t.Errorf("%s %s: workers %d binds %v, want %d %v", tc.step.Server.Name, tc.step.Endpoint, got, DBBinds(tc.step, 200), tc.want, tc.binds)
		}
		if w, c := StepCeiling(tc.step, 200); w != tc.want || c != tc.perS {
			t.Errorf("%s %s: %d workers, %.0f req/s, want %.0f", tc.step.Server.Name, tc.step.Endpoint, w, c, tc.perS)
		}
	}
}

// TestGroupMiss: a step's first repetition that left no figures and says
// why is kept typed (a failure's measurement, or its file not read); one
// without a status or reason says nothing and is passed over; the phase
// counts its measurements and keeps every miss in the run's order.
func TestGroupMiss(t *testing.T) {
	step := results.Step{ID: "stall-pool-k1", Phase: "stall", K: 1, Server: results.Server{Name: "pool", Kind: "pool", Workers: 200}}
	run := &results.Run{Measurements: []results.Measurement{
		{Step: step, Repeat: 1},
		{Step: step, Repeat: 2, Status: "ok", PerConnFile: "../outside.json"},
		{Step: step, Repeat: 3, Status: "failed", Reason: "the server died"},
	}}
	gs, unread := groups(t.TempDir(), run)
	if len(gs) != 1 || len(unread) != 1 || unread[0].Repeat != 2 || unread[0].Field != "perconn_file" || unread[0].Why == "" {
		t.Fatalf("groups %d, unread %+v", len(gs), unread)
	}
	if m := gs[0].Miss; m == nil || m.M.Repeat != 2 || m.Unread == nil || m.Unread.File != "../outside.json" {
		t.Errorf("the first miss that says why: %+v", m)
	}
	ps := phaseStatus(run, "stall", unread)
	if ps.N != 3 || ps.OK != 0 || len(ps.Misses) != 3 || ps.Misses[1].Unread == nil || ps.Misses[2].M.Reason != "the server died" {
		t.Errorf("phase %+v", ps)
	}
	run.Measurements = run.Measurements[2:]
	if gs, _ := groups(t.TempDir(), run); gs[0].Miss == nil || gs[0].Miss.M.Status != "failed" || gs[0].Miss.Unread != nil {
		t.Errorf("a failure's miss: %+v", gs[0].Miss)
	}
	if ps := phaseStatus(run, "sweep", nil); ps.N != 0 || len(ps.Misses) != 0 {
		t.Errorf("a phase not run: %+v", ps)
	}
}
