package results

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/files"
)

// RunSchema names the run index format. v2 (from v1): the block mode, the
// /async delay and the stall and trace probers' shapes are recorded;
// measurements keep their cost but no bound (internal/findings decides it
// from the data); the cost records the cores the whole machine and the
// probers used. v3 (from v2): a loop server's measurements name a loop-lag
// file (LagFile, format LagSchema) with what the server's own heartbeat and
// blocked-loop detector saw; nothing else changed, and a v2 run reads as a
// v3 run without lag once its schema line says v3. v4 (from v3): servers
// the user started are measured beside the kit's (--target): a server says
// whether it is external, where it is and its PID when known, a cost says
// when the server's own share was not measured, and the params list the
// targets; every field added is optional, so a v3 run reads as v4 as it is.
// v5 (from v4): the params say whether the run was given on stage (Stage,
// optional), so a v3 or v4 run reads as it is, as a run without the stage.
// v6 (from v5): a measurement keeps what its processes and the machine used
// over its measured window as read from /proc (Use: CPU, context switches,
// run-queue waits, threads, memory, the machine's busy share), for stall
// measurements too, instead of per-request figures (Cost): internal/findings
// derives those, once; and what the orchestrator noticed (Notes). A v3-v5
// run reads as it is, its Cost as stored. v7 (from v6): a process's use
// counts its run-queue waits (RunqWaits, how many times it was put on a
// CPU) beside their time, and for a server whose loops run on threads
// named for them (loop-N) each loop thread's (LoopThreads): how long a
// wake-up waited for a CPU, which tells a starved machine from a held
// loop. Both optional: a v3-v6 run reads as it is. v8 (from v7): a stall
// measurement names what the outside view saw of the server's threads
// (ThreadsFile); optional: a v3-v7 run reads as it is. v9 (from v8): with
// --block-mode postgres the params say each server's database connections
// and which database answered (DBPool, DB), a server its connections
// (DBConns), a measurement's use the private database's CPU (Use.DB), and
// a cost its share (DBCores, DBCPUUsPerRequest); all optional: a v3-v8 run
// reads as it is. v10 (from v9): the slip phase; a step says the block its
// load asks for from SlipAtNs into its measured window (SlipBlockNs), the
// params the slowed call asked for (SlipBlockNs); optional: a v3-v9 run
// reads as it is. v11 (from v10): a --target measured as it is (--load,
// --bystander) says the requests asked of it (Server.Load, Bystander: each
// request.Spec's String, never a header or a body), and a measurement's
// use the 12-connection prober that ran beside its load (Use.Conns), and
// a process's use its busiest thread (ProcUse.Busiest: which ran longest
// on a CPU); optional: a v3-v10 run reads as it is. v12 (from v11): such a
// server given a process (pid=) or a Go service's profiler (Server.Pprof)
// is measured at the sweep's top step twice, the second time watched
// (Step.Variant "watched"), and that measurement names what watching found
// (WatchFile, in the format bystander.watch/v1); optional: a v3-v11 run
// reads as it is. v13 (from v12): the block reaches a step by one road,
// the params (RunParams.BlockOf): a server no longer says its block_ns, a
// slip step its slip_block_ns. A v3-v12 run reads as it is when each
// step's block_ns and slip_block_ns are those its params give it (as in
// every run the kit wrote), and is refused, said so, when one is not.
const RunSchema = "bystander.run/v13"

// readableRunSchemas are the older run indexes DecodeRun reads as they are.
var readableRunSchemas = []string{"bystander.run/v3", "bystander.run/v4", "bystander.run/v5", "bystander.run/v6", "bystander.run/v7", "bystander.run/v8", "bystander.run/v9", "bystander.run/v10", "bystander.run/v11", "bystander.run/v12"}

// Run is run.json: the index of a run directory, written first and updated
// after every measurement, so an interrupted run still says what it did.
type Run struct {
	Schema        string        `json:"schema"`
	Partial       bool          `json:"partial"`
	PartialReason string        `json:"partial_reason,omitempty"`
	Params        RunParams     `json:"params"`
	Manifest      Manifest      `json:"manifest"`
	Measurements  []Measurement `json:"measurements"`
	Processes     []Process     `json:"processes"`
	Report        string        `json:"report,omitempty"`
	ReportNote    string        `json:"report_note,omitempty"`
}

