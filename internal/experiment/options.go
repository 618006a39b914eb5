package experiment

import (
	"time"

	"github.com/bystander-kit/bystander/internal/conform"
	"github.com/bystander-kit/bystander/internal/request"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/serverflags"
)

// Options are the run's typed input, run.sh's flags read (by the command,
// internal/cmd/experiment): Defaults are a run with no flags, and Validate
// says what is wrong with a set of them, whatever built it.
type Options struct {
	Block      results.Block
	StallBlock results.Block
	// SlipBlock is what the slip phase's load asks for from halfway on,
	// after Block (default 10x Block).
	SlipBlock results.Block
	BlockMode string
	// PGURL is the user's PostgreSQL for --block-mode postgres (empty: the
	// run starts a private one); DBPool each Go server's connections to it.
	PGURL  string
	DBPool int
	Delay  time.Duration
	Loops  int
	Slots  int
	// ProbeInterval is the /fast bystander's; TraceCallers block /slow
	// during the trace phase.
	ProbeInterval time.Duration
	TraceCallers  int
	Conc          []int
	Duration      time.Duration
	Warmup        time.Duration
	Engines       []string
	Servers       []string
	// Targets are servers the user started (--target), measured beside or
	// instead of the kit's; AllowRemote lets one be on another machine.
	Targets     []Target
	AllowRemote bool
	// Load and Bystander are what every --target is measured with as it
	// is (--load, --bystander: a user's REQUEST, internal/request): the
	// sweep loads Load and the bystanders ask Bystander; empty: the
	// protocol's /slow and /fast.
	Load, Bystander string
	Phases          []string
	Out             string
	// OutFresh: Out is the default (DefaultOut), results/<UTC timestamp>,
	// made new by the run (another run's of the same second taken: <ts>-2).
	OutFresh  bool
	Overwrite bool
	// SweepEndpoint is what the sweep loads: /slow, or /offload to measure
	// the fix across concurrencies (and compare the runs).
	SweepEndpoint string
	Repeat        int
	Pin           bool
	Quick         bool
	Open          bool
	// Stage serves the live page (run.sh --stage); Auto advances its
	// screens by itself; Replay plays a recorded run's stage instead of
	// measuring; StageAddr is where the page is served.
	Stage bool
	Auto  bool
	// AutoWait is how long --auto waits for a page before it starts.
	AutoWait  time.Duration
	Replay    string
	StageAddr string
	// JVMWarmup is how long a Java server is loaded after each start,
	// before it is measured (its JIT compiles what runs hot).
	JVMWarmup time.Duration
	Bin       string // where the kit's binaries are
	Args      []string

	// db is the database the servers ask with --block-mode postgres, once
	// the run has it: its URL (never with a password), what it is in
	// words, the private instance's server process (0: the user's, not
	// measured), and the password the servers get in their environment
	// (the private instance's, or the one pgx found for --pg-url in
	// PGPASSWORD or ~/.pgpass): never written anywhere.
	dbURL, dbDesc string
	dbPID         int
	dbPassword    string
	// dbDied says how the private instance ended when it died under the
	// run (nil while it runs; nil func for the user's, not watched).
	dbDied func() error
}

// Defaults are the Options of a run with no flags, Out aside (DefaultOut,
// of the moment the run starts). The defaults that follow others are
// TraceCallersPerLoop per loop and SlipTimes the block; --quick's
// durations are QuickDuration and QuickWarmup, and half of JVMWarmup.
func Defaults() Options {
	return Options{
		Block: results.Block(5 * time.Millisecond), StallBlock: results.Block(100 * time.Millisecond), BlockMode: "syscall", Delay: 5 * time.Millisecond,
		DBPool: serverflags.DefaultDBPool, Loops: 4, Slots: 200, ProbeInterval: 50 * time.Millisecond,
		Conc: []int{4, 16, 64}, Duration: 5 * time.Second, Warmup: time.Second, SweepEndpoint: "/slow",
		Engines: []string{"gnet"}, Servers: []string{"loop", "pool"}, Phases: Phases(),
		Repeat: 1, AutoWait: AutoWait, StageAddr: "127.0.0.1:8300", JVMWarmup: JVMWarmup, Bin: "bin", Args: []string{},
		TraceCallers: TraceCallersPerLoop * 4, SlipBlock: SlipTimes * results.Block(5*time.Millisecond),
	}
}

// The defaults that follow others: the trace's callers per loop, how many
// times the block the slip slows the call to, and --quick's durations.
const (
	TraceCallersPerLoop = 2
	SlipTimes           = 10
	QuickDuration       = 1500 * time.Millisecond
	QuickWarmup         = 300 * time.Millisecond
)

// Target is a server the user started and names with --target
// NAME=URL[,loops=N|,workers=N][,offload=N][,pid=N][,pprof=URL].
type Target struct {
	Name, URL, Addr string
	// Pprof is a Go service's listener that serves /debug/pprof/
	// (http://HOST:PORT), given with pprof=: its execution trace says what
	// held its goroutines at the top step of a sweep measured as it is.
	Pprof string
	// Facts given: 0 when not given (loops learned from X-Loop).
	Loops, Workers, Offload, PID int
	Remote                       bool
	// Set by the check (resolve): the server as the plan measures it, and
	// the phases it cannot take part in, with why.
	Server results.Server
	Skips  map[string]string
	Check  *conform.Report
	// jvm: its pid= is a JVM's (watched through Flight Recorder).
	jvm bool
	// load and bystander are --load and --bystander read for this
	// target's host:port (nil without --load): it is measured as it is.
	load, bystander *request.Spec
}
