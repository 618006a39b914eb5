package findings

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/hist"
	"github.com/bystander-kit/bystander/internal/results"
)

// AsIsSaid are prose's words of a server measured as it is, set by
// asis_said_test.go (package findings_test, which may import prose): the
// tests below compute a sweep's figures and typed verdicts here and
// assert, beside them, the sentences prose makes of them.
var AsIsSaid struct {
	Class, StalledLine, CPU, Ceiling func(AsIs) string
	Stalled                          func(AsIsStep) string
	Unjudged                         func(AsIsStep, AsIsUnjudged) string
}

// asIsRep is one synthetic step of a server measured as it is: its load
// (median latency and throughput), its 12 connections' waits from the
// send (ms) and their wait unloaded, and optionally the server's use.
type asIsRep struct {
	conc       int
	p50Ms, tps float64
	waits      []float64
	unloaded   float64 // ms
	use        *results.Use
	failed     string
	badStatus  int64   // the load's answers other than 2xx or 3xx
	lateMs     float64 // how long after the load's the 12 connections' clock started
	dials      int64   // the load's connections opened (0: its callers)
	// sendLate is how late the 12 connections' probes left, at the
	// median, ms; fast the interval bystander's median from due, ms (0:
	// the first connection's wait).
	sendLate, fast float64
}

func pcts(ms float64) hist.Percentiles {
	h := hist.New()
	h.Record(time.Duration(ms * float64(time.Millisecond)))
	return h.Summary()
}

// asIsGroups makes the sweep's groups of a server named svc measured as
// it is.
func asIsGroups(steps ...asIsRep) []*Group {
	srv := results.Server{Name: "svc", Kind: "other", External: true, Load: "GET /work", Bystander: "GET /health"}
	var gs []*Group
	for _, s := range steps {
		step := results.Step{ID: fmt.Sprintf("sweep-svc-c%d", s.conc), Phase: "sweep", Server: srv, Endpoint: srv.Load, Conc: s.conc}
		g := &Group{Step: step}
		m := results.Measurement{Step: step, Repeat: 1, Status: "ok", Use: s.use}
		if s.failed != "" {
			m.Status, m.Reason = "failed", s.failed
			g.MS, g.Miss = append(g.MS, m), &Miss{M: m}
			gs = append(gs, g)
			continue
		}
		lat := pcts(s.p50Ms)
		dials := s.dials
		if dials == 0 {
			dials = int64(s.conc)
		}
		load := &results.Result{Mode: "closed", Load: &results.Load{ThroughputPerS: s.tps, Latency: lat, Requests: int64(s.tps), Dials: dials},
			Errors: []results.ErrorCount{{Kind: "closed", Count: 0}, {Kind: "bad_status", Count: s.badStatus}}}
		pc := &results.PerConn{BaselineUs: s.unloaded * 1e3}
		for i, w := range s.waits {
			c := results.ConnStat{Conn: i, Loop: -1, Due: 150, Samples: 150, FromSend: pcts(w), Latency: pcts(w)}
			if s.sendLate > 0 {
				c.SendLate, c.Latency = pcts(s.sendLate), pcts(s.sendLate+w)
			}
			pc.Conns = append(pc.Conns, c)
		}
		start := int64(1e18)
		load.StartUnixNs = start
		conns := &results.Result{PerConn: pc, StartUnixNs: start + int64(s.lateMs*1e6), StartLateNs: int64(s.lateMs * 1e6)}
		fast := s.fast
		if fast == 0 {
			fast = s.waits[0]
		}
		probe := &results.Result{Probe: &results.Probe{Due: 30, Completed: 30, Corrected: pcts(fast), Uncorrected: pcts(s.waits[0])}}
		rep := Rep{M: m, Load: load, Conns: conns, Probe: probe}
		rep.Cost = CostOf(m, load)
		g.MS, g.Reps = append(g.MS, m), append(g.Reps, rep)
		g.Load, g.Conns, g.Probe = append(g.Load, load), append(g.Conns, conns), append(g.Probe, probe)
		gs = append(gs, g)
	}
	return gs
}