// RunParams are the run's flags.
type RunParams struct {
	// Block is the call the sweep, offload and slip phases ask for,
	// StallBlock the stall, trace and cliff phases' (BlockOf).
	Block        Block    `json:"block_ns"`
	StallBlock   Block    `json:"stall_block_ns"`
	Conc         []int    `json:"conc"`
	DurationNs   int64    `json:"duration_ns"`
	WarmupNs     int64    `json:"warmup_ns"`
	Engines      []string `json:"engines"`
	Servers      []string `json:"servers"`
	Phases       []string `json:"phases"`
	Repeat       int      `json:"repeat"`
	Pin          bool     `json:"pin"`
	Quick        bool     `json:"quick"`
	Args         []string `json:"args"`
	Loops        int      `json:"loops"`
	PoolSlots    int      `json:"pool_slots"`
	ProbeEveryNs int64    `json:"probe_interval_ns"`
	// BlockMode is how the servers' blocking call blocks: syscall, sleep,
	// spin or postgres.
	BlockMode string `json:"block_mode"`
	// DBPool and DB, with --block-mode postgres: each Go server's database
	// connections, and which PostgreSQL answered ("PostgreSQL 15.18, private
	// to the run" or "PostgreSQL 16.2 at --pg-url").
	DBPool         int    `json:"db_pool,omitempty"`
	DB             string `json:"db,omitempty"`
	OffloadWorkers int    `json:"offload_workers"`
	AsyncDelayNs   int64  `json:"async_delay_ns"`
	// The stall phase: StallConns /async connections, each probed every
	// StallIntervalNs.
	StallConns      int   `json:"stall_conns"`
	StallIntervalNs int64 `json:"stall_interval_ns"`
	// The trace phase: TraceCallers blocking /slow while TraceConns take
	// /async apart.
	TraceCallers int `json:"trace_callers"`
	TraceConns   int `json:"trace_conns"`
	// Targets are the servers the user started (--target), as resolved
	// by their conformance check.
	Targets []Server `json:"targets,omitempty"`
	// SweepEndpoint is what the sweep loaded: /slow, or /offload (the fix);
	// empty in runs before v4, which loaded /slow.
	SweepEndpoint string `json:"sweep_endpoint,omitempty"`
	// Stage is true when the run was given as a talk (run.sh --stage): its
	// live page was served meanwhile, to a browser perhaps on this machine.
	Stage bool `json:"stage,omitempty"`
	// SlipBlock is the block the slip phase's load asks for from halfway
	// through its window (--slip-block), after Block.
	SlipBlock Block `json:"slip_block_ns,omitempty"`
}

// Manifest is where and when the run happened.
type Manifest struct {
	GitCommit   string `json:"git_commit"`
	GoVersion   string `json:"go_version"`
	Kernel      string `json:"kernel"`
	CPUModel    string `json:"cpu_model"`
	Cores       int    `json:"cores"`
	StartUnixNs int64  `json:"start_unix_ns"`
	EndUnixNs   int64  `json:"end_unix_ns"`
	StartUTC    string `json:"start_utc"`
	EndUTC      string `json:"end_utc"`
	ExpectedNs  int64  `json:"expected_ns"`
}

// Measurement is one step of one repetition and what came of it.
type Measurement struct {
	Step
	Repeat int    `json:"repeat"`
	Status string `json:"status"` // pending | ok | failed | skipped
	Reason string `json:"reason,omitempty"`
	// Files, relative to the run directory; empty when not produced.
	LoadFile    string `json:"load_file,omitempty"`
	ProbeFile   string `json:"probe_file,omitempty"`
	PerConnFile string `json:"perconn_file,omitempty"`
	TraceFile   string `json:"trace_file,omitempty"`
	LagFile     string `json:"lag_file,omitempty"`
	// ThreadsFile is what the outside view saw of the server's threads
	// (outside.Schema): the kit's Java servers and targets with pid=.
	ThreadsFile string `json:"threads_file,omitempty"`
	// WatchFile is what watching the server found over the measurement
	// (bystander.watch/v1, internal/watch): the watched step of a server
	// measured as it is (v12).
	WatchFile string `json:"watch_file,omitempty"`
	// Use is what the measurement's processes and the machine used over
	// its measured window (v6); nil when it was not read.
	Use *Use `json:"use,omitempty"`
	// Cost is a v3-v5 run's per-request figures, read as stored; a v6 run
	// keeps Use instead and internal/findings derives them.
	Cost *ServerCost `json:"cost,omitempty"`
	// Notes are what the orchestrator noticed about the measurement (a
	// tool that started late, /proc not read), said beside its figures.
	Notes []string `json:"notes,omitempty"`
}

