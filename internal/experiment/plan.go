// Package experiment is the orchestrator behind run.sh: it turns flags into
// a plan of measurements, runs each server, load generator and prober as its
// own process on loopback, samples the servers' cost from /proc, writes every
// result into one run directory with an index (run.json), prints the story
// as tables, and hands the directory to the report.
package experiment

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/examples/java"
	"github.com/bystander-kit/bystander/internal/block"
	"github.com/bystander-kit/bystander/internal/cli"
	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/serverflags"
	"github.com/bystander-kit/bystander/internal/words"
)

// The phases, in the order they run.
var allPhases = findings.Phases

// Options are run.sh's flags.
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
	Overwrite       bool
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
	// outDefault: Out is the default, results/<UTC timestamp>, made new
	// by the run (another run's of the same second taken: <ts>-2).
	outDefault bool
}

// listFlag is a comma-separated flag value; empty only when allowed.
type listFlag struct {
	dst        *[]string
	allowEmpty bool
}

func (l listFlag) String() string {
	if l.dst == nil {
		return ""
	}
	return strings.Join(*l.dst, ",")
}

func (l listFlag) Set(s string) error {
	*l.dst = nil
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l.dst = append(*l.dst, p)
		}
	}
	if len(*l.dst) == 0 && !l.allowEmpty {
		return errors.New("empty list")
	}
	return nil
}

// intsFlag is a comma-separated list of positive integers.
type intsFlag struct{ dst *[]int }

func (l intsFlag) String() string {
	if l.dst == nil {
		return ""
	}
	var s []string
	for _, v := range *l.dst {
		s = append(s, strconv.Itoa(v))
	}
	return strings.Join(s, ",")
}

func (l intsFlag) Set(s string) error {
	*l.dst = nil
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 1 || v > client.MaxConns {
			return fmt.Errorf("%q is not a whole number from 1 to %d", p, client.MaxConns)
		}
		*l.dst = append(*l.dst, v)
	}
	return nil
}