func twelve(ms ...float64) []float64 {
	var out []float64
	for i := range 12 {
		out = append(out, ms[i%len(ms)])
	}
	return out
}

// busiest is the server's use with its busiest thread on a CPU share of
// a 1 s window, and waiting for one runq of it.
func busiest(name string, share, runq, cores float64) *results.Use {
	return &results.Use{WindowNs: 1e9, Cores: 2, MachineBusy: 0.5,
		Server: &results.ProcUse{CPUNs: int64(cores * 1e9), Threads: 20, Busiest: &results.ThreadCPU{Name: name, CPUNs: int64(share * 1e9), RunqWaitNs: int64(runq * 1e9)}}}
}

// TestAsIsClasses: each class a server measured as it is can be given,
// from its sweep alone, on waits like those the example services gave
// (docs/measurements.md, "A service as it is").
func TestAsIsClasses(t *testing.T) {
	netty1 := []float64{1.06, 9.05, 1.31, 1.84, 0.83, 9.29, 0.83, 1.63, 0.73, 8.69, 0.96, 1.4}
	for _, tc := range []struct {
		name     string
		steps    []asIsRep
		class    string
		text     []string
		stalled  string
		workers  float64
		atLeast  bool
		forgives int
		cpu      string
	}{
		{"netty: 4 loops, a ledger call on them", []asIsRep{
			{conc: 1, p50Ms: 5, tps: 190, waits: netty1, unloaded: 0.3, use: busiest("nioEventLoopGroup-3-2", 0.08, 0, 0.3)},
			{conc: 4, p50Ms: 5.3, tps: 752, waits: twelve(7.4, 8.2, 7.7, 7.6), unloaded: 0.3},
			{conc: 16, p50Ms: 20.5, tps: 780, waits: twelve(21, 23.8, 20.3, 22), unloaded: 0.5},
		}, ClassLoop, []string{"a few threads the load holds", "3 of 12 connections stalled (1, 5, 9)", "3.9 workers"}, "3 of 12 at 1 caller, 12 of 12 at 4, 12 of 12 at 16", 3.9, false, 0, "off the CPU"},
		{"node: one loop hashing on a CPU", []asIsRep{
			{conc: 1, p50Ms: 4, tps: 245, waits: twelve(2.4, 2.6, 2.2), unloaded: 0.25, use: busiest("node", 0.92, 0, 1.0)},
			{conc: 4, p50Ms: 16, tps: 250, waits: twelve(12, 13), unloaded: 0.25},
		}, ClassLoop, []string{"a thread the load holds", "every one of its 12 connections stalled"}, "12 of 12 at 1 caller, 12 of 12 at 4", 1.0, false, 0, "on a CPU"},
		{"tomcat: a pool the sweep never filled", []asIsRep{
			{conc: 1, p50Ms: 5.5, tps: 180, waits: twelve(0.9, 1.1, 1.4), unloaded: 0.6, use: busiest("http-nio-exec-3", 0.03, 0, 0.2)},
			{conc: 4, p50Ms: 5.6, tps: 710, waits: twelve(0.2, 0.22), unloaded: 0.3},
			{conc: 16, p50Ms: 5.9, tps: 2700, waits: twelve(1.1, 1.3, 0.9), unloaded: 0.8},
		}, ClassPool, []string{"a pool that forgives it up to 16 callers", "at least"}, "0 of 12 at 1 caller, 0 of 12 at 4, 0 of 12 at 16", 14.9, true, 16, "off the CPU"},
		{"a pool of 8 the sweep filled: its callers queued", []asIsRep{
			{conc: 1, p50Ms: 5, tps: 195, waits: twelve(0.3, 0.35), unloaded: 0.3},
			{conc: 4, p50Ms: 5.2, tps: 760, waits: twelve(0.4, 0.3), unloaded: 0.3},
			{conc: 64, p50Ms: 40, tps: 1560, waits: twelve(35, 38, 36), unloaded: 0.3},
		}, ClassPool, []string{"a pool that forgives it up to 4 callers", "at 64 callers 12 of 12 stalled: its callers queued", "7.8 workers"}, "", 7.8, false, 4, "not measured"},
		{"cannot tell: starved at 1 caller", []asIsRep{
			{conc: 1, p50Ms: 5, tps: 190, waits: netty1, unloaded: 0.3, use: &results.Use{WindowNs: 1e9, Cores: 2, MachineBusy: 1,
				Server: &results.ProcUse{CPUNs: 3e8, RunqWaitNs: 5e8, RunqWaits: 1000}}},
			{conc: 4, p50Ms: 5.3, tps: 752, waits: twelve(7.4, 8.2), unloaded: 0.3},
		}, ClassUnknown, []string{"cannot tell: at 1 caller, machine too busy to judge", "500µs"}, "machine too busy to judge at 1 caller, 12 of 12 at 4", 3.76, true, 0, ""},
		{"cannot tell: 1 caller not measured", []asIsRep{
			{conc: 1, failed: "the server died during the measurement"},
			{conc: 4, p50Ms: 5.3, tps: 752, waits: twelve(7.4, 8.2), unloaded: 0.3},
		}, ClassUnknown, []string{"cannot tell: the sweep at 1 caller was not measured", "the server died"}, "", 0, false, 0, "not known"},
		{"cannot tell: waits that do not separate, and no reference", []asIsRep{
			{conc: 1, p50Ms: 5, tps: 190, waits: twelve(2, 3.5, 2.5, 4), unloaded: 0},
		}, ClassUnknown, []string{"cannot tell", "do not separate"}, "not judged at 1 caller", 0.95, true, 0, ""},
		{"cannot tell: a call too short to hold anyone", []asIsRep{
			{conc: 1, p50Ms: 0.045, tps: 17000, waits: twelve(0.3, 0.31), unloaded: 0.2},
			{conc: 4, p50Ms: 0.2, tps: 14000, waits: twelve(0.3, 0.29), unloaded: 0.2},
		}, ClassUnknown, []string{"cannot tell: its call takes 45µs at 1 caller, under the 1ms"}, "0 of 12 at 1 caller, 0 of 12 at 4", 0.77, false, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := asIsOf(asIsGroups(tc.steps...), Params{})
			if len(as) != 1 {
				t.Fatalf("%d servers measured as they are", len(as))
			}
			a := as[0]
			if a.Class != tc.class {
				t.Fatalf("class %s (%s), want %s", a.Class, AsIsSaid.Class(a), tc.class)
			}
			for _, w := range tc.text {
				if !strings.Contains(AsIsSaid.Class(a), w) {
					t.Errorf("%q lacks %q", AsIsSaid.Class(a), w)
				}
			}
			if tc.stalled != "" && AsIsSaid.StalledLine(a) != tc.stalled {
				t.Errorf("stalled %q, want %q", AsIsSaid.StalledLine(a), tc.stalled)
			}
			if d := a.Workers - tc.workers; d > 0.05 || d < -0.05 || a.AtLeast != tc.atLeast {
				t.Errorf("workers %.2f (at least %v), want %.2f (%v)", a.Workers, a.AtLeast, tc.workers, tc.atLeast)
			}
			if a.Forgives != tc.forgives {
				t.Errorf("forgives %d, want %d", a.Forgives, tc.forgives)
			}
			if !strings.Contains(AsIsSaid.CPU(a), tc.cpu) {
				t.Errorf("cpu %q, want %q", AsIsSaid.CPU(a), tc.cpu)
			}
		})
	}
}

