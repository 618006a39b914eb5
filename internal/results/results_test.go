package results

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/hist"
)

func full() *Result {
	start := time.Unix(1796025321, 50679074)
	r := New("loadgen", "open", start, Params{Target: "http://127.0.0.1:8081/slow", Conns: 8, DurationNs: 5e9, WarmupNs: 1e9,
		TimeoutNs: 1e10, RatePerS: 500, IntervalNs: 5e7, StallThresholdNs: 5e7, DelayNs: 5e6, StallBlock: 1e8, StartAtUnixNs: 1796025321e9,
		Request: "@targets.txt: 3 requests", Args: []string{"--conc", "8"}})
	h := hist.New()
	h.Record(3 * time.Millisecond)
	p := h.Summary()
	r.Errors = []ErrorCount{{"refused", 1}, {"reset", 0}}
	r.Generator = Cost{CPUNs: 100, CPUUsPerRequest: 1.5, Requests: 10}
	r.Load = &Load{Requests: 10, MeasuredNs: 5e9, ThroughputPerS: 2, Latency: p, LatencyUncorrected: &p,
		PerSecond: []Second{{0, 5, 0}}, RequestsPerLoop: []LoopCount{{0, 5}, {1, 5}}, ConnsPerLoop: []LoopCount{{0, 4}, {1, 4}}, MeanBlockedNs: 5.1e6,
		BlockedSamples: 10, MeanQueuedNs: 3, WarmupRequests: 2, Dials: 8, BehindSchedule: 1}
	r.Probe = &Probe{WindowNs: 5e9, Due: 4, Completed: 2, Failed: 1, Censored: 1, Late: 1, Corrected: p, Uncorrected: p, SendLag: p,
		Conns: []ConnLoop{{0, 2}}, Timeline: []ProbePoint{{0, 2, 1, 2, 3, 200, "", false}, {0, 2, 4, 5, 6, 0, "reset", false}, {0, 2, 7, 0, 9, 0, "", true}}}
	r.PerConn = &PerConn{IntervalNs: 1e7, DelayNs: 5e6, BaselineUs: 5500, QuickestPlacingUs: 300, PlacedConcurrently: true, Spread: []LoopCount{{0, 3}},
		Conns: []ConnStat{{Conn: 0, Loop: 0, Due: 10, Samples: 9, Censored: 1, Errors: 1, Latency: p, FromSend: p, ServerWait: p, SendLate: p}}}
	r.Trace = &Trace{Samples: []TraceSample{{0, 1, 2, 3, 4, 5, 6, 7, 8}}, SamplesDropped: 1, Accepted: p, Lateness: p, Return: p, Total: p}
	r.Finish(start.Add(6*time.Second), "interrupted")
	return r
}