// ParseFlags reads run.sh's arguments. now names the default output
// directory.
func ParseFlags(args []string, stderr io.Writer, now time.Time) (Options, error) {
	o := Options{
		Block: results.Block(5 * time.Millisecond), StallBlock: results.Block(100 * time.Millisecond), BlockMode: "syscall", Delay: 5 * time.Millisecond,
		DBPool: serverflags.DefaultDBPool, Loops: 4, Slots: 200, ProbeInterval: 50 * time.Millisecond,
		Conc: []int{4, 16, 64}, Duration: 5 * time.Second, Warmup: time.Second, SweepEndpoint: "/slow",
		Engines: []string{"gnet"}, Servers: []string{"loop", "pool"}, Phases: slices.Clone(allPhases),
		Repeat: 1, Bin: "bin", Args: args,
	}
	fs := flag.NewFlagSet("run.sh", flag.ContinueOnError)
	fs.Var(&o.Block, "block", "the blocking call's `duration` for sweep and offload")
	fs.Var(&o.StallBlock, "stall-block", "the blocking call's `duration` for stall, trace and cliff (their story is waiting behind blocked workers)")
	fs.Var(&o.SlipBlock, "slip-block", "the slip phase's slowed call (a `duration`): its load asks for --block, then this from halfway through the window (default 10x --block)")
	fs.StringVar(&o.BlockMode, "block-mode", o.BlockMode, "how the servers' blocking call blocks: syscall (holds the OS thread in nanosleep, as a JDBC read or Thread.sleep does), sleep (parks the goroutine),\n"+
		"spin (burns CPU), postgres (SELECT pg_sleep over a real PostgreSQL connection from a pool of --db-pool: the run starts a private\n"+
		"PostgreSQL from Debian's postgresql package and removes it at the end, or uses --pg-url)")
	fs.StringVar(&o.PGURL, "pg-url", "", "with --block-mode postgres: your own PostgreSQL (postgres://USER@HOST:PORT/DB) instead of a private one: on loopback or\n"+
		"a unix socket unless --allow-remote; no password in it (the password: PGPASSWORD or ~/.pgpass, handed to the servers in their environment)")
	fs.IntVar(&o.DBPool, "db-pool", o.DBPool, "with --block-mode postgres: each server's database connections (HikariCP's default: 10): a second ceiling")
	fs.DurationVar(&o.Delay, "delay", o.Delay, "the /async delay (stall and trace)")
	fs.IntVar(&o.Loops, "loops", o.Loops, "event loops of the loop server; the stall phase places 3 /async connections on each")
	fs.IntVar(&o.Slots, "slots", o.Slots, "worker slots of the pool server, and workers of the loop server's offload pool")
	fs.DurationVar(&o.ProbeInterval, "probe-interval", o.ProbeInterval, "time between the /fast bystander's probes")
	fs.IntVar(&o.TraceCallers, "trace-callers", 0, "callers blocking /slow during the trace phase (default: 2 per loop)")
	fs.StringVar(&o.SweepEndpoint, "sweep-endpoint", o.SweepEndpoint, "what the sweep loads: /slow, or /offload (the fix) to compare with a /slow run (report --compare)")
	fs.Var(intsFlag{&o.Conc}, "conc", "concurrencies for the sweep; the highest is used for offload")
	fs.DurationVar(&o.Duration, "duration", o.Duration, "measured time of each measurement")
	fs.DurationVar(&o.Warmup, "warmup", o.Warmup, "warm-up before each measurement")
	fs.Var(listFlag{dst: &o.Engines}, "engines", "loop server engines, any of "+strings.Join(LoopEngines, ",")+" (the loop server's --engine)")
	fs.Var(listFlag{dst: &o.Servers, allowEmpty: true}, "servers", "servers the kit starts, any of "+strings.Join(kitServerNames(), ",")+
		" (netty and tomcat, the published experiment's own, need Java: "+java.Install+"),\nor none (--servers=) to measure only --target servers")
	fs.Var(targetsFlag{&o.Targets}, "target", "measure a server you started, `NAME=URL[,loops=N|,workers=N][,offload=N][,pid=N][,pprof=URL]` (repeatable): URL is its base\n"+
		"(http://127.0.0.1:8090); loops or workers are learned from X-Loop when not given; offload= is its /offload pool's\n"+
		"workers; pid= gives its CPU and context switches from /proc, and in the stall phase the threads the blockers held,\n"+
		"seen from outside (/proc, and a JVM's stacks with jcmd). Checked first (prober --mode check). With --load, pid= or\n"+
		"pprof= (a Go service's net/http/pprof listener, http://HOST:PORT, on loopback unless --allow-remote) has the sweep's top\n"+
		"step measured again, watched: what held its threads (Flight Recorder for a JVM, the Go execution trace, /proc for any\n"+
		"other process), and what watching cost it")
	fs.StringVar(&o.Load, "load", "", "measure every --target as it is, with its own requests: the sweep loads this at 1 and each --conc callers, `REQUEST`\n"+
		"'METHOD PATH' (such as 'POST /login') or @FILE in vegeta's HTTP targets format (several requests sent round robin);\n"+
		"the target need not speak the protocol: each request is checked to answer 2xx or 3xx first, and the phases that need\n"+
		"the protocol (stall, offload, trace, cliff, slip) skip it, saying why; the kit's own servers keep /slow and /fast")
	fs.StringVar(&o.Bystander, "bystander", "", "with --load: what everyone else asks meanwhile, `REQUEST` as --load's (such as 'GET /health'): probed every --probe-interval,\n"+
		"and on 12 connections every 10ms to tell which connections the load stalls")
	fs.BoolVar(&o.AllowRemote, "allow-remote", false, "allow a --target, or a --pg-url, that is not on a loopback address (the load still comes from this machine)")
	fs.Var(listFlag{dst: &o.Phases}, "phases", "phases: "+strings.Join(allPhases, ","))
	fs.StringVar(&o.Out, "out", "", "run directory, new or empty; a relative path is where you stand (default results/<UTC timestamp> beside --bin,\nmade new by this run: <UTC timestamp>-2 when another run of the same second has it)")
	fs.BoolVar(&o.Overwrite, "overwrite", false, "clear --out first when it holds an earlier run of the kit's and nothing else (only the files that run lists are removed)")
	fs.IntVar(&o.Repeat, "repeat", 1, "repetitions; variants alternate within each, medians and spread reported")
	fs.BoolVar(&o.Pin, "pin", false, "start servers and generators on disjoint CPU sets (taskset); needs 2 CPUs or more")
	fs.BoolVar(&o.Quick, "quick", false, "short durations, for a first look")
	fs.BoolVar(&o.Open, "open", false, "open the report when done (with --stage: open the stage page at once)")
	fs.BoolVar(&o.Stage, "stage", false, "give the talk: serve a live page of the experiment (6 screens, driven by a clicker or the keyboard; a speaker view at /presenter) and measure as it asks")
	fs.BoolVar(&o.Auto, "auto", false, "with --stage: advance the screens by themselves once a page is open (rehearsals, tests), and exit at the end")
	fs.DurationVar(&o.AutoWait, "auto-wait", AutoWait, "with --auto: how long to wait for a page to open before measuring without one (0: do not wait)")
	fs.StringVar(&o.Replay, "replay", "", "with --stage: play the stage recorded in this run directory at its real pace (the forward key skips to the next slide), without servers")
	fs.StringVar(&o.StageAddr, "stage-addr", "127.0.0.1:8300", "with --stage: where to serve the page (a loopback address; port 0 picks one)")
	fs.DurationVar(&o.JVMWarmup, "jvm-warmup", JVMWarmup, "how long a Java server (netty, tomcat) is loaded on every endpoint after each start, before it is measured:\na JVM compiles the code that runs hot, and its first seconds are several times slower (half with --quick);\n"+
		"also how long a --target measured as it is (--load) is loaded with its requests before its first measurement")
	fs.StringVar(&o.Bin, "bin", o.Bin, "directory holding the kit's binaries")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: ./run.sh [flags]

Runs the whole experiment against real servers on loopback: the /slow sweep
with a /fast bystander, the per-connection stall, blocking vs offloaded vs
the pool, the /async trace, the pool's cliff and the bad afternoon (the
call slowing tenfold mid-window: the slip); writes every result and a
report into one directory and prints the story.

