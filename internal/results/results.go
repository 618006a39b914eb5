// Package results is the versioned JSON schema every program of the kit
// writes and reads: the run's parameters, its environment, start and end,
// percentiles and bounded time series, with units in the field names and
// ordered arrays rather than maps. A result cut short (Ctrl-C, a failure)
// says so in Partial and keeps what was measured.
package results

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/files"
	"github.com/bystander-kit/bystander/internal/hist"
)

// Schema names this version of the format. Readers refuse other versions.
//
// v2 (from v1): loadgen counts the requests that completed inside the
// measured window (v1 dropped the one in flight at its start); the interval
// prober's window is the load's, every due probe counts (Probe.Due,
// Probe.Censored replace Skipped) and the timeline keeps every probe; the
// per-connection prober probes on a fixed schedule and keeps each
// connection's histogram (ConnStat.Latency); every histogram carries its
// HdrHistogram encoding (hist.Percentiles.HDR).
//
// v3 (from v2): a tool says how late its clock started after --start-at
// (StartLateNs); the per-connection prober records what the server made
// each probe wait, from the server's own timestamps (ConnStat.ServerWait),
// how late each probe was sent (ConnStat.SendLate), and how its placing
// requests went; it no longer decides which connections stalled (the stall
// package does, from these, wherever a verdict is shown). Every field added
// is optional and the verdict fields stay readable, so a v2 result reads as
// it is.
//
// v4 (from v3): loadgen can switch its requests to a second target at a
// moment of the window (Params.SwitchTo, SwitchAtNs) and count answers in
// steps shorter than a second with the block the server measured in each
// (Load.Ticks), and when the last request sent before the switch was
// answered (Load.SettledNs); optional: a v2 or v3 result reads as it is.
//
// v5 (from v4): loadgen and the probers can send a user's own requests
// (--load, --bystander: internal/request), and say which in one line
// (Params.Request: "POST /login (+body 43 B)", "@targets.txt: 3 requests",
// never a header or a body); optional: a v2-v4 result reads as it is.
const Schema = "bystander.results/v5"

// readableSchemas are the older result formats Decode reads as they are.
var readableSchemas = []string{"bystander.results/v2", "bystander.results/v3", "bystander.results/v4"}

// MaxSeriesPoints bounds the time series a program writes where a run could
// make them grow without bound (loadgen's per-second series, the trace's
// samples); the probers' timelines keep every probe.
const MaxSeriesPoints = 4000

// Result is one program's run.
type Result struct {
	Schema        string `json:"schema"`
	Tool          string `json:"tool"` // loadgen | prober
	Mode          string `json:"mode"` // closed | open | interval | perconn | trace
	Partial       bool   `json:"partial"`
	PartialReason string `json:"partial_reason,omitempty"`
	StartUnixNs   int64  `json:"start_unix_ns"`
	EndUnixNs     int64  `json:"end_unix_ns"`
	StartUTC      string `json:"start_utc"`
	EndUTC        string `json:"end_utc"`
	// StartLateNs is how long after its --start-at the tool's clock
	// started (v3): it was not ready in time, and its window began late.
	StartLateNs int64  `json:"start_late_ns,omitempty"`
	Params      Params `json:"params"`
	Env         Env    `json:"env"`
	// Errors counts failed requests by kind, in client.Kinds order.
	Errors []ErrorCount `json:"errors"`
	// Generator is what the measuring program itself cost.
	Generator Cost `json:"generator"`

	Load    *Load    `json:"load,omitempty"`
	Probe   *Probe   `json:"probe,omitempty"`
	PerConn *PerConn `json:"perconn,omitempty"`
	Trace   *Trace   `json:"trace,omitempty"`
}

// Params are every parameter of the run.
type Params struct {
	Target           string  `json:"target"`
	Conns            int     `json:"conns"`
	DurationNs       int64   `json:"duration_ns"`
	WarmupNs         int64   `json:"warmup_ns"`
	TimeoutNs        int64   `json:"timeout_ns"`
	RatePerS         float64 `json:"rate_per_s,omitempty"`
	IntervalNs       int64   `json:"interval_ns,omitempty"`
	StallThresholdNs int64   `json:"stall_threshold_ns,omitempty"`
	DelayNs          int64   `json:"delay_ns,omitempty"`
	// StallBlock is the blocking call the per-connection prober's stall
	// threshold is derived from (its --block).
	StallBlock Block `json:"stall_block_ns,omitempty"`
	// StartAtUnixNs, when set, is the moment the run's clock started
	// (--start-at), shared by tools whose windows must coincide.
	StartAtUnixNs int64 `json:"start_at_unix_ns,omitempty"`
	// SwitchTo, when set, is the target loadgen's requests went to from
	// SwitchAtNs into the measured window on (--switch-to, --switch-at).
	SwitchTo   string `json:"switch_to,omitempty"`
	SwitchAtNs int64  `json:"switch_at_ns,omitempty"`
	TickNs     int64  `json:"tick_ns,omitempty"`
	// Request, when set, is the user's request sent instead of GET of the
	// target's path (--load, --bystander), as request.Spec.String says it:
	// its method, path and body size, never its headers or body.
	Request string   `json:"request,omitempty"`
	Args    []string `json:"args"`
}

