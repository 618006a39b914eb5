package findings

import (
	"strings"
	"testing"
)

// TestClasses: on real runs, the loop servers are loops (exactly 3k of
// 12), the pool a pool of its 200 slots, measured from its cliff.
// (prose's TestClassWords says them.)
func TestClasses(t *testing.T) {
	f, err := Read(realRun)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Class{}
	for _, c := range f.Classes() {
		got[c.Server] = c
	}
	if c := got["loop-gnet"]; c.Class != ClassLoop || c.Loops != 4 || c.Case != ClassedWholeLoops || !stalls3k(c.Stalls) {
		t.Errorf("loop-gnet: %+v", c)
	}
	if c := got["pool"]; c.Class != ClassPool || c.ServedAtOnce != 200 || c.Configured != 200 || c.Callers != 300 || c.Case != ClassedPoolSlots || c.Workers != 200 {
		t.Errorf("pool: %+v", c)
	}
	// Every Go server the kit starts, measured in one run
	// (./run.sh --servers=loop,pool,nethttp,fasthttp,netpoll
	// --engines=gnet,evio,nbio --quick --phases=sweep,stall,cliff): the
	// three loop engines stall exactly 3k of 12; the others stall nobody,
	// the pool with its 200 slots measured, the goroutine servers with a
	// thread per blocked request.
	eng, err := Read("testdata/engines-run")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"loop-gnet": ClassLoop, "loop-evio": ClassLoop, "loop-nbio": ClassLoop, "pool": ClassPool,
		"nethttp": ClassThreads, "fasthttp": ClassThreads, "netpoll": ClassThreads}
	seen := 0
	for _, c := range eng.Classes() {
		seen++
		if c.Class != want[c.Server] {
			t.Errorf("%s: %s (%+v), want %s", c.Server, c.Class, c, want[c.Server])
		}
		switch c.Class {
		case ClassLoop:
			if !stalls3k(c.Stalls) || c.Loops != 4 {
				t.Errorf("%s: %+v", c.Server, c)
			}
		case ClassPool:
			if c.ServedAtOnce != 200 {
				t.Errorf("%s: served at once %d, want 200", c.Server, c.ServedAtOnce)
			}
		case ClassThreads:
			if c.Threads < c.Callers || c.Case != ClassedThreadEach || len(c.Stalls) == 0 || c.Stalls[0].Stalled.Median() != 0 {
				t.Errorf("%s: %+v", c.Server, c)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("%d servers classified, want %d", seen, len(want))
	}

	node, err := Read("testdata/node-run")
	if err != nil {
		t.Fatal(err)
	}
	if c := node.Classes()[0]; c.Class != ClassLoop || c.Loops != 1 || c.Case != ClassedWholeLoops {
		t.Errorf("node: %+v", c)
	}
}

// stalls3k: k blocked loops of 4 stalled 3k of 12 connections, exactly
// those on them.
func stalls3k(rows []StallRow) bool {
	for _, r := range rows {
		if r.Stalled.Median() != float64(3*r.Step.K) || r.Conns.Median() != 12 || !r.Match {
			return false
		}
	}
	return len(rows) == 4
}

// TestClassBoundaries: the same pool's rows, changed where each rule
// decides: a cliff that served every caller is no pool; with a thread per
// caller it holds one per blocked request, without, it parks them; a
// stall that is not whole loops, or not judged, is not classified.
func TestClassBoundaries(t *testing.T) {
	read := func() *Findings {
		f, err := Read(realRun)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	pool := func(f *Findings) Class {
		for _, sv := range f.Servers {
			if sv.Name == "pool" {
				return f.classify(sv)
			}
		}
		t.Fatal("no pool")
		return Class{}
	}
	// Every caller served at once: scale each cliff row's throughput to
	// its callers / block.
	servedAll := func(f *Findings) {
		for i, r := range f.Cliff {
			if r.Step.Server.Name != "pool" {
				continue
			}
			block := r.Bound().MeasuredBlock.Seconds()
			f.Cliff[i].Throughput = Figure{float64(r.Step.Conc) / block}
		}
	}
	threads := func(f *Findings, n int) {
		for i, r := range f.Cost {
			if strings.HasPrefix(r.ID, "cliff-pool-") {
				c := *r.Cost
				c.Threads = n
				f.Cost[i].Cost = &c
			}
		}
	}

	f := read()
	servedAll(f)
	threads(f, 305)
	if c := pool(f); c.Class != ClassThreads || c.Threads != 305 || c.Callers != 300 {
		t.Errorf("every caller served, 305 threads at 300 callers: %+v", c)
	}
	f = read()
	servedAll(f)
	threads(f, 269) // under 90 % of 300
	if c := pool(f); c.Class != ClassForgives {
		t.Errorf("every caller served, 269 threads at 300 callers: %+v", c)
	}
	f = read()
	threads(f, 305)
	if c := pool(f); c.Class != ClassPool || c.ServedAtOnce != 200 {
		t.Errorf("a plateau at 200 stays a pool of 200 whatever its threads: %+v", c)
	}

	// A pool of 200 whose cliff served 193 at once (its callers spent a
	// moment between calls) is said as configured and as measured: never
	// "a pool of 193".
	f = read()
	for i, r := range f.Cliff {
		if r.Step.Server.Name == "pool" {
			f.Cliff[i].Throughput = Figure{193 / r.Bound().MeasuredBlock.Seconds()}
		}
	}
	if c := pool(f); c.Class != ClassPool || c.ServedAtOnce != 193 || c.Configured != 200 || c.Case != ClassedPoolSlots {
		t.Errorf("a pool of 200 that served 193 at once: %+v", c)
	}

	// A stall where the blockers' loops were not exactly those stalled.
	f = read()
	for i, r := range f.Stall {
		if r.Step.Server.Name == "loop-gnet" && r.Step.K == 2 {
			f.Stall[i].Match = false
		}
	}
	for _, sv := range f.Servers {
		if sv.Name == "loop-gnet" {
			if c := f.classify(sv); c.Class != ClassUnknown || c.Case != ClassedNotWhole {
				t.Errorf("stalls not by whole loops: %+v", c)
			}
		}
	}
	// No stall measurement judged.
	f = read()
	for i, r := range f.Stall {
		if r.Step.Server.Name == "pool" {
			f.Stall[i].Judged, f.Stall[i].Unjudged = 0, []StallUnjudged{{Why: "machine too busy to judge: test"}}
		}
	}
	if c := pool(f); c.Class != ClassUnknown || c.Case != ClassedTooBusy || c.TooBusy == nil || c.TooBusy.Step.Server.Name != "pool" || !strings.Contains(c.TooBusy.Unjudged[0].Why, "too busy") {
		t.Errorf("nothing judged: %+v", c)
	}
}