// TestAsIsCPU: whether the call ran on a CPU, at 1 caller, from its
// busiest thread's time on a CPU and waiting for one: a machine that
// starves the service makes a call that waits on a socket wait for a CPU
// at each wake-up (the Netty shop beside a load average of 25: on a CPU
// 4% of the window, waiting for one 63%), and a call on a CPU wait for
// one between its slices (Node's pbkdf2Sync on a busy machine: on a CPU
// 60%, waiting 38%); neither can be read as the other: on a CPU half the
// window or more is on a CPU, wanting one under half of the time the load
// kept a call running is off it, and in between it cannot be told.
func TestAsIsCPU(t *testing.T) {
	for _, tc := range []struct {
		name        string
		p50Ms, tps  float64
		cpu, runq   float64
		want        string
		bound, told bool
		figures     []string
	}{
		{"netty, quiet: off the CPU", 6, 160, 0.05, 0.08, "off the CPU (it waits)", false, true, []string{"on a CPU 5%", "waiting for one 8%"}},
		{"netty, starved: its wake-ups waited for a CPU", 6, 160, 0.04, 0.63, "CPU: cannot tell", false, false, []string{"waiting for a CPU 63%", "on a CPU 4%"}},
		{"tomcat, starved (the watched run's 1 caller)", 6.4, 150, 0.01, 0.66, "CPU: cannot tell", false, false, []string{"66%"}},
		{"node on a busy machine: on a CPU", 4, 245, 0.60, 0.38, "on a CPU", true, true, []string{"on a CPU 60%"}},
		{"node, quiet", 4, 245, 0.92, 0.02, "on a CPU", true, true, nil},
		{"node, starved: not off the CPU", 8, 120, 0.30, 0.68, "CPU: cannot tell", false, false, []string{"waiting for a CPU 68%", "on a CPU 30%"}},
		// The load left gaps between its calls (its generator starved):
		// a CPU-bound call wanted a CPU 40% of the window, but 89% of
		// the 45% the load kept a call running.
		{"a CPU-bound call between a starved load's gaps", 4, 112.5, 0.25, 0.15, "CPU: cannot tell", false, false, []string{"45%"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := asIsOf(asIsGroups(asIsRep{conc: 1, p50Ms: tc.p50Ms, tps: tc.tps, waits: twelve(0.3, 0.35), unloaded: 0.3, use: busiest("t", tc.cpu, tc.runq, 0.5)}), Params{})[0]
			got := AsIsSaid.CPU(a)
			if !strings.HasPrefix(got, tc.want) || a.CPUBound != tc.bound || a.CPUTold != tc.told || !a.CPUKnown {
				t.Fatalf("%q (bound %v, told %v), want %q (%v, %v)", got, a.CPUBound, a.CPUTold, tc.want, tc.bound, tc.told)
			}
			for _, f := range tc.figures {
				if !strings.Contains(got, f) {
					t.Errorf("%q lacks %q", got, f)
				}
			}
		})
	}
}