Flags:
`)
		fs.PrintDefaults()
	}
	// Usage goes to stderr on --help only; a bad flag is one line.
	if err := cli.Parse(fs, args, stderr); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("run.sh: unexpected argument %q (flags only; see --help)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	o.Args = userArgs(args)
	if o.Quick {
		if !set["duration"] {
			o.Duration = 1500 * time.Millisecond
		}
		if !set["warmup"] {
			o.Warmup = 300 * time.Millisecond
		}
		if !set["jvm-warmup"] {
			o.JVMWarmup /= 2
		}
	}
	if o.Load != "" && set["sweep-endpoint"] {
		return o, errors.New("run.sh: --load goes without --sweep-endpoint: the sweep loads the --target's own request (the kit's servers keep /slow)")
	}
	if o.Stage && !set["phases"] {
		o.Phases = slices.Clone(stagePhases)
	}
	if !set["trace-callers"] {
		o.TraceCallers = 2 * o.Loops
	}
	if !set["slip-block"] {
		o.SlipBlock = 10 * o.Block
	}
	// Paths the user gives are where the user stands (run.sh runs the
	// orchestrator there), and are said whole; the default run directory
	// lies beside the kit's bin directory, in results/.
	if o.Out == "" {
		o.Out = filepath.Join(filepath.Dir(abs(o.Bin)), "results", now.UTC().Format("20060102T150405Z"))
		o.outDefault = true
	}
	o.Out = abs(o.Out)
	if o.Replay != "" {
		o.Replay = abs(o.Replay)
	}
	return o, o.validate()
}

// maxSlots is the largest pool the cliff can drive at its largest share.
func maxSlots() int { return client.MaxConns * 100 / slices.Max(findings.CliffShares) }

// abs is p made absolute against the working directory (p as it is when
// that cannot be read).
func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// userArgs drops --bin, which run.sh adds, from the recorded command line.
func userArgs(args []string) []string {
	out := []string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--bin" || a == "-bin":
			i++
		case strings.HasPrefix(a, "--bin=") || strings.HasPrefix(a, "-bin="):
		default:
			out = append(out, a)
		}
	}
	return out
}

func (o *Options) validate() error {
	bad := func(f string, a ...any) error { return fmt.Errorf("run.sh: "+f, a...) }
	switch {
	case o.Block <= 0 || o.Block.D() > 10*time.Second:
		return bad("--block %s: want more than 0 and at most 10s", o.Block)
	case o.StallBlock <= 0 || o.StallBlock.D() > 10*time.Second:
		return bad("--stall-block %s: want more than 0 and at most 10s", o.StallBlock)
	case o.SlipBlock <= 0 || o.SlipBlock.D() > 10*time.Second:
		return bad("--slip-block %s: want more than 0 and at most 10s", o.SlipBlock)
	case o.Duration < 500*time.Millisecond || o.Duration > 10*time.Minute:
		return bad("--duration %s: want 500ms to 10m", o.Duration)
	case o.Warmup < 0 || o.Warmup > time.Minute:
		return bad("--warmup %s: want 0 to 1m", o.Warmup)
	case o.Repeat < 1 || o.Repeat > 20:
		return bad("--repeat %d: want 1 to 20", o.Repeat)
	case len(o.Conc) == 0:
		return bad("--conc: give at least one concurrency")
	case o.Delay < 0 || o.Delay > 10*time.Second:
		return bad("--delay %s: want 0 to 10s", o.Delay)
	case o.Loops < 1 || o.Loops > 64:
		return bad("--loops %d: want 1 to 64", o.Loops)
	case o.Slots < 1 || o.Slots > maxSlots():
		return bad("--slots %d: want 1 to %d (the cliff drives %d%% of the slots, one connection each, and a load generator opens at most %d)",
			o.Slots, maxSlots(), slices.Max(findings.CliffShares), client.MaxConns)
	case o.ProbeInterval < time.Millisecond || o.ProbeInterval > 10*time.Second:
		return bad("--probe-interval %s: want 1ms to 10s", o.ProbeInterval)
	case o.TraceCallers < 1 || o.TraceCallers > client.MaxConns:
		return bad("--trace-callers %d: want 1 to %d", o.TraceCallers, client.MaxConns)
	case o.JVMWarmup < 0 || o.JVMWarmup > 10*time.Minute:
		return bad("--jvm-warmup %s: want 0 to 10m", o.JVMWarmup)
	}
	switch {
	case o.AutoWait < 0:
		return bad(fmt.Sprintf("--auto-wait %s: want a duration of 0 or more", o.AutoWait))
	case o.AutoWait != AutoWait && !o.Auto:
		return bad("--auto-wait goes with --auto")
	case !o.Stage && (o.Auto || o.Replay != "" || o.StageAddr != "127.0.0.1:8300"):
		return bad("--auto, --replay and --stage-addr go with --stage")
	case o.Stage && o.Repeat > 1:
		return bad("--stage runs each measurement once; repeat a screen with R instead of --repeat")
	case o.Stage && o.Replay == "" && !slices.Equal(o.Phases, stagePhases):
		return bad("--stage measures the phases %s in its own order; leave --phases out", strings.Join(stagePhases, ","))
	}
	if o.SweepEndpoint != "/slow" && o.SweepEndpoint != "/offload" {
		return bad("--sweep-endpoint %q: want /slow or /offload", o.SweepEndpoint)
	}
	if _, err := block.ParseMode(o.BlockMode); err != nil {
		return bad("--block-mode %q: want syscall, sleep, spin or postgres", o.BlockMode)
	}
	if o.BlockMode != "postgres" && (o.PGURL != "" || o.DBPool != serverflags.DefaultDBPool) {
		return bad("--pg-url and --db-pool go with --block-mode postgres")
	}
	if o.DBPool < 1 || o.DBPool > block.MaxDBConns {
		return bad("--db-pool %d: want 1 to %d", o.DBPool, block.MaxDBConns)
	}
	if o.PGURL != "" {
		hosts, err := block.DBHosts(o.PGURL)
		if err != nil {
			return bad("--pg-url: %v", err)
		}
		for _, h := range hosts {
			if !strings.HasPrefix(h, "/") && !client.IsLoopback(h) && !o.AllowRemote {
				return bad("--pg-url: %s is not a loopback address or a unix socket: the kit's database is on this machine unless --allow-remote", h)
			}
		}
	}
	for _, e := range o.Engines {
		if !slices.Contains(LoopEngines, e) {
			return bad("--engines: %q is not an engine (want %s)", e, strings.Join(LoopEngines, ", "))
		}
	}
	for _, s := range o.Servers {
		if !slices.Contains(kitServerNames(), s) {
			return bad("--servers: %q is not a server (want any of %s)", s, strings.Join(kitServerNames(), ", "))
		}
	}
	if len(o.Servers) == 0 && len(o.Targets) == 0 {
		return bad("nothing to measure: --servers is empty and no --target is given")
	}
	switch {
	case o.Load == "" && o.Bystander != "":
		return bad("--bystander goes with --load: the bystander of a --target measured as it is (the kit's servers keep /fast)")
	case o.Load != "" && o.Bystander == "":
		return bad("--load goes with --bystander: what everyone else asks while the load runs, such as --bystander 'GET /health'")
	case o.Load != "" && len(o.Targets) == 0:
		return bad("--load measures a --target as it is: give one (--target NAME=http://127.0.0.1:PORT); the kit's own servers keep /slow and /fast")
	case o.Load != "" && o.Stage:
		return bad("--stage gives the talk on the protocol's endpoints: leave --load out")
	}
	if err := o.validateTargets(); err != nil {
		return err
	}
	for _, p := range o.Phases {
		if !slices.Contains(allPhases, p) {
			return bad("--phases: %q is not a phase (want %s)", p, strings.Join(allPhases, ", "))
		}
	}
	if dupe(o.Engines) || dupe(o.Servers) || dupe(o.Phases) {
		return bad("a list names the same thing twice")
	}
	if len(dupeInts(o.Conc)) > 0 {
		return bad("--conc names %v twice", dupeInts(o.Conc))
	}
	return nil
}

func dupe(s []string) bool {
	seen := map[string]bool{}
	for _, v := range s {
		if seen[v] {
			return true
		}
		seen[v] = true
	}
	return false
}

func dupeInts(s []int) []int {
	seen := map[int]bool{}
	var d []int
	for _, v := range s {
		if seen[v] {
			d = append(d, v)
		}
		seen[v] = true
	}
	return d
}

// Server and Step are the run index's types (internal/results).
type (
	Server = results.Server
	Step   = results.Step
)

// Plan is everything the run will do, in order.
type Plan struct {
	Options Options
	Steps   []Step
	// Skips are the steps not run, by ID, with why (a --target's check).
	Skips map[string]string
}

// stallConnsPerLoop is how many /async connections the stall phase places
// on each loop.
const stallConnsPerLoop = 3

// stallInterval is how often each stall connection is probed: on a fixed
// schedule, so the probes sample every moment, blocked or not.
const stallInterval = 10 * time.Millisecond

// traceConnsPerLoop is how many /async connections per loop the trace
// phase takes apart at once, for enough samples while every loop is blocked.
const traceConnsPerLoop = 3

func (o Options) servers() []Server {
	var out []Server
	for _, k := range kitServers { // in the catalogue's order, whatever --servers' order
		if !slices.Contains(o.Servers, k.name) {
			continue
		}
		switch k.name {
		case "loop":
			for _, e := range o.Engines {
				out = append(out, Server{Name: "loop-" + e, Kind: "loop", Engine: e, Workers: o.Loops})
			}
		case "pool":
			out = append(out, Server{Name: "pool", Kind: "pool", Workers: o.Slots})
		case "netty":
			out = append(out, Server{Name: "netty", Kind: "loop", Engine: "netty", Workers: o.Loops})
		case "tomcat":
			out = append(out, Server{Name: "tomcat", Kind: "pool", Engine: "tomcat", Workers: o.Slots})
		case "nethttp", "fasthttp", "netpoll":
			out = append(out, Server{Name: k.name, Kind: "goroutine", Engine: k.name})
		}
	}
	if o.BlockMode == "postgres" {
		for i := range out {
			out[i].DBConns = o.DBPool
		}
	}
	for _, t := range o.Targets {
		s := t.Server
		if t.load != nil {
			s.Load, s.Bystander = t.load.String(), t.bystander.String()
		}
		out = append(out, s)
	}
	return out
}

// sweepConc is the sweep's callers for s: the run's --conc, and for a
// server measured as it is 1 first, the call's own time (the load's median
// with nobody queued ahead).
func (o Options) sweepConc(s Server) []int {
	if !s.AsIs() || slices.Contains(o.Conc, 1) {
		return o.Conc
	}
	return append([]int{1}, o.Conc...)
}

// allConc is every caller count the sweep plans, in the order it runs
// them: --conc, with 1 first when a server is measured as it is.
func (o Options) allConc() []int {
	if o.Load != "" && len(o.Targets) > 0 {
		return o.sweepConc(Server{Load: o.Load})
	}
	return o.Conc
}

// loopsOf is how many loops the stall and trace phases place connections
// on: a loop server's own, else the run's --loops (a pool's contrast).
func (o Options) loopsOf(s Server) int {
	if s.Kind == "loop" && s.Workers > 0 {
		return s.Workers
	}
	return o.Loops
}

// short is the measured time of the phases whose story is a stall: half
// the duration, at least a second (each k of the stall phase is one step).
func (o Options) short() time.Duration {
	return max(o.Duration/2, time.Second)
}

// slipWindow is the slip phase's measured time for a step: the step comes
// halfway, and each side lasts as long as the stall's windows do, or
// longer where the requests queued at the step take a while to drain:
// each of the workers that bind it may hold callers / workers of them,
// each now as slow as the slowed call (the last one asked before the step
// can come back that late: 16 x 50 ms on 4 loops at 64 callers), and the
// after side still has 0.8 s beyond that. In whole 100 ms, so that the
// step falls on a tick.
func (o Options) slipWindow(s Step) time.Duration {
	w := findings.WorkersOf(s, o.Slots)
	if w == 0 || w > s.Conc {
		w = s.Conc
	}
	drain := time.Duration((s.Conc+w-1)/w) * o.SlipBlock.D()
	half := max(o.short()/2, drain+800*time.Millisecond)
	return 2 * ((half + slipTick - 1) / slipTick * slipTick)
}

// stageSlipWait is how many of a slip's sides the stage waits for the
// presenter's key before it slows the call by itself.
const stageSlipWait = 4

// slipTick is the slip's timeline step.
const slipTick = 100 * time.Millisecond

// BuildPlan lays out the measurements.
func BuildPlan(o Options) Plan {
	p := Plan{Options: o}
	add := func(s Step) { p.Steps = append(p.Steps, s) }
	maxConc := slices.Max(o.Conc)
	for _, phase := range allPhases {
		if !slices.Contains(o.Phases, phase) {
			continue
		}
		switch phase {
		case "sweep":
			for _, c := range o.allConc() {
				for _, s := range o.servers() {
					if !slices.Contains(o.sweepConc(s), c) {
						continue
					}
					endpoint := o.SweepEndpoint
					if s.AsIs() {
						endpoint = s.Load
					}
					add(Step{ID: fmt.Sprintf("sweep-%s-c%d", s.Name, c), Phase: phase, Server: s, Endpoint: endpoint, Conc: c,
						Duration: o.Duration, Warmup: o.Warmup})
					if s.Watchable() && c == slices.Max(o.sweepConc(s)) {
						// The top step again, watched: what held the
						// service's threads, and what watching cost it
						// (against the step just measured unwatched).
						add(Step{ID: fmt.Sprintf("sweep-%s-c%d-%s", s.Name, c, results.Watched), Phase: phase, Server: s, Endpoint: endpoint, Conc: c,
							Variant: results.Watched, Duration: o.Duration, Warmup: o.watchWarmup(s)})
					}
				}
			}
		case "stall":
			for _, s := range o.servers() {
				var ks []int
				for k := 0; k <= o.loopsOf(s); k++ {
					ks = append(ks, k)
				}
				if s.Kind != "loop" {
					ks = []int{0, o.Loops} // the contrast: as many blockers, no stall
				}
				for _, k := range ks {
					if k == 0 && o.Stage {
						continue // the stage shows k = 1 and up (screen 4): the baseline is the report's
					}
					add(Step{ID: fmt.Sprintf("stall-%s-k%d", s.Name, k), Phase: phase, Server: s, Endpoint: "/slow", K: k,
						Conc: k, Duration: o.short(), Warmup: 300 * time.Millisecond})
				}
			}
		case "offload":
			for _, s := range o.servers() {
				// Every step id names its server, so two servers of one kind
				// keep their files and rows apart.
				variants := []struct{ name, endpoint string }{{"pool", "/slow"}}
				if s.Kind == "loop" {
					variants = []struct{ name, endpoint string }{{"blocking", "/slow"}, {"offloaded", "/offload"}}
				}
				for _, v := range variants {
					add(Step{ID: "offload-" + s.Name + "-" + v.name, Phase: phase, Server: s, Endpoint: v.endpoint, Conc: maxConc, Variant: v.name,
						Duration: o.Duration, Warmup: o.Warmup})
				}
			}
		case "trace":
			for _, s := range o.servers() {
				add(Step{ID: "trace-" + s.Name, Phase: phase, Server: s, Endpoint: "/slow", Conc: o.TraceCallers, Duration: o.short(), Warmup: 300 * time.Millisecond})
			}
		case "cliff":
			for _, s := range o.servers() {
				// A pool at shares of its slots; a server with no declared
				// pool (a goroutine per connection or request) at the same
				// callers as the run's pool, to see whether it has one.
				size := s.Workers
				switch {
				case s.Kind == "goroutine":
					size = o.Slots
				case s.Kind != "pool":
					continue
				}
				// Behind fewer database connections, the pool that binds
				// is theirs: its cliff is at their number.
				if s.DBConns > 0 {
					size = min(size, s.DBConns)
				}
				for _, pct := range findings.CliffShares {
					add(Step{ID: fmt.Sprintf("cliff-%s-%dpct", s.Name, pct), Phase: phase, Server: s, Endpoint: "/slow",
						Conc: max(1, size*pct/100), Variant: fmt.Sprintf("%d%%", pct), Duration: o.Duration, Warmup: o.Warmup})
				}
			}
		case "slip":
			for _, s := range o.servers() {
				st := Step{ID: "slip-" + s.Name, Phase: phase, Server: s, Endpoint: "/slow", Conc: maxConc, Warmup: 300 * time.Millisecond,
					Variant: o.Block.String() + " -> " + o.SlipBlock.String()}
				st.Duration = o.slipWindow(st)
				st.SlipAtNs = int64(st.Duration / 2)
				if o.Stage {
					// On stage the presenter's key slows the call: the
					// before side waits for it, four times a side at most.
					half := st.Duration / 2
					st.SlipAtNs, st.Duration = int64(stageSlipWait*half), (stageSlipWait+1)*half
				}
				add(st)
			}
		}
	}
	// Each step's block by the road a run read back takes: its params.
	bp := o.blockParams()
	for i := range p.Steps {
		p.Steps[i].Block, p.Steps[i].SlipBlock = bp.BlockOf(p.Steps[i]), bp.SlipBlockOf(p.Steps[i])
	}
	// A --target skips the phases its check said it cannot take part in.
	p.Skips = map[string]string{}
	for _, t := range o.Targets {
		for _, st := range p.Steps {
			if why := t.Skips[st.Phase]; why != "" && st.Server.Name == t.Name {
				p.Skips[st.ID] = why
			}
		}
	}
	return p
}

// startCost is the time a step spends outside its measurement: starting
// and stopping processes, placing connections; jvmStart what a JVM adds.
const (
	startCost = 700 * time.Millisecond
	jvmStart  = 1500 * time.Millisecond
)

// cost is how long one step should take.
func (p Plan) cost(s Step) time.Duration {
	d := s.Warmup + s.Duration + startCost
	if s.Server.AsIs() {
		d += placeAllowance
	}
	if jvmServer(s.Server) {
		d += jvmStart + p.Options.JVMWarmup
	}
	if s.Server.AsIs() && s.Phase == "sweep" && s.Conc == p.Options.sweepConc(s.Server)[0] {
		d += p.Options.JVMWarmup // warmed up before its first measurement
	}
	return d
}

// Expected is how long the plan should take.
func (p Plan) Expected() time.Duration {
	var d time.Duration
	for _, s := range p.Steps {
		if p.Skips[s.ID] == "" {
			d += p.cost(s)
		}
	}
	return d * time.Duration(p.Options.Repeat)
}

// Describe prints the plan.
func (p Plan) Describe(w io.Writer) {
	o := p.Options
	fmt.Fprintf(w, "bystander: %s x %s, expected %s; results in %s\n",
		words.Plural(len(p.Steps), "measurement"), words.Plural(o.Repeat, "repetition"), p.Expected().Round(time.Second), o.Out)
	if len(o.Servers) > 0 {
		fmt.Fprintf(w, "  servers %s (engines %s; %d loops, %d slots); block %s for sweep and offload, %s for stall, trace and cliff, mode %s\n",
			strings.Join(o.Servers, ","), strings.Join(o.Engines, ","), o.Loops, o.Slots, o.Block, o.StallBlock, o.BlockMode)
	} else {
		fmt.Fprintf(w, "  block %s for sweep and offload, %s for stall, trace and cliff (asked with ?block=)\n", o.Block, o.StallBlock)
	}
	for _, t := range o.Targets {
		fmt.Fprintf(w, "  target %s at %s: %s\n", t.Name, t.URL, t.Server.Facts)
		if t.Server.AsIs() {
			fmt.Fprintf(w, "  target %s as it is: the sweep loads %s at %s callers; the bystander %s is probed every %s, and on %d connections every %s\n",
				t.Name, t.Server.Load, words.Ints(o.sweepConc(t.Server), ","), t.Server.Bystander, o.ProbeInterval, asIsConns, stallInterval)
			fmt.Fprintf(w, "  target %s: %s\n", t.Name, watchPlan(t, slices.Max(o.sweepConc(t.Server))))
		}
	}
	if o.BlockMode == "postgres" {
		fmt.Fprintf(w, "  each server's blocking call is SELECT pg_sleep on one of %s of its own (pgx; HikariCP for Java) to %s\n",
			words.Plural(o.DBPool, "database connection"), cmp.Or(o.dbDesc, "PostgreSQL"))
	}
	if o.usesJava() {
		mode := "block with Thread.sleep (not --block-mode), and"
		if o.BlockMode == "postgres" {
			mode = "call the database through HikariCP, and"
		}
		fmt.Fprintf(w, "  the Java servers %s are loaded on every endpoint for %s after each\n"+
			"  start, before they are measured: a JVM compiles the code that runs hot, and its first seconds are several times slower (--jvm-warmup)\n", mode, o.JVMWarmup)
	}
	for _, phase := range allPhases {
		var n int
		var d time.Duration
		for _, s := range p.Steps {
			if s.Phase == phase && p.Skips[s.ID] == "" {
				n++
				d += p.cost(s)
			}
		}
		if n > 0 {
			fmt.Fprintf(w, "  %-8s %15s, about %s: %s\n", phase, words.Plural(n, "measurement"), d.Round(time.Second), o.story(phase))
		}
	}
}

// story is one line on what a phase does, with this run's values.
func (o Options) story(phase string) string {
	switch phase {
	case "sweep":
		asIs := fmt.Sprintf("the --target's own request (--load) at 1 caller and each concurrency, its bystander (--bystander) probed every %s and on %d connections every %s meanwhile",
			o.ProbeInterval, asIsConns, stallInterval)
		switch {
		case o.Load != "" && len(o.Servers) == 0:
			return asIs
		case o.Load != "":
			return fmt.Sprintf("%s at each concurrency with a /fast bystander probing every %s meanwhile; on %s", o.SweepEndpoint, o.ProbeInterval, asIs)
		}
		return fmt.Sprintf("%s at each concurrency with a /fast bystander probing every %s meanwhile", o.SweepEndpoint, o.ProbeInterval)
	case "stall":
		from, pools := 0, fmt.Sprintf("0 and %d", o.Loops)
		if o.Stage {
			from, pools = 1, fmt.Sprint(o.Loops) // the stage shows k = 1 and up
		}
		if len(o.Targets) > 0 {
			return fmt.Sprintf("%d /async connections per loop, then k = %d up to every loop kept blocked (without loops: %s callers)", stallConnsPerLoop, from, pools)
		}
		return fmt.Sprintf("%d /async connections, then k = %d..%d loops (or k pool callers) kept blocked", stallConnsPerLoop*o.Loops, from, o.Loops)
	case "offload":
		return "at the highest concurrency: /slow on the loops, /offload on the loops, /slow on a pool"
	case "trace":
		return fmt.Sprintf("/async taken apart while %d callers block on /slow", o.TraceCallers)
	case "cliff":
		return fmt.Sprintf("each pool with callers at %s of its slots, /fast probed meanwhile", words.Percents(findings.CliffShares))
	case "slip":
		when := "from halfway"
		if o.Stage {
			when = "from the presenter's key"
		}
		return fmt.Sprintf("/slow at %d callers asking for %s, then %s %s (the bad afternoon), /fast probed meanwhile", slices.Max(o.Conc), o.Block, o.SlipBlock, when)
	}
	return ""
}

// slipBlock is the slowed call the run records: none without the slip.
// blockParams are the run's params (run.json's) as far as the block goes:
// the plan gives each step its block from them (RunParams.BlockOf).
func (o Options) blockParams() results.RunParams {
	return results.RunParams{Block: o.Block, StallBlock: o.StallBlock, SlipBlock: slipBlock(o)}
}

func slipBlock(o Options) results.Block {
	if !slices.Contains(o.Phases, "slip") {
		return 0
	}
	return o.SlipBlock
}