func TestRoundTrip(t *testing.T) {
	r := full()
	path := filepath.Join(t.TempDir(), "r.json")
	if err := Write(path, r); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip changed the result:\n%+v\n%+v", got, r)
	}
	if !got.Partial || got.PartialReason != "interrupted" || got.EndUnixNs-got.StartUnixNs != 6e9 {
		t.Fatalf("partial/end: %+v", got)
	}
	b, _ := os.ReadFile(path)
	for _, field := range []string{`"schema": "bystander.results/v5"`, `"request": "@targets.txt: 3 requests"`, `"hdr_base64"`, `"server_wait"`, `"send_late"`, `"p99_9_us"`, `"duration_ns"`, `"throughput_per_s"`, `"cpu_model"`} {
		if !strings.Contains(string(b), field) {
			t.Errorf("the file lacks %s", field)
		}
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".result-*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestDecodeRefuses(t *testing.T) {
	for name, doc := range map[string]string{
		"other version": `{"schema":"bystander.results/v1"}`,
		"unknown field": `{"schema":"bystander.results/v3","surprise":1}`,
		"not json":      `results`,
	} {
		if _, err := Decode([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestReadsV2: a v2 per-connection result (its prober's own verdict
// inside) reads as it is; the verdict fields are kept, not used.
func TestReadsV2(t *testing.T) {
	doc := `{"schema":"bystander.results/v2","tool":"prober","mode":"perconn","partial":false,"start_unix_ns":1,"end_unix_ns":2,"start_utc":"","end_utc":"",
"params":{"target":"t","conns":1,"duration_ns":1,"warmup_ns":0,"timeout_ns":1,"stall_threshold_ns":5,"args":[]},"env":{"go_version":"","gomaxprocs":1,"num_cpu":1,"cpu_model":"","kernel":"","os":"","arch":""},
"errors":[],"generator":{"cpu_ns":0,"cpu_us_per_request":0,"requests":0},
"perconn":{"interval_ns":1,"baseline_us":5,"stall_threshold_ns":55,"stall_rule":"r","spread":[],"conns":[{"conn":0,"loop":0,"due":1,"samples":1,"censored":0,"errors":0,
"latency":{"count":1,"min_us":1,"mean_us":1,"p50_us":1,"p90_us":1,"p95_us":1,"p99_us":1,"p99_9_us":1,"max_us":1},
"latency_from_send":{"count":1,"min_us":1,"mean_us":1,"p50_us":1,"p90_us":1,"p95_us":1,"p99_us":1,"p99_9_us":1,"max_us":1},"stalled":true}],"stalled":1}}`
	r, err := Decode([]byte(doc))
	if err != nil || r.PerConn == nil || r.PerConn.Conns[0].ServerWait.Count != 0 {
		t.Fatalf("%v %+v", err, r)
	}
}

func TestEnv(t *testing.T) {
	e := ReadEnv()
	if e.GoVersion == "" || e.NumCPU < 1 || e.GOMAXPROCS < 1 || e.Kernel == "" {
		t.Fatalf("%+v", e)
	}
}

func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	if err := CheckWritable(filepath.Join(dir, "r.json")); err != nil {
		t.Fatal(err)
	}
	if err := CheckWritable(filepath.Join(dir, "missing", "r.json")); err == nil {
		t.Fatal("a missing directory is writable")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".result-check-*")); len(left) != 0 {
		t.Fatalf("left %v", left)
	}
}

func TestOutcomeAndMedian(t *testing.T) {
	m := Measurement{Status: "failed", Reason: "the server died: exit 2\n    its stderr ends: boom"}
	if got := m.Outcome(); got != "failed: the server died: exit 2" {
		t.Errorf("Outcome %q", got)
	}
	if got := (Measurement{Status: "ok"}).Outcome(); got != "ok" {
		t.Errorf("Outcome %q", got)
	}
	if Median([]float64{5, 1, 3}) != 3 || Median([]float64{1, 2}) != 1.5 || Median(nil) != 0 {
		t.Error("Median")
	}
}

// TestRunRoundTrip: run.json reads back as written, and ReadRun refuses
// unknown fields and other versions as Decode does.
func TestRunRoundTrip(t *testing.T) {
	dir := t.TempDir()
	step := Step{ID: "sweep-pool-c4", Phase: "sweep", Server: Server{Name: "pool", Kind: "pool", Workers: 200},
		Endpoint: "/slow", Conc: 4, Duration: 5 * time.Second, Warmup: time.Second, Block: Block(5 * time.Millisecond)}
	asIs := Step{ID: "sweep-svc-c1", Phase: "sweep", Server: Server{Name: "svc", Kind: "other", External: true, URL: "http://127.0.0.1:8080", PID: 9,
		Load: "POST /login (+body 43 B)", Bystander: "@targets.txt: 3 requests"}, Endpoint: "POST /login (+body 43 B)", Conc: 1, Duration: 5 * time.Second}
	r := &Run{
		Schema: RunSchema, Partial: true, PartialReason: "interrupted",
		Params: RunParams{Block: Block(5 * time.Millisecond), StallBlock: Block(100 * time.Millisecond), Conc: []int{4}, DurationNs: 5e9, WarmupNs: 1e9, Engines: []string{"gnet"},
			Servers: []string{"pool"}, Phases: []string{"sweep"}, Repeat: 1, Args: []string{"--conc=4"}, Loops: 4, PoolSlots: 200,
			ProbeEveryNs: 5e7, BlockMode: "syscall", OffloadWorkers: 200, AsyncDelayNs: 5e6, StallConns: 12, StallIntervalNs: 1e7,
			TraceCallers: 8, TraceConns: 12},
		Manifest: Manifest{GitCommit: "abc", GoVersion: "go1.26", Kernel: "6", CPUModel: "cpu", Cores: 2, StartUnixNs: 1, EndUnixNs: 2,
			StartUTC: "a", EndUTC: "b", ExpectedNs: 3},
		Measurements: []Measurement{{Step: step, Repeat: 1, Status: "ok", LoadFile: "sweep/a.load.json", ProbeFile: "sweep/a.fast.json",
			Use: &Use{WindowNs: 4e9, Cores: 2, MachineBusy: 0.45, Server: &ProcUse{CPUNs: 1e9, VolCtxSw: 10, InvolCtxSw: 2, RunqWaitNs: 3e6, Threads: 9, PeakRSSBytes: 4e6},
				Generator: &ProcUse{CPUNs: 2e8}, Prober: &ProcUse{CPUNs: 1e7}},
			Notes: []string{"prober: started 20ms after --start-at"}},
			{Step: asIs, Repeat: 1, Status: "ok", LoadFile: "sweep/b.load.json", ProbeFile: "sweep/b.fast.json", PerConnFile: "sweep/b.perconn.json",
				Use: &Use{WindowNs: 4e9, Cores: 2, Generator: &ProcUse{CPUNs: 2e8}, Prober: &ProcUse{CPUNs: 1e7}, Conns: &ProcUse{CPUNs: 3e7},
					Server: &ProcUse{CPUNs: 5e8, Busiest: &ThreadCPU{Name: "nioEventLoopGroup-3-2", CPUNs: 4e8, RunqWaitNs: 1e8}}}}},
		Processes: []Process{{PID: 7, Name: "poolserver"}},
		Report:    "report.html",
	}
	if err := WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip changed run.json:\n%+v\n%+v", got, r)
	}
	for name, doc := range map[string]string{
		"other version":            `{"schema":"bystander.run/v1"}`,
		"unknown field":            `{"schema":"bystander.run/v3","surprise":1}`,
		"unknown in a measurement": `{"schema":"bystander.run/v3","measurements":[{"bound":{}}]}`,
	} {
		if _, err := DecodeRun([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// v4 only added optional fields: a v3 run reads as it is.
	if r, err := DecodeRun([]byte(`{"schema":"bystander.run/v3","measurements":[{"id":"x","server":{"name":"pool","kind":"pool"}}]}`)); err != nil || r.Measurements[0].Server.External {
		t.Errorf("a v3 run: %v", err)
	}
	// v5 only added the optional stage: a v4 run reads as it is, not on stage.
	if r, err := DecodeRun([]byte(`{"schema":"bystander.run/v4","params":{"sweep_endpoint":"/slow"}}`)); err != nil || r.Params.Stage {
		t.Errorf("a v4 run: %v", err)
	}
	// v11 only added what a server measured as it is was asked: a v10 run
	// reads as it is, every server the protocol's.
	if r, err := DecodeRun([]byte(`{"schema":"bystander.run/v10","measurements":[{"id":"x","server":{"name":"a","external":true}}]}`)); err != nil || r.Measurements[0].Server.AsIs() {
		t.Errorf("a v10 run: %v", err)
	}
	if r, err := DecodeRun([]byte(`{"schema":"` + RunSchema + `","measurements":[{"id":"x","server":{"name":"a","load":"GET /x"}}]}`)); err != nil || !r.Measurements[0].Server.AsIs() {
		t.Errorf("a server as it is: %v", err)
	}
	if r, err := DecodeRun([]byte(`{"schema":"` + RunSchema + `","params":{"stage":true}}`)); err != nil || !r.Params.Stage {
		t.Errorf("a stage run: %v", err)
	}
	// v6 keeps /proc's raw figures (use) instead of the cost: a v5 run
	// reads as it is, its cost as stored.
	if r, err := DecodeRun([]byte(`{"schema":"bystander.run/v5","measurements":[{"id":"x","cost":{"server_cpu_us_per_request":12}}]}`)); err != nil ||
		r.Measurements[0].Cost == nil || r.Measurements[0].Cost.ServerCPUUsPerRequest != 12 || r.Measurements[0].Use != nil {
		t.Errorf("a v5 run: %v", err)
	}
}

// TestBlockOneRoad: a step's block is its params' (BlockOf), never written
// with the step; a v12 run, whose servers said theirs too, reads when they
// agree and is refused, said so, when one does not; a v13 run whose server
// says a block, or whose slip step its slip block, is refused.
func TestBlockOneRoad(t *testing.T) {
	const v12 = `{"schema":"bystander.run/v12","params":{"block_ns":5000000,"stall_block_ns":100000000,"slip_block_ns":50000000,
		"targets":[{"name":"t","block_ns":5000000}]},"measurements":[
		{"id":"sweep-pool-c4","phase":"sweep","server":{"name":"pool","block_ns":%d}},
		{"id":"slip-pool","phase":"slip","server":{"name":"pool","block_ns":5000000},"slip_block_ns":%d,"slip_at_ns":1},
		{"id":"stall-pool-k4","phase":"stall","server":{"name":"pool","block_ns":100000000}},
		{"id":"sweep-svc-c1","phase":"sweep","server":{"name":"svc","load":"GET /x","block_ns":0}}]}`
	r, err := DecodeRun([]byte(fmt.Sprintf(v12, 5000000, 50000000)))
	if err != nil {
		t.Fatalf("a v12 run whose steps agree with its params: %v", err)
	}
	for i, want := range []time.Duration{5 * time.Millisecond, 5 * time.Millisecond, 100 * time.Millisecond, 0} {
		m := r.Measurements[i]
		if m.Block.D() != want || m.Server.LegacyBlockNs != 0 {
			t.Errorf("%s: block %s (legacy %d), want %s from the params", m.ID, m.Block, m.Server.LegacyBlockNs, want)
		}
		if slip := r.Measurements[i].SlipBlock; (m.Phase == "slip") != (slip == Block(50*time.Millisecond)) || m.LegacySlipBlockNs != 0 {
			t.Errorf("%s: slip block %s (legacy %d), want 50ms in the slip phase alone", m.ID, slip, m.LegacySlipBlockNs)
		}
	}
	if r.Params.Targets[0].LegacyBlockNs != 0 {
		t.Error("a target's legacy block_ns kept")
	}
	// What is written again says no server's block.
	dir := t.TempDir()
	r.Schema = RunSchema
	if err := WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "run.json")); err != nil || (strings.Count(string(b), `"block_ns"`) != 1 || strings.Count(string(b), `"slip_block_ns"`) != 1) {
		t.Errorf("run.json written with a block_ns beside the params' (%v):\n%s", err, b)
	}
	if back, err := ReadRun(dir); err != nil || !reflect.DeepEqual(back, r) {
		t.Errorf("round trip: %v", err)
	}
	_, err = DecodeRun([]byte(fmt.Sprintf(v12, 5000000, 20000000)))
	if err == nil || !strings.Contains(err.Error(), "slip-pool slowed to 20ms, its params say 50ms") {
		t.Errorf("a v12 run whose slip step slowed to another block than its params: %v", err)
	}
	_, err = DecodeRun([]byte(fmt.Sprintf(v12, 7000000, 50000000)))
	if err == nil || !strings.Contains(err.Error(), "sweep-pool-c4 asked for 7ms, its params say 5ms") {
		t.Errorf("a v12 run whose step asked another block than its params: %v", err)
	}
	_, err = DecodeRun([]byte(`{"schema":"` + RunSchema + `","measurements":[{"id":"x","server":{"name":"a","block_ns":5000000}}]}`))
	if err == nil || !strings.Contains(err.Error(), "block_ns") {
		t.Errorf("a v13 server saying its block: %v", err)
	}
	_, err = DecodeRun([]byte(`{"schema":"` + RunSchema + `","measurements":[{"id":"slip-a","phase":"slip","slip_block_ns":5000000}]}`))
	if err == nil || !strings.Contains(err.Error(), "slip_block_ns") {
		t.Errorf("a v13 step saying its slip block: %v", err)
	}
	var b Block
	if err := b.Set("1.5ms"); err != nil || b.D() != 1500*time.Microsecond || b.String() != "1.5ms" || b.Ms() != 1.5 {
		t.Errorf("Set 1.5ms: %s %v", b, err)
	}
	if err := b.Set("5"); err == nil {
		t.Error("Set 5 (no unit): accepted")
	}
}

// TestStrict: run.json and results are read as the README promises:
// nothing after the value, keys spelled exactly, no negative count or
// duration (a loop may be -1: none).
func TestStrict(t *testing.T) {
	for name, doc := range map[string]string{
		"trailing garbage":       `{"schema":"bystander.run/v6"} <script>`,
		"a second value":         `{"schema":"bystander.run/v6"}{"schema":"bystander.run/v6"}`,
		"a key in capitals":      `{"SCHEMA":"bystander.run/v6"}`,
		"a key in another case":  `{"schema":"bystander.run/v6","params":{"Block_NS":5}}`,
		"a negative block":       `{"schema":"bystander.run/v6","params":{"block_ns":-5}}`,
		"a negative repetition":  `{"schema":"bystander.run/v6","measurements":[{"id":"x","repeat":-1}]}`,
		"a negative use":         `{"schema":"bystander.run/v6","measurements":[{"id":"x","use":{"window_ns":-1}}]}`,
		"a negative in a nested": `{"schema":"bystander.run/v6","measurements":[{"id":"x","server":{"workers":-4}}]}`,
	} {
		if _, err := DecodeRun([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	if _, err := Decode([]byte(`{"schema":"bystander.results/v3","perconn":{"interval_ns":1,"baseline_us":1,"spread":[],"conns":[{"conn":0,"loop":-1,"due":-3}]}}`)); err == nil ||
		!strings.Contains(err.Error(), "perconn.conns[0].due") {
		t.Errorf("a negative count in a result: %v", err)
	}
	if _, err := Decode([]byte(`{"schema":"bystander.results/v3","perconn":{"interval_ns":1,"baseline_us":1,"spread":[],"conns":[{"conn":0,"loop":-1,"due":3}]}}`)); err != nil {
		t.Errorf("a connection without a loop (-1): %v", err)
	}
	// Whitespace after the value is no data.
	if _, err := DecodeRun([]byte("{\"schema\":\"bystander.run/v6\"}\n\n")); err != nil {
		t.Errorf("a trailing newline: %v", err)
	}
}