// TestAsIsForgivesBehind: Tomcat's 200 threads on a starved machine (the
// machine 99% busy, its threads waiting 1.15 ms for a CPU at each
// wake-up) were "a pool that forgives it up to 200 callers: none of its
// connections stalled up to there, its bystander's median 152.0x its wait
// unloaded": at 200 callers its 12 connections waited 1.04 to 1.57 ms from
// the send, under a third of the 6.35 ms call, while their probes left
// some 300 ms after their due times (its interval bystander's median from
// due 24.3 ms). That step is too busy to judge, and the pool forgives the
// call up to the 64 callers before it.
func TestAsIsForgivesBehind(t *testing.T) {
	starved := &results.Use{WindowNs: 1e9, Cores: 2, MachineBusy: 0.99,
		Server: &results.ProcUse{CPUNs: 36e7, RunqWaitNs: 23e8, RunqWaits: 2000, Threads: 224}}
	a := asIsOf(asIsGroups(
		asIsRep{conc: 1, p50Ms: 6.35, tps: 142, waits: twelve(0.28, 0.32), unloaded: 1.1, fast: 0.62},
		asIsRep{conc: 16, p50Ms: 7.9, tps: 1735, waits: twelve(0.59, 0.81), unloaded: 0.4, fast: 1.1},
		asIsRep{conc: 64, p50Ms: 10.7, tps: 5436, waits: twelve(1.28, 1.57), unloaded: 0.5, fast: 1.73},
		asIsRep{conc: 200, p50Ms: 30.9, tps: 3522, waits: twelve(1.04, 1.57, 1.3), unloaded: 0.16, fast: 24.3, sendLate: 300, use: starved},
	), Params{})[0]
	if a.Class != ClassPool || a.Case != AsIsForgives || a.Forgives != 64 || !strings.Contains(AsIsSaid.Class(a), "forgives it up to 64 callers") || !strings.Contains(AsIsSaid.Class(a), "at 200 callers machine too busy to judge") {
		t.Errorf("class %s, forgives %d: %s", a.Class, a.Forgives, AsIsSaid.Class(a))
	}
	if got := AsIsSaid.StalledLine(a); !strings.HasSuffix(got, "0 of 12 at 64, machine too busy to judge at 200") {
		t.Errorf("stalled %q", got)
	}
	if st := a.step(200); len(st.Unjudged) == 0 || !st.Unjudged[0].Busy || !strings.Contains(AsIsSaid.Unjudged(*st, st.Unjudged[0]), "after their due times") {
		t.Errorf("at 200 callers: %+v", st.Unjudged)
	}
}