// Env is where the run happened.
type Env struct {
	GoVersion  string `json:"go_version"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	NumCPU     int    `json:"num_cpu"`
	CPUModel   string `json:"cpu_model"`
	Kernel     string `json:"kernel"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
}

// ErrorCount is how many requests failed one way.
type ErrorCount struct {
	Kind  string `json:"kind"`
	Count int64  `json:"count"`
}

// Cost is a program's own resource use over the measured part.
type Cost struct {
	CPUNs           int64   `json:"cpu_ns"`
	CPUUsPerRequest float64 `json:"cpu_us_per_request"`
	Requests        int64   `json:"requests"`
}

// CostOf is a program's own use of cpuNs of CPU for requests requests
// (sent, answered or failed, as the program counts them).
func CostOf(cpuNs, requests int64) Cost {
	return Cost{CPUNs: cpuNs, CPUUsPerRequest: UsPerRequest(cpuNs, float64(requests)), Requests: requests}
}

// UsPerRequest is cpuNs of CPU spread over n requests, in microseconds;
// 0 without a request.
func UsPerRequest(cpuNs int64, n float64) float64 {
	if n <= 0 {
		return 0
	}
	return float64(cpuNs) / 1e3 / n
}

// LoopCount is how many connections or requests one loop had.
type LoopCount struct {
	Loop  int   `json:"loop"`
	Count int64 `json:"count"`
}

// Second is one second of a load run (T is seconds since the measured start).
type Second struct {
	TS       int   `json:"t_s"`
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
}

// Tick is one step of a load run's finer series (loadgen --tick): the
// answers that completed in it (TMs is its start, ms since the measured
// start) and the mean block the server said it made them wait.
type Tick struct {
	TMs           int64   `json:"t_ms"`
	Requests      int64   `json:"requests"`
	Errors        int64   `json:"errors"`
	MeanBlockedNs float64 `json:"mean_blocked_ns"`
	// BlockedSamples is how many answers said their block (X-Blocked-Ns).
	BlockedSamples int64 `json:"blocked_samples"`
}

// Load is what loadgen measured after the warm-up.
type Load struct {
	Requests       int64   `json:"requests"`
	MeasuredNs     int64   `json:"measured_ns"`
	ThroughputPerS float64 `json:"throughput_per_s"`
	// Latency is from each request's intended send time in the open model
	// (wrk2's correction) and from its actual send in the closed model.
	Latency            hist.Percentiles  `json:"latency"`
	LatencyUncorrected *hist.Percentiles `json:"latency_uncorrected,omitempty"`
	PerSecond          []Second          `json:"per_second"`
	RequestsPerLoop    []LoopCount       `json:"requests_per_loop"`
	// ConnsPerLoop is how many connections each loop served (a
	// connection's loop is where most of its answers came from).
	ConnsPerLoop   []LoopCount `json:"conns_per_loop"`
	MeanBlockedNs  float64     `json:"mean_blocked_ns"`
	BlockedSamples int64       `json:"blocked_samples"`
	MeanQueuedNs   float64     `json:"mean_queued_ns"`
	WarmupRequests int64       `json:"warmup_requests"`
	Dials          int64       `json:"dials"`
	// BehindSchedule counts open-model requests sent over 1 ms after their
	// intended time (the generator could not keep the rate).
	BehindSchedule int64 `json:"behind_schedule,omitempty"`
	// Ticks is the window in steps of Params.TickNs (--tick), when asked.
	Ticks []Tick `json:"ticks,omitempty"`
	// SettledNs, with --switch-to, is when (since the measured start) the
	// last answer to a request sent before the switch came back: from
	// then on every answer is one of the second target's.
	SettledNs int64 `json:"settled_ns,omitempty"`
}

// InFlight is how many requests were in flight on average, by Little's
// law: throughput x mean latency (0 without either).
func (l *Load) InFlight() float64 { return l.ThroughputPerS * l.Latency.MeanUs / 1e6 }

