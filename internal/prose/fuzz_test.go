package prose

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/hist"
	"github.com/bystander-kit/bystander/internal/outside"
	"github.com/bystander-kit/bystander/internal/results"
)

// smallRunDir writes a small run directory, one result of each kind (a
// real run's are megabytes: too slow to fuzz over), and returns it with
// its run.json.
func smallRunDir(t testing.TB) (string, []byte) {
	dir := t.TempDir()
	h := hist.New()
	h.Record(5 * time.Millisecond)
	p := h.Summary()
	now := time.Unix(1_800_000_000, 0)
	write := func(rel string, r *results.Result) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := results.Write(filepath.Join(dir, rel), r); err != nil {
			t.Fatal(err)
		}
	}
	load := results.New("loadgen", "closed", now, results.Params{Conns: 4})
	load.Load = &results.Load{Requests: 700, MeasuredNs: 1e9, ThroughputPerS: 700, Latency: p, MeanBlockedNs: 5.1e6, BlockedSamples: 700,
		RequestsPerLoop: []results.LoopCount{{Loop: 1, Count: 700}}, ConnsPerLoop: []results.LoopCount{{Loop: 1, Count: 4}}}
	write("sweep/load.json", load)
	probe := results.New("prober", "interval", now, results.Params{IntervalNs: 5e7})
	probe.Probe = &results.Probe{WindowNs: 1e9, Due: 20, Completed: 20, Corrected: p, Uncorrected: p, SendLag: p,
		Timeline: []results.ProbePoint{{Conn: 0, Loop: 0, DueUs: 1, SentUs: 2, DoneUs: 3, Status: 200}}}
	write("sweep/fast.json", probe)
	pc := results.New("prober", "perconn", now, results.Params{StallBlock: 4e7})
	pc.PerConn = &results.PerConn{IntervalNs: 1e7, DelayNs: 5e6, Conns: []results.ConnStat{
		{Conn: 0, Loop: 1, Due: 10, Samples: 10, Latency: p, FromSend: p, ServerWait: p, SendLate: p},
		{Conn: 1, Loop: -1, Due: 10, Samples: 0, Latency: p}}}
	write("stall/conns.json", pc)
	tr := results.New("prober", "trace", now, results.Params{DelayNs: 5e6})
	tr.Trace = &results.Trace{Samples: []results.TraceSample{{Conn: 0, Loop: 1, TotalUs: 100}}, Accepted: p, Lateness: p, Return: p, Total: p}
	write("trace/trace.json", tr)
	// What the outside view saw: one thread from its event wait into a
	// sleep, and a JVM's stack for it.
	th := func(call string) []outside.Thread {
		return []outside.Thread{{TID: 9, Comm: "loop-1", State: "S", Syscall: call}}
	}
	threads := outside.Trace{Schema: outside.Schema, Server: "s-loop", PID: 9, BlockersEndNs: 2e9,
		Before: []outside.Look{{TimeNs: 1, Threads: th("232")}, {TimeNs: 2, Threads: th("232")}},
		During: []outside.Look{{TimeNs: 1e9, Threads: th("35")}, {TimeNs: 1.04e9, Threads: th("35")}},
		JVM: []outside.JVM{{StartNs: 1.1e9, EndNs: 1.2e9, Dump: "\"loop-1\" #1 nid=0x9 waiting\n   java.lang.Thread.State: TIMED_WAITING (sleeping)\n" +
			"\tat java.lang.Thread.sleep(java.base@17/Native Method)\n\tat app.Handler.read(Handler.java:12)\n"}}}
	if b, err := json.Marshal(threads); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(filepath.Join(dir, "stall/threads.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	step := func(id, phase, kind string, k int) results.Step {
		return results.Step{ID: id, Phase: phase, Server: results.Server{Name: "s-" + kind, Kind: kind, Workers: 4}, Endpoint: "/slow", Conc: 4, K: k, Block: 5e6}
	}
	run := &results.Run{Schema: results.RunSchema, Params: results.RunParams{StallBlock: 4e7, Conc: []int{4}, Loops: 4, PoolSlots: 200, Repeat: 1},
		Measurements: []results.Measurement{
			{Step: step("sweep-a", "sweep", "loop", 0), Repeat: 1, Status: "ok", LoadFile: "sweep/load.json", ProbeFile: "sweep/fast.json",
				Use: &results.Use{WindowNs: 1e9, Cores: 2, MachineBusy: 0.5, Server: &results.ProcUse{CPUNs: 1e8}}},
			{Step: step("stall-a", "stall", "loop", 1), Repeat: 1, Status: "ok", LoadFile: "sweep/load.json", PerConnFile: "stall/conns.json", ThreadsFile: "stall/threads.json"},
			{Step: step("offload-a", "offload", "pool", 0), Repeat: 1, Status: "ok", LoadFile: "sweep/load.json", ProbeFile: "sweep/fast.json"},
			{Step: step("trace-a", "trace", "loop", 0), Repeat: 1, Status: "ok", LoadFile: "sweep/load.json", TraceFile: "trace/trace.json"},
			{Step: step("cliff-a", "cliff", "pool", 0), Repeat: 1, Status: "failed", Reason: "it died"},
		}}
	b, err := json.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	return dir, b
}

// FuzzRunDir: whatever a stranger's run.json holds, reading it either
// refuses it with an error or yields findings that compute and print
// without a panic; the files it names are read confined to the directory.
func FuzzRunDir(f *testing.F) {
	dir, seed := smallRunDir(f)
	f.Add(seed)
	f.Add([]byte(`{"schema":"bystander.run/v6","measurements":[{"id":"x","phase":"stall","status":"ok","perconn_file":"../../x","load_file":"sweep/load.json","repeat":1}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		run, err := results.DecodeRun(b)
		if err != nil {
			return
		}
		fd := findings.Compute(dir, run)
		WriteTables(io.Discard, fd)
		_ = fd.Published()
	})
}