// TestAsIsFigures: the call's own time is the load's median at 1 caller;
// the plateau the highest throughput; the workers the plateau x the call's
// time, and the ceiling those workers over it.
func TestAsIsFigures(t *testing.T) {
	a := asIsOf(asIsGroups(
		asIsRep{conc: 1, p50Ms: 5, tps: 190, waits: twelve(1, 9, 1, 1), unloaded: 0.3},
		asIsRep{conc: 16, p50Ms: 20.5, tps: 780, waits: twelve(21, 23), unloaded: 0.5, use: busiest("loop", 0.1, 0, 0.3)},
		asIsRep{conc: 4, p50Ms: 5.3, tps: 752, waits: twelve(7.4, 8.2), unloaded: 0.3},
	), Params{})[0]
	// The histogram keeps 3 digits: 5 ms reads back as 5.003 ms.
	near := func(x, want float64) bool { return x > 0.998*want && x < 1.002*want }
	if !near(a.CallTime().Seconds(), 0.005) || a.Plateau != 780 || a.PlateauAt != 16 {
		t.Fatalf("call %s, plateau %.0f at %d", a.CallTime(), a.Plateau, a.PlateauAt)
	}
	if !near(a.Workers, 780*0.005) || !near(a.Ceiling, 800) || AsIsSaid.Ceiling(a) != "4 workers / 5ms = 800 req/s" {
		t.Errorf("workers %.2f, ceiling %.0f: %s", a.Workers, a.Ceiling, AsIsSaid.Ceiling(a))
	}
	if a.Steps[0].Step.Conc != 1 || a.Steps[2].Step.Conc != 16 {
		t.Errorf("steps not in callers' order")
	}
	if b := a.Steps[2].Bound(); b == nil || b.Kind != "workers" {
		t.Errorf("at 16 callers, 780 req/s of the 800 its 4 workers allow: bound %+v", b)
	}
}