// Use is what a measurement's processes and the whole machine used between
// two readings of /proc taken inside its measured window.
type Use struct {
	WindowNs int64 `json:"window_ns"`
	Cores    int   `json:"cores"`
	// MachineBusy is the share of all the machine's cores that were busy
	// (/proc/stat), every process counted.
	MachineBusy float64 `json:"machine_busy"`
	// Server is nil when the server's process is not known (a --target
	// without pid=, or remote); Generator is the load generator (or the
	// blockers of a stall measurement), Prober the prober; nil when absent.
	Server    *ProcUse `json:"server,omitempty"`
	Generator *ProcUse `json:"generator,omitempty"`
	Prober    *ProcUse `json:"prober,omitempty"`
	// Conns is the 12-connection prober that ran beside a load (a server
	// measured as it is, v11); nil when none did.
	Conns *ProcUse `json:"conns,omitempty"`
	// DB is the private PostgreSQL of --block-mode postgres, its server
	// and every process it started (CPU only; Threads counts processes);
	// nil when the run used none, or the user's (--pg-url).
	DB *ProcUse `json:"db,omitempty"`
}

// InWindow is ns over the window: cores for a process's CPU time, the
// window's share for a wait; 0 without a window.
func (u *Use) InWindow(ns int64) float64 {
	if u.WindowNs <= 0 {
		return 0
	}
	return float64(ns) / float64(u.WindowNs)
}

// ProcUse is what one process used over the window: deltas, but Threads
// (at the end) and PeakRSSBytes (its high-water mark).
type ProcUse struct {
	CPUNs      int64 `json:"cpu_ns"`
	VolCtxSw   int64 `json:"voluntary_ctx_switches"`
	InvolCtxSw int64 `json:"involuntary_ctx_switches"`
	RunqWaitNs int64 `json:"runq_wait_ns"`
	// RunqWaits is how many waits RunqWaitNs is the sum of (v7): the
	// times its threads were put on a CPU.
	RunqWaits    int64 `json:"runq_waits,omitempty"`
	Threads      int   `json:"threads"`
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// LoopThreads are the run-queue waits of the threads named for a loop
	// (loop-N), by loop (v7).
	LoopThreads []LoopThread `json:"loop_threads,omitempty"`
	// Busiest is the thread that wanted a CPU longest over the window: on
	// one, or runnable waiting for one (schedstat), by its name, a JVM's
	// own threads left out (proc.RuntimeThread) (v11); nil when not read.
	Busiest *ThreadCPU `json:"busiest_thread,omitempty"`
}

// ThreadCPU is one thread's time on a CPU over a window, and waiting,
// runnable, for one.
type ThreadCPU struct {
	Name       string `json:"name"`
	CPUNs      int64  `json:"cpu_ns"`
	RunqWaitNs int64  `json:"runq_wait_ns"`
}

// LoopThread is one loop's thread's run-queue waits over a window.
type LoopThread struct {
	Loop       int   `json:"loop"`
	RunqWaitNs int64 `json:"runq_wait_ns"`
	RunqWaits  int64 `json:"runq_waits"`
}