// ProbePoint is one probe; times are us since the run's start. DoneUs is
// when the answer reached the prober's socket (the kernel's receive
// timestamp), not when the prober read it. A censored probe was due but
// never answered before the window ended: DoneUs is the end, SentUs 0 when
// it was never sent, and its wait is at least DoneUs - DueUs.
type ProbePoint struct {
	Conn     int     `json:"conn"`
	Loop     int     `json:"loop"`
	DueUs    float64 `json:"due_us"`
	SentUs   float64 `json:"sent_us"`
	DoneUs   float64 `json:"done_us"`
	Status   int     `json:"status"`
	Error    string  `json:"error,omitempty"`
	Censored bool    `json:"censored,omitempty"`
}

// ConnLoop says which loop a connection sits on (-1: no loops).
type ConnLoop struct {
	Conn int `json:"conn"`
	Loop int `json:"loop"`
}

// Probe is the interval prober's result. Every probe due in the window is
// accounted for: Due = Completed + Failed + Censored.
type Probe struct {
	// WindowNs is the measured window the due times fall in.
	WindowNs  int64 `json:"window_ns"`
	Due       int64 `json:"due"`
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
	// Censored probes were due but not answered when the window ended
	// (never sent, or still out): Corrected counts each at its wait so far,
	// end - due, a lower bound, so no probe is quietly left out.
	Censored int64 `json:"censored"`
	// Late counts probes sent over 1 ms after they were due.
	Late int64 `json:"late"`
	// Corrected is from each probe's due time (censored ones included);
	// Uncorrected from its send (answered ones only).
	Corrected   hist.Percentiles `json:"latency_corrected"`
	Uncorrected hist.Percentiles `json:"latency_uncorrected"`
	SendLag     hist.Percentiles `json:"send_lag"`
	Conns       []ConnLoop       `json:"conns"`
	Timeline    []ProbePoint     `json:"timeline"`
}

// ConnStat is one connection of the per-connection prober. Latency is
// from each probe's due time; probes still unanswered at the end count at
// their wait so far (Censored of them).
type ConnStat struct {
	Conn     int              `json:"conn"`
	Loop     int              `json:"loop"`
	Due      int64            `json:"due"`
	Samples  int64            `json:"samples"`
	Censored int64            `json:"censored"`
	Errors   int64            `json:"errors"`
	Latency  hist.Percentiles `json:"latency"`
	// FromSend is from each answered probe's send: what one request
	// waited, without the queue of probes behind it.
	FromSend hist.Percentiles `json:"latency_from_send"`
	// ServerWait is what the server made each answered probe wait, from
	// its own timestamps: from the send to X-Handler-Start (accepted), plus
	// how late its continuation ran (X-Continuation-Start - X-Handler-Start
	// - the delay), so neither the prober's lateness nor its reading of the
	// answer counts. Empty in v2, or when the server sends no
	// X-Handler-Start. SendLate is how long after its due time each probe
	// was sent: what the prober's side (or the machine) added.
	ServerWait hist.Percentiles `json:"server_wait,omitzero"`
	SendLate   hist.Percentiles `json:"send_late,omitzero"`
	// Stalled is a v2 prober's own verdict, read from old files and not
	// used: the stall package judges from the figures above.
	Stalled bool `json:"stalled,omitempty"`
}

// PerConn is the per-connection prober's result.
type PerConn struct {
	// IntervalNs is each connection's probe schedule (0: back-to-back).
	IntervalNs int64 `json:"interval_ns"`
	// DelayNs is the /async delay the probes asked for (their ?delay=).
	DelayNs int64 `json:"delay_ns,omitempty"`
	// BaselineUs is the median latency of the placing requests (all
	// connections at once, a few each), measured under whatever load the
	// server had then; QuickestPlacingUs is the quickest of them: a
	// baseline far above it was measured under load.
	BaselineUs        float64 `json:"baseline_us"`
	QuickestPlacingUs float64 `json:"quickest_placing_us,omitempty"`
	// PlacedConcurrently: the placing requests went out on every connection
	// at once (v3); a v2 prober placed them one connection after another.
	PlacedConcurrently bool        `json:"placed_concurrently,omitempty"`
	Spread             []LoopCount `json:"spread"`
	Conns              []ConnStat  `json:"conns"`
	// A v2 prober's own verdict, read from old files and not used.
	StallThresholdNs int64  `json:"stall_threshold_ns,omitempty"`
	StallRule        string `json:"stall_rule,omitempty"`
	Stalled          int    `json:"stalled,omitempty"`
}