// TestAsIsRuns: on real runs of the example services measured as they
// are, the Netty shop's threads are held by its load (the 3 of 12
// connections that share a loop with the 1 caller stalled), Node's one
// loop is held on a CPU.
func TestAsIsRuns(t *testing.T) {
	netty, err := Read("testdata/asis-netty-run")
	if err != nil {
		t.Fatal(err)
	}
	if len(netty.AsIs) != 1 || len(netty.Sweep) != 0 {
		t.Fatalf("%d servers as they are, %d sweep rows of the protocol's", len(netty.AsIs), len(netty.Sweep))
	}
	a := netty.AsIs[0]
	if a.Class != ClassLoop || a.Case != AsIsFewThreads || a.Steps[0].Stalled.Median() != 3 || a.Steps[0].Probed.Median() != 12 || a.CPUBound || !a.CPUKnown || a.Workers < 2 || a.Workers > 5 {
		t.Errorf("netty: %s (%s), %s at 1 caller, %s, %.1f workers", a.Class, AsIsSaid.Class(a), AsIsSaid.Stalled(a.Steps[0]), AsIsSaid.CPU(a), a.Workers)
	}
	if c := netty.Classes(); len(c) != 1 || c[0].Class != ClassLoop || c[0].Case != ClassedAsIs || c[0].AsIs == nil {
		t.Errorf("netty's class: %+v", c)
	}
	node, err := Read("testdata/asis-node-run")
	if err != nil {
		t.Fatal(err)
	}
	b := node.AsIs[0]
	if b.Class != ClassLoop || b.Case != AsIsOneThread || !strings.HasPrefix(AsIsSaid.Class(b), "a thread the load holds") || !b.CPUBound || AsIsSaid.Stalled(b.Steps[0]) != "12 of 12" {
		t.Errorf("node: %s (%s), %s", b.Class, AsIsSaid.Class(b), AsIsSaid.CPU(b))
	}
}

// TestAsIsNothingLost: answers other than 2xx or 3xx and connections the
// service closed are said beside the figures, the step kept: what the
// service did under the load is what was measured (their lines in the
// table: prose's TestAsIsSaysNothingLost).
func TestAsIsNothingLost(t *testing.T) {
	f := &Findings{Run: &results.Run{}, Params: Params{ProbeInterval: 50 * time.Millisecond}}
	f.AsIs = asIsOf(asIsGroups(
		asIsRep{conc: 1, p50Ms: 5, tps: 190, waits: twelve(1, 9, 1, 1), unloaded: 0.3},
		asIsRep{conc: 4, p50Ms: 5.3, tps: 752, waits: twelve(7.4, 8.2), unloaded: 0.3, badStatus: 310, dials: 3700},
	), f.Params)
	if st := f.AsIs[0].Steps[1]; st.NotAnswered() != 310 || !st.Closed() || st.Dials.Median() != 3700 {
		t.Errorf("4 callers: %d not answered, closed %v, %v dials (prose's TestAsIsSaysNothingLost: the table says both)", st.NotAnswered(), st.Closed(), st.Dials)
	}
	if st := f.AsIs[0].Steps[0]; st.Closed() || st.NotAnswered() != 0 {
		t.Errorf("1 caller, its connection kept and every request answered: closed %v, %d", st.Closed(), st.NotAnswered())
	}
	if f.AsIs[0].Steps[1].Throughput.Median() != 752 {
		t.Error("the step with failed answers lost its figures")
	}
}

// TestAsIsWatched: the Netty and Tomcat shops (examples/services) measured
// as they are with pid=, each watched at its top step through Flight
// Recorder: the watched step is beside the sweep, not in it; Netty's 4
// loops held in LedgerClient.balance's read of the ledger; Tomcat's
// request threads in the same frame, a pool's, its forgiveness not told
// where the machine was too busy to judge its connections; what watching
// cost, watched over unwatched at 16 callers.
func TestAsIsWatched(t *testing.T) {
	f, err := Read("testdata/asis-watch-run")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.AsIs) != 2 {
		t.Fatalf("%d servers as they are", len(f.AsIs))
	}
	for _, a := range f.AsIs {
		w := a.Watch
		if len(a.Steps) != 3 || !w.Watched() || w.Step.Step.ID != "sweep-"+a.Server+"-c16-watched" || w.Step.Step.Variant != results.Watched || w.Unwatched.Step.ID != "sweep-"+a.Server+"-c16" {
			t.Errorf("%s: steps %d, watched %v", a.Server, len(a.Steps), w.Watched())
			continue
		}
		if w.Service.Source != "Flight Recorder" || w.Throughput <= 0 || w.Bystander <= 0 {
			t.Errorf("%s: %+v", a.Server, w.Service)
		}
		if got := w.Throughput; got != w.Step.Throughput.Median()/w.Unwatched.Throughput.Median() {
			t.Errorf("%s: throughput ratio %v", a.Server, got)
		}
		h := w.Service.Holds[0]
		if h.Frames[0].Function != "shop.LedgerClient.balance" || h.Frames[0].Line != 35 || h.Peer != "127.0.0.1:39101" || h.State != "in a socket read" {
			t.Errorf("%s: %s", a.Server, w.Service.Words())
		}
	}
	shop, tshop := f.AsIs[0].Watch, f.AsIs[1].Watch
	if shop.Service.Pool || shop.Service.Holds[0].Held != 4 || shop.Forgiven {
		t.Errorf("netty: %+v", shop.Service)
	}
	if !tshop.Service.Pool || tshop.Forgiven || tshop.Step.Stalled.OK() {
		t.Errorf("tomcat: %+v, forgiven %v", tshop.Service, tshop.Forgiven)
	}
}

