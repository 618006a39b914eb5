package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/examples/java"
	"github.com/bystander-kit/bystander/internal/cli"
	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/experiment"
)

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

// parseFlags reads run.sh's arguments into the experiment's Options: the
// flags over its defaults, then the defaults that follow the flags given
// (settle), then the experiment's own check (Options.Validate). now names
// the default run directory.
func parseFlags(args []string, stderr io.Writer, now time.Time) (experiment.Options, error) {
	o := experiment.Defaults()
	// Their defaults follow other flags (settle): their help says so in
	// words, and no value of its own.
	o.TraceCallers, o.SlipBlock = 0, 0
	fs := flagSet(&o)
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
	if err := settle(&o, set, now); err != nil {
		return o, err
	}
	return o, o.Validate()
}

// flagSet is run.sh's flags, each read into o, o's values their defaults.
func flagSet(o *experiment.Options) *flag.FlagSet {
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
	fs.Var(listFlag{dst: &o.Engines}, "engines", "loop server engines, any of "+strings.Join(experiment.LoopEngines, ",")+" (the loop server's --engine)")
	fs.Var(listFlag{dst: &o.Servers, allowEmpty: true}, "servers", "servers the kit starts, any of "+strings.Join(experiment.KitServers(), ",")+
		" (netty and tomcat, the published experiment's own, need Java: "+java.Install+"),\nor none (--servers=) to measure only --target servers")
	fs.Var(targetsFlag{&o.Targets}, "target", "measure a server you started, `NAME=URL[,loops=N|,workers=N][,offload=N][,pid=N][,pprof=URL]` (repeatable): URL is its base\n"+
		"(http://127.0.0.1:8090); loops or workers are learned from X-Loop when not given; offload= is its /offload pool's\n"+
		"workers; pid= gives its CPU and context switches from /proc, and in the stall phase the threads the blockers held,\n"+
		"seen from outside (/proc, and a JVM's stacks with jcmd). Checked first (prober --mode check; one not listening yet\n"+
		"is waited for up to 10 s). With --load, pid= or\n"+
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
	fs.Var(listFlag{dst: &o.Phases}, "phases", "phases: "+strings.Join(experiment.Phases(), ","))
	fs.StringVar(&o.Out, "out", "", "run directory, new or empty; a relative path is where you stand (default results/<UTC timestamp> beside --bin,\nmade new by this run: <UTC timestamp>-2 when another run of the same second has it)")
	fs.BoolVar(&o.Overwrite, "overwrite", false, "clear --out first when it holds an earlier run of the kit's and nothing else (only the files that run lists are removed)")
	fs.IntVar(&o.Repeat, "repeat", o.Repeat, "repetitions; variants alternate within each, medians and spread reported")
	fs.BoolVar(&o.Pin, "pin", false, "start servers and generators on disjoint CPU sets (taskset); needs 2 CPUs or more")
	fs.BoolVar(&o.Quick, "quick", false, "short durations, for a first look")
	fs.BoolVar(&o.Open, "open", false, "open the report when done (with --stage: open the stage page at once)")
	fs.BoolVar(&o.Stage, "stage", false, "give the talk: serve a live page of the experiment (6 screens, driven by a clicker or the keyboard; a speaker view at /presenter) and measure as it asks;\n"+
		"the recorded talk is written beside the run as one file, talk.html, to give anywhere offline. With --load and --servers=: the talk on your own service (docs/talk.md)")
	fs.BoolVar(&o.Auto, "auto", false, "with --stage: advance the screens by themselves once a page is open (rehearsals, tests), and exit at the end")
	fs.DurationVar(&o.AutoWait, "auto-wait", o.AutoWait, "with --auto: how long to wait for a page to open before measuring without one (0: do not wait)")
	fs.StringVar(&o.Replay, "replay", "", "with --stage: play the stage recorded in this run directory at its real pace (the forward key skips to the next slide), without servers")
	fs.StringVar(&o.StageAddr, "stage-addr", o.StageAddr, "with --stage: where to serve the page (a loopback address; port 0 picks one)")
	fs.DurationVar(&o.JVMWarmup, "jvm-warmup", o.JVMWarmup, "how long a Java server (netty, tomcat) is loaded on every endpoint after each start, before it is measured:\na JVM compiles the code that runs hot, and its first seconds are several times slower (half with --quick);\n"+
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
	return fs
}

// settle gives the flags not set (set: those given) their defaults that
// depend on others, and makes the paths absolute.
func settle(o *experiment.Options, set map[string]bool, now time.Time) error {
	if o.Quick {
		if !set["duration"] {
			o.Duration = experiment.QuickDuration
		}
		if !set["warmup"] {
			o.Warmup = experiment.QuickWarmup
		}
		if !set["jvm-warmup"] {
			o.JVMWarmup /= 2
		}
	}
	if o.Load != "" && set["sweep-endpoint"] {
		return errors.New("run.sh: --load goes without --sweep-endpoint: the sweep loads the --target's own request (the kit's servers keep /slow)")
	}
	if o.Stage && !set["phases"] {
		o.Phases = experiment.StagePhases()
	}
	if !set["trace-callers"] {
		o.TraceCallers = experiment.TraceCallersPerLoop * o.Loops
	}
	if !set["slip-block"] {
		o.SlipBlock = experiment.SlipTimes * o.Block
	}
	// Paths the user gives are where the user stands (run.sh runs the
	// orchestrator there), and are said whole; the default run directory
	// lies beside the kit's bin directory, in results/.
	if o.Out == "" {
		o.Out = experiment.DefaultOut(o.Bin, now)
		o.OutFresh = true
	}
	o.Out = abs(o.Out)
	if o.Replay != "" {
		o.Replay = abs(o.Replay)
	}
	return nil
}

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

var targetName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,31}$`)

// targetsFlag is --target, repeatable.
type targetsFlag struct{ dst *[]experiment.Target }

func (f targetsFlag) String() string {
	if f.dst == nil {
		return ""
	}
	var s []string
	for _, t := range *f.dst {
		s = append(s, t.Name+"="+t.URL)
	}
	return strings.Join(s, " ")
}

func (f targetsFlag) Set(v string) error {
	t, err := parseTarget(v)
	if err != nil {
		return err
	}
	*f.dst = append(*f.dst, t)
	return nil
}

func parseTarget(v string) (experiment.Target, error) {
	name, rest, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return experiment.Target{}, fmt.Errorf("%q: want NAME=URL[,loops=N|,workers=N][,offload=N][,pid=N][,pprof=URL]", v)
	}
	if !targetName.MatchString(name) {
		return experiment.Target{}, fmt.Errorf("name %q: want lower-case letters, digits, '.', '_' or '-', at most 32", name)
	}
	parts := strings.Split(rest, ",")
	t := experiment.Target{Name: name, URL: strings.TrimRight(parts[0], "/")}
	u, err := url.Parse(t.URL)
	if err == nil && u.User != nil {
		return experiment.Target{}, fmt.Errorf("%s: URL %q: %w", name, u.Redacted(), client.ErrCredentials)
	}
	if err == nil && strings.EqualFold(u.Scheme, "https") {
		return experiment.Target{}, fmt.Errorf("%s: URL %q: %w", name, u.Redacted(), client.ErrHTTPS)
	}
	if err != nil || u.Scheme != "http" || u.Host == "" || u.Path != "" || u.RawQuery != "" {
		return experiment.Target{}, fmt.Errorf("%s: URL %q: want the server's base URL, http://host:port", name, parts[0])
	}
	for _, p := range parts[1:] {
		k, val, ok := strings.Cut(p, "=")
		if k == "pprof" {
			pp, err := pprofBase(val)
			if err != nil {
				return experiment.Target{}, fmt.Errorf("%s: %w", name, err)
			}
			t.Pprof = pp
			continue
		}
		n, err := strconv.Atoi(val)
		if !ok || err != nil || n < 1 || n > 1<<22 {
			return experiment.Target{}, fmt.Errorf("%s: %q: want loops=N, workers=N, offload=N or pid=N with N a positive whole number", name, p)
		}
		switch k {
		case "loops":
			t.Loops = n
		case "workers":
			t.Workers = n
		case "offload":
			t.Offload = n
		case "pid":
			t.PID = n
		default:
			return experiment.Target{}, fmt.Errorf("%s: unknown fact %q: want loops, workers, offload, pid or pprof", name, k)
		}
	}
	if t.Loops > 0 && t.Workers > 0 {
		return experiment.Target{}, fmt.Errorf("%s: loops= and workers= both given: a server has event loops (X-Loop) or a pool of workers", name)
	}
	return t, nil
}

// pprofBase reads pprof='s value: a Go service's listener that serves
// /debug/pprof/, http://HOST:PORT (its path may end in /debug/pprof), as
// the kit keeps it: without a trailing slash, no query, no credentials.
func pprofBase(v string) (string, error) {
	v = strings.TrimRight(v, "/")
	u, err := url.Parse(v)
	switch {
	case err == nil && u.User != nil:
		return "", fmt.Errorf("pprof=%q: %w", u.Redacted(), client.ErrCredentials)
	case err == nil && strings.EqualFold(u.Scheme, "https"):
		return "", fmt.Errorf("pprof=%q: %w", u.Redacted(), client.ErrHTTPS)
	case err != nil || u.Scheme != "http" || u.Host == "" || u.Port() == "" || u.RawQuery != "" || u.Fragment != "" ||
		(u.Path != "" && !strings.HasSuffix(u.Path, "/debug/pprof")):
		return "", fmt.Errorf("pprof=%q: want the listener that serves /debug/pprof/ of a Go service with net/http/pprof, http://HOST:PORT", v)
	}
	return v, nil
}