// ServerCost is what the server cost during the measured window, from /proc.
type ServerCost struct {
	Requests              int64   `json:"requests"`
	ServerCPUUsPerRequest float64 `json:"server_cpu_us_per_request"`
	CtxSwitchesPerRequest float64 `json:"ctx_switches_per_request"`
	Threads               int     `json:"threads"`
	PeakRSSBytes          int64   `json:"peak_rss_bytes"`
	ServerCores           float64 `json:"server_cores"`
	GeneratorCPUUsPerReq  float64 `json:"generator_cpu_us_per_request"`
	// GeneratorCores is the load generator's, ProberCores the bystander
	// prober's, MachineCores what every process of the machine used, all
	// over the measured window; Cores is how many the machine has.
	GeneratorCores float64 `json:"generator_cores"`
	// DBCores and DBCPUUsPerRequest are the private PostgreSQL's (0: none).
	DBCores           float64 `json:"db_cores,omitempty"`
	DBCPUUsPerRequest float64 `json:"db_cpu_us_per_request,omitempty"`
	ProberCores       float64 `json:"prober_cores"`
	MachineCores      float64 `json:"machine_cores"`
	Cores             int     `json:"cores"`
	MachineBusy       float64 `json:"machine_busy"`
	MeasuredBlockNs   float64 `json:"measured_block_ns"`
	ThroughputPerS    float64 `json:"throughput_per_s"`
	// ServerNotMeasured: a server the user started, without its PID (or
	// remote): the server's CPU, context switches, threads and memory are
	// not known and are 0 here; MachineCores includes the server when it
	// runs on this machine.
	ServerNotMeasured bool `json:"server_not_measured,omitempty"`
}

// Server is one server configuration the plan starts, or one the user
// started (External).
type Server struct {
	Name string `json:"name"` // loop-gnet, loop-evio, pool, or the --target's name
	// Kind: loop (event loops, X-Loop), pool (worker slots), or other (an
	// external server with neither loops nor workers known).
	Kind    string `json:"kind"`
	Engine  string `json:"engine"`  // gnet | evio | ""
	Workers int    `json:"workers"` // loops or slots; 0 when not known
	// LegacyBlockNs is the block a v3-v12 run said of each server: read,
	// checked against the params (DecodeRun) and cleared, never written
	// (v13: RunParams.BlockOf).
	LegacyBlockNs int64 `json:"block_ns,omitempty"`
	// DBConns are the database connections its blocking call can hold at
	// once (--block-mode postgres: its pool's size); 0 when it calls none.
	DBConns int `json:"db_conns,omitempty"`
	// External servers: where (the base URL), the PID when given (0: the
	// server's own cost is not measured), the offload pool's workers when
	// given, and how the loops or workers were learned.
	External       bool   `json:"external,omitempty"`
	URL            string `json:"url,omitempty"`
	PID            int    `json:"pid,omitempty"`
	OffloadWorkers int    `json:"offload_workers,omitempty"`
	Facts          string `json:"facts,omitempty"`
	// Load and Bystander, for a server measured as it is (--load and
	// --bystander: its own requests, no protocol), say what the sweep
	// loaded it with and what its bystanders asked, as request.Spec's
	// String says them ("POST /login (+body 43 B)", "@targets.txt: 3
	// requests"), never a header or a body; empty for every other server.
	Load      string `json:"load,omitempty"`
	Bystander string `json:"bystander,omitempty"`
	// Pprof, for a Go service measured as it is, is the listener that
	// serves its /debug/pprof/ (pprof=, http://HOST:PORT): watched through
	// its execution trace (v12).
	Pprof string `json:"pprof,omitempty"`
}

// Watched is the variant of a sweep's top step measured again, watched.
const Watched = "watched"

// Watchable says whether the server measured as it is can be watched: its
// process is known (pid=) or its profiler (pprof=).
func (s Server) Watchable() bool { return s.AsIs() && (s.PID > 0 || s.Pprof != "") }

// AsIs says whether the server was measured as it is: its own requests
// (--load), without the protocol.
func (s Server) AsIs() bool { return s.Load != "" }

// Step is one measurement of the plan.
type Step struct {
	ID       string        `json:"id"` // unique, also the file prefix
	Phase    string        `json:"phase"`
	Server   Server        `json:"server"`
	Endpoint string        `json:"endpoint"` // what is loaded: /slow or /offload
	Conc     int           `json:"conc"`     // callers (loaded connections)
	K        int           `json:"k"`        // stall: loops (or callers) blocked
	Variant  string        `json:"variant"`  // offload: blocking | offloaded | pool
	Duration time.Duration `json:"duration_ns"`
	Warmup   time.Duration `json:"warmup_ns"`
	// Block is the call the step's load asks for, and SlipBlock, in the
	// slip phase, what it asks for from SlipAtNs into the measured window
	// on: never written, always its run's RunParams.BlockOf and
	// SlipBlockOf (set by DecodeRun, and by the plan).
	Block     Block `json:"-"`
	SlipBlock Block `json:"-"`
	// LegacySlipBlockNs is the slip block a v10-v12 run said of each slip
	// step: read, checked against the params (DecodeRun) and cleared,
	// never written (v13: RunParams.SlipBlockOf).
	LegacySlipBlockNs int64 `json:"slip_block_ns,omitempty"`
	SlipAtNs          int64 `json:"slip_at_ns,omitempty"`
}