// TestSkips: a run that measured a server as it is, --phases sweep,stall,
// skipped it in the stall phase, which needs the protocol, and did not
// run the others; a default run ran every phase it asked for on every
// server.
func TestSkips(t *testing.T) {
	f, err := Read("testdata/asis-netty-run")
	if err != nil {
		t.Fatal(err)
	}
	got := f.Skips()
	if len(got) != len(Phases)-1 {
		t.Fatalf("skips %+v, want every phase after the sweep", got)
	}
	stall := got[0]
	if stall.Phase != "stall" || !stall.Asked || stall.Ran || len(stall.Skipped) != 1 || stall.Skipped[0].Server != "shop" || !stall.Skipped[0].AsIs ||
		!strings.Contains(stall.Skipped[0].Why, "needs the protocol") {
		t.Errorf("stall: %+v", stall)
	}
	for _, ps := range got[1:] {
		if ps.Asked || ps.Ran || len(ps.Skipped) != 0 {
			t.Errorf("%s: %+v, want neither asked for nor run", ps.Phase, ps)
		}
	}
	// Asked for every phase: one that planned nothing for it (the cliff,
	// for a server without a declared pool) skipped it too, as the run
	// measured nothing else.
	f.Run.Params.Phases = Phases
	for _, ps := range Compute("testdata/asis-netty-run", f.Run).Skips() {
		if !ps.Asked || ps.Ran || len(ps.Skipped) != 1 || ps.Skipped[0].Server != "shop" || !ps.Skipped[0].AsIs {
			t.Errorf("asked for every phase: %+v", ps)
		}
	}
	d, err := Read("testdata/run")
	if err != nil {
		t.Fatal(err)
	}
	for _, ps := range d.Skips() { // made before the slip phase was
		if ps.Asked || len(ps.Skipped) > 0 {
			t.Errorf("a default run skipped %+v", ps)
		}
	}
}

// TestAsIsPresets: a server measured as it is is one of the calculator's
// starting points: the workers it behaves as (rounded, as its ceiling) and
// its call's own time, the share left to the reader (its ceiling comes
// from its own plateau).
func TestAsIsPresets(t *testing.T) {
	f, err := Read("testdata/asis-netty-run")
	if err != nil {
		t.Fatal(err)
	}
	ps := f.Presets()
	if len(ps) != 1 {
		t.Fatalf("presets %+v, want the shop's", ps)
	}
	a := f.AsIs[0]
	if p := ps[0]; p.Server != "shop" || p.Workers != 4 || p.Block != a.CallTime() || p.Share != 0 || !p.AsIs {
		t.Errorf("preset %+v, want 4 workers and the call's %v", p, a.CallTime())
	}
}

