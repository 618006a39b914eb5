package prose

import (
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/findings"
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

// TestBoundWords: the rule that says what bounds a row, from the measured
// ceilings and the measured use of the machine, and its words.
func TestBoundWords(t *testing.T) {
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
			b := findings.BoundOf(tc.step, tc.lr, tc.c, 200)
			if b.Kind != tc.kind || b.Flagged != tc.flagged || b.LittleOK != tc.little {
				t.Fatalf("kind %s flagged %v little %.3f ok %v, want %s %v %v: %s", b.Kind, b.Flagged, b.Little, b.LittleOK, tc.kind, tc.flagged, tc.little, BoundLine(b))
			}
			if tc.share > 0 && (b.Share < tc.share-0.001 || b.Share > tc.share+0.001) {
				t.Errorf("share %.4f, want %.4f", b.Share, tc.share)
			}
			if !strings.Contains(BoundText(b), tc.text) {
				t.Errorf("text %q lacks %q", BoundText(b), tc.text)
			}
			if len(BoundNotes(b)) != len(tc.notes) {
				t.Fatalf("notes %q, want %q", BoundNotes(b), tc.notes)
			}
			for i, n := range tc.notes {
				if !strings.HasPrefix(BoundNotes(b)[i], n) {
					t.Errorf("note %q, want %q", BoundNotes(b)[i], n)
				}
			}
		})
	}
	if findings.BoundOf(results.Step{}, nil, nil, 200) != nil {
		t.Error("a bound without a load")
	}
}

// TestBlockOffText: a measured block within 10 % of the asked one is not
// remarked; beyond, in either direction, it is, with the figures.
func TestBlockOffText(t *testing.T) {
	for _, tc := range []struct {
		asked    time.Duration
		measured float64
		want     string
	}{
		{5 * time.Millisecond, 5.4e6, ""}, {5 * time.Millisecond, 4.6e6, ""}, {5 * time.Millisecond, 0, ""}, {0, 5e6, ""},
		{5 * time.Millisecond, 5.6e6, "the server blocked 5.6ms where 5ms was asked (+12%)"},
		{100 * time.Millisecond, 5.1e6, "the server blocked 5.1ms where 100ms was asked (-95%)"},
	} {
		if got := BlockOffText(tc.asked, tc.measured); got != tc.want {
			t.Errorf("BlockOffText(%s, %.0f) = %q, want %q", tc.asked, tc.measured, got, tc.want)
		}
	}
	r := findings.LoadRow{Group: &findings.Group{Step: results.Step{Server: results.Server{}, Block: 5e6}}, MeasuredBlock: findings.Figure{5.05e6}}
	if got := BlockedText(r); got != "5.05ms" {
		t.Errorf("BlockedText %q", got)
	}
	r.MeasuredBlock = findings.Figure{20.6e6}
	if got := BlockedText(r); got != "20.6ms (+312% of the 5ms asked)" {
		t.Errorf("BlockedText %q", got)
	}
	if got := BlockedText(findings.LoadRow{Group: r.Group}); got != "not said" {
		t.Errorf("BlockedText %q", got)
	}
}