// Process is a child the run started, for the record (and the orphan test).
type Process struct {
	PID  int    `json:"pid"`
	Name string `json:"name"`
}

// WriteRun writes dir/run.json through a rename.
func WriteRun(dir string, r *Run) error {
	return writeJSON(filepath.Join(dir, "run.json"), r)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return files.WriteAtomic(path, append(b, '\n'), 0o644)
}

// ReadRun reads a run directory's index: confined, capped (MaxRunBytes),
// strictly decoded.
func ReadRun(dir string) (*Run, error) {
	b, err := files.ReadIn(dir, "run.json", MaxRunBytes)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	return DecodeRun(b)
}

// DecodeRun parses run.json strictly (see decodeStrict) and refuses other
// schema versions, as Decode does for a result.
func DecodeRun(b []byte) (*Run, error) {
	var r Run
	if err := decodeStrict(b, &r); err != nil {
		return nil, fmt.Errorf("results: run.json: %w", err)
	}
	if r.Schema != RunSchema && !slices.Contains(readableRunSchemas, r.Schema) {
		return nil, fmt.Errorf("results: run.json schema %q, want %q", r.Schema, RunSchema)
	}
	if err := r.settleBlocks(); err != nil {
		return nil, err
	}
	return &r, nil
}

// settleBlocks gives each step its block from the params (BlockOf), the
// one road, and each slip step its slip block. A v3-v12 run's servers said theirs too (block_ns): each said
// must be the one the params give, else the run is refused, for its
// figures would depend on which was read; a v13 run's servers say none.
func (r *Run) settleBlocks() error {
	for i := range r.Measurements {
		m := &r.Measurements[i]
		want := r.Params.BlockOf(m.Step)
		if got := m.Server.LegacyBlockNs; got != 0 {
			if r.Schema == RunSchema {
				return fmt.Errorf("results: run.json: measurement %s: its server says block_ns %d, which %s does not: the block is the params' (block_ns, stall_block_ns)", m.ID, got, RunSchema)
			}
			if got != int64(want) {
				return fmt.Errorf("results: run.json (%s): measurement %s asked for %s, its params say %s: the figures take the block from the params only; "+
					"make the params' block_ns or stall_block_ns what the run asked for, or measure again", r.Schema, m.ID, time.Duration(got), want)
			}
		}
		slip := r.Params.SlipBlockOf(m.Step)
		if got := m.LegacySlipBlockNs; got != 0 {
			if r.Schema == RunSchema {
				return fmt.Errorf("results: run.json: measurement %s says slip_block_ns %d, which %s does not: the slip block is the params' (slip_block_ns)", m.ID, got, RunSchema)
			}
			if got != int64(slip) {
				return fmt.Errorf("results: run.json (%s): measurement %s slowed to %s, its params say %s: the figures take the slip block from the params only; "+
					"make the params' slip_block_ns what the run asked for, or measure again", r.Schema, m.ID, time.Duration(got), slip)
			}
		}
		m.Server.LegacyBlockNs, m.LegacySlipBlockNs = 0, 0
		m.Block, m.SlipBlock = want, slip
	}
	for i := range r.Params.Targets {
		if r.Schema == RunSchema && r.Params.Targets[i].LegacyBlockNs != 0 {
			return fmt.Errorf("results: run.json: target %s says block_ns, which %s does not: the block is the params'", r.Params.Targets[i].Name, RunSchema)
		}
		r.Params.Targets[i].LegacyBlockNs = 0
	}
	return nil
}

// Median of v (0 for none): the kit quotes medians of repeated figures.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Outcome is the measurement's status with the first line of its reason,
// for a table cell or a list ("failed: the server died ...").
func (m Measurement) Outcome() string {
	line, _, _ := strings.Cut(m.Reason, "\n")
	if line == "" {
		return m.Status
	}
	return m.Status + ": " + line
}