// TestAsIsProberLate: a repetition whose 12-connection prober started its
// clock late (placed past its allowance, its window ran on past the
// load's end, unloaded) is not judged, and says so: its stalled
// connections' medians would be lowered by the probes after the load.
// The others are judged and counted as judged.
func TestAsIsProberLate(t *testing.T) {
	late := asIsGroups(asIsRep{conc: 1, p50Ms: 5, tps: 190, waits: twelve(1, 9, 1, 1), unloaded: 0.3, lateMs: 400})
	a := asIsOf(late, Params{})[0]
	st := a.Steps[0]
	if st.Stalled.OK() || st.Judged != 0 || len(st.Unjudged) != 1 || st.Unjudged[0].Offset != 400*time.Millisecond || st.Unjudged[0].Busy ||
		!strings.Contains(AsIsSaid.Unjudged(st, st.Unjudged[0]), "window began 400ms after the load's") || AsIsSaid.Stalled(st) != "not judged" || a.Class != ClassUnknown || a.Case != AsIsNotJudged {
		t.Errorf("a prober 400 ms late: %v judged (%d), %+v, %q; class %s", st.Stalled, st.Judged, st.Unjudged, AsIsSaid.Stalled(st), a.Class)
	}
	// Two repetitions, the second's prober late: the first is judged, the
	// second said and counted.
	g := asIsGroups(asIsRep{conc: 1, p50Ms: 5, tps: 190, waits: twelve(1, 9, 1, 1), unloaded: 0.3, lateMs: 5})[0]
	rep := late[0].Reps[0]
	rep.M.Repeat = 2
	g.Reps = append(g.Reps, rep)
	g.Load, g.Conns, g.Probe = append(g.Load, rep.Load), append(g.Conns, rep.Conns), append(g.Probe, rep.Probe)
	st = asIsOf([]*Group{g}, Params{})[0].Steps[0]
	if st.Judged != 1 || len(st.Unjudged) != 1 || st.Unjudged[0].Repeat != 2 || !strings.HasPrefix(AsIsSaid.Unjudged(st, st.Unjudged[0]), "repetition 2: the 12 connections' window began 400ms after") ||
		AsIsSaid.Stalled(st) != "3 of 12 (1 of 2 repetitions judged)" {
		t.Errorf("one of two repetitions late: %d judged, %+v, %q", st.Judged, st.Unjudged, AsIsSaid.Stalled(st))
	}
}

// TestAsIsForgivenLikeForLike: a pool's forgiveness compares its 12
// connections' median wait with their own wait unloaded, both from the
// send by one prober, not the interval bystander's median from due with
// the 12 connections' unloaded: two probers and two clocks. Here the
// interval bystander's probes left late on a busy machine (3 ms from due)
// while the 12 connections waited 0.3 ms, as unloaded: 1.0x, not 10x.
func TestAsIsForgivenLikeForLike(t *testing.T) {
	a := asIsOf(asIsGroups(
		asIsRep{conc: 1, p50Ms: 5, tps: 190, waits: twelve(0.3), unloaded: 0.3, fast: 3},
		asIsRep{conc: 4, p50Ms: 5, tps: 760, waits: twelve(0.6), unloaded: 0.3, fast: 3},
	), Params{})[0]
	if a.Class != ClassPool || a.Forgives != 4 {
		t.Fatalf("class %s forgiving %d: %s", a.Class, a.Forgives, AsIsSaid.Class(a))
	}
	if r, ok := a.WaitOverUnloaded(a.Steps[0]); !ok || r != 1 {
		t.Errorf("at 1 caller: %v (%v), want 1.0: the connections' 0.3 ms over their 0.3 ms unloaded", r, ok)
	}
	if r, ok := a.WaitOverUnloaded(a.Steps[1]); !ok || r != 2 {
		t.Errorf("at 4 callers: %v (%v), want 2.0", r, ok)
	}
	if got := AsIsSaid.Class(a); !strings.Contains(got, "its 12 connections' median wait 2.0x their wait unloaded") || strings.Contains(got, "x its wait unloaded") {
		t.Errorf("class text %q: want the connections' own ratio, not the interval bystander's", got)
	}
}