// TraceSample is one /async request taken apart; us, times since the run's start.
type TraceSample struct {
	Conn   int     `json:"conn"`
	Loop   int     `json:"loop"`
	SentUs float64 `json:"sent_us"`
	// AcceptedUs: send to X-Handler-Start. LatenessUs: X-Continuation-Start
	// minus X-Handler-Start minus the delay. ReturnUs: X-Continuation-Start
	// to the answer received. ServerUs: X-Handler-Start to X-Continuation-Start.
	AcceptedUs float64 `json:"accepted_us"`
	LatenessUs float64 `json:"continuation_lateness_us"`
	ReturnUs   float64 `json:"return_us"`
	ServerUs   float64 `json:"server_us"`
	TotalUs    float64 `json:"total_us"`
	QueuedUs   float64 `json:"queued_us,omitempty"`
}

// Trace is the trace prober's result.
type Trace struct {
	Samples        []TraceSample    `json:"samples"`
	SamplesDropped int64            `json:"samples_dropped,omitempty"`
	Accepted       hist.Percentiles `json:"accepted"`
	Lateness       hist.Percentiles `json:"continuation_lateness"`
	Return         hist.Percentiles `json:"return"`
	Total          hist.Percentiles `json:"total"`
}

// New starts a result for tool in mode with the environment filled in.
func New(tool, mode string, start time.Time, p Params) *Result {
	return &Result{
		Schema: Schema, Tool: tool, Mode: mode, Params: p, Env: ReadEnv(),
		StartUnixNs: start.UnixNano(), StartUTC: start.UTC().Format(time.RFC3339Nano),
		Errors: []ErrorCount{},
	}
}

// Finish stamps the end time and, when reason is not empty, marks the
// result partial.
func (r *Result) Finish(end time.Time, reason string) {
	r.EndUnixNs = end.UnixNano()
	r.EndUTC = end.UTC().Format(time.RFC3339Nano)
	if reason != "" {
		r.Partial, r.PartialReason = true, reason
	}
}

// ReadEnv describes this machine and process.
func ReadEnv() Env {
	e := Env{
		GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(),
		OS: runtime.GOOS, Arch: runtime.GOARCH,
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				e.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		e.Kernel = strings.TrimSpace(string(b))
	}
	return e
}

// Write writes r as indented JSON to path, through a temporary file renamed
// into place, so a reader never sees half a result.
func Write(path string, r *Result) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	if err := files.WriteAtomic(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("results: writing %s: %w", path, err)
	}
	return nil
}

// Read reads and checks a result file the kit itself just wrote (the
// orchestrator); a run directory's files are read with ReadResultIn.
func Read(path string) (*Result, error) {
	return ReadResultIn(filepath.Dir(path), filepath.Base(path))
}

// ReadResultIn reads the result file rel names in run directory dir:
// confined to it, capped (MaxFileBytes), strictly decoded.
func ReadResultIn(dir, rel string) (*Result, error) {
	b, err := files.ReadIn(dir, rel, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	r, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, rel)
	}
	return r, nil
}

// Decode parses a result strictly (see decodeStrict) and refuses other
// schema versions.
func Decode(b []byte) (*Result, error) {
	var r Result
	if err := decodeStrict(b, &r); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	if r.Schema != Schema && !slices.Contains(readableSchemas, r.Schema) {
		return nil, fmt.Errorf("results: schema %q, this program reads %q and %s", r.Schema, Schema, strings.Join(readableSchemas, ", "))
	}
	return &r, nil
}

// LateLine says, when the tool's clock started over a millisecond after
// its --start-at, how late; "" otherwise.
func (r *Result) LateLine() string {
	if r.StartLateNs <= int64(time.Millisecond) {
		return ""
	}
	return fmt.Sprintf("%s: started %s after --start-at (it was not ready in time): its window began that much later",
		r.Tool, time.Duration(r.StartLateNs).Round(time.Millisecond))
}

// ErrorsLine is "none" or the non-zero counts, "reset 3, timeout 1".
func ErrorsLine(errs []ErrorCount) string {
	var parts []string
	for _, e := range errs {
		if e.Count > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", e.Kind, e.Count))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// TotalErrors adds up the counts.
func TotalErrors(errs []ErrorCount) int64 {
	var n int64
	for _, e := range errs {
		n += e.Count
	}
	return n
}

// WriteExit writes r to path when path is given, says so on stdout, and
// returns the tool's exit status: 130 for a partial (interrupted) result,
// 1 when it cannot be written.
func WriteExit(path string, r *Result, stdout, stderr io.Writer) int {
	if path != "" {
		if err := Write(path, r); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		fmt.Fprintf(stdout, "%s: wrote %s\n", r.Tool, path)
	}
	if r.Partial {
		return 130
	}
	return 0
}

// CheckWritable fails when a result could not be written to path, so a
// tool can refuse before measuring rather than lose what it measured.
func CheckWritable(path string) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".result-check-*")
	if err != nil {
		return fmt.Errorf("results: cannot write %s: %w", path, err)
	}
	f.Close()
	return os.Remove(f.Name())
}
