package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bystander-kit/bystander/internal/files"
	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/pgrun"
	"github.com/bystander-kit/bystander/internal/ready"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/words"
)

// asIsTarget is the --target s is when it is measured as it is, else nil.
func (r *runner) asIsTarget(s Server) *Target {
	if !s.AsIs() {
		return nil
	}
	for i := range r.o.Targets {
		if t := &r.o.Targets[i]; t.Name == s.Name && t.load != nil {
			return t
		}
	}
	return nil
}

// runner carries one run.
type runner struct {
	o     Options
	plan  Plan
	dir   string
	procs *procs
	mu    sync.Mutex // guards run
	run   *results.Run
	out   io.Writer
	prog  *progress
	hub   *stageHub // the stage's live view, or nil
	start time.Time
	// warmed are the servers measured as they are that were warmed up.
	warmed map[string]bool
	// noJcmd are the servers whose stacks jcmd refused in this run
	// (guarded by mu): not asked again.
	noJcmd map[string]bool
	// dbSaid: the private database's death was said.
	dbSaid sync.Once
}

// Run executes the plan built from o: preflight, the output directory, the
// servers the user started, measuring (or the stage), and the write-up. It
// returns nil, ErrFailed when a measurement failed (the others are kept and
// shown), or why the run could not be made or was interrupted; Exit turns
// that into the status and says what the terminal has not been told.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	if o.Replay != "" {
		return runReplay(ctx, o, stdout, stderr)
	}
	procs, err := preflight(ctx, o, stdout)
	if err != nil {
		return refused(err)
	}
	defer procs.cleanReady()
	out, err := newOutDir(o)
	if err != nil {
		return refused(err)
	}
	o.Out = out.path // the default's own: results/<ts>, or <ts>-2 when another run took it
	defer out.dropUnlessKept()
	// Servers the user started are checked first: what they are decides
	// the plan, and one that cannot be measured is refused before any load.
	if err := resolve(ctx, &o, stdout); err != nil {
		if ctx.Err() != nil {
			return &exitError{code: 130, err: err}
		}
		return refused(err)
	}
	stopDB, err := startDB(ctx, &o, stdout)
	if err != nil {
		if ctx.Err() != nil {
			return &exitError{code: 130, err: err}
		}
		return refused(err)
	}
	defer stopDB()
	dropDBSecrets()
	r := newRunner(o, procs, stdout)
	defer r.procs.stopAll()
	if o.Stage {
		done, err := r.runStage(ctx, stdout, out.keep)
		if err != nil {
			return err
		}
		defer done() // the page stays up until Ctrl-C, which does not undo the run
	} else {
		out.keep()
		r.measure(ctx)
	}
	return r.finish(ctx)
}

// ErrFailed: a measurement failed; what was measured is kept and shown,
// and the tables say what failed.
var ErrFailed = errors.New("run.sh: a measurement failed (the tables say which)")

// exitError is an error that asks for an exit status of its own.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// refused is a run that could not start (a flag, a missing program, a
// refused target): status 2.
func refused(err error) error { return &exitError{code: 2, err: err} }

// errInterrupted: the run was interrupted; what it measured is written up.
var errInterrupted = &exitError{code: 130, err: errors.New("run.sh: interrupted")}

// Exit is the status for Run's error (0, 1 when a measurement failed, 2
// when the run could not start, 130 when interrupted), and writes to
// stderr what the terminal has not been told (the tables tell of failed
// measurements, the progress lines of an interruption).
func Exit(err error, stderr io.Writer) int {
	var e *exitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrFailed):
		return 1
	case err == errInterrupted:
		return 130
	case errors.As(err, &e):
		fmt.Fprintln(stderr, err)
		return e.code
	}
	fmt.Fprintln(stderr, err)
	return 1
}

// preflight checks what a run needs before it touches anything: a plan,
// the kit's programs, taskset for --pin, the Java servers built, and a
// private directory for the servers' ready files.
func preflight(ctx context.Context, o Options, stdout io.Writer) (*procs, error) {
	if len(BuildPlan(o).Steps) == 0 {
		return nil, errors.New("run.sh: nothing to run: no phase applies to the servers chosen (cliff needs a pool)")
	}
	procs := &procs{bin: o.Bin, pin: o.Pin, cleanReady: func() {}}
	if o.Pin {
		s, g, err := cpuSets(runtime.NumCPU())
		if err != nil {
			return nil, err
		}
		if _, err := exec.LookPath("taskset"); err != nil {
			return nil, errors.New("run.sh: --pin needs taskset (apt-get install util-linux)")
		}
		procs.serverCPUs, procs.genCPUs = s, g
	}
	for _, b := range []string{"loopserver", "poolserver", "loadgen", "prober"} {
		if _, err := os.Stat(filepath.Join(o.Bin, b)); err != nil {
			return nil, fmt.Errorf("run.sh: %s is missing: run ./run.sh, which builds the kit into %s first", filepath.Join(o.Bin, b), o.Bin)
		}
	}
	if err := buildJava(ctx, o, func(s string) { fmt.Fprintln(stdout, s) }); err != nil {
		return nil, err
	}
	for _, line := range pgrun.Sweep() {
		fmt.Fprintln(stdout, "bystander: "+line)
	}
	rdir, cleanReady, err := readyDir()
	if err != nil {
		return nil, err
	}
	procs.readyDir, procs.cleanReady = rdir, cleanReady
	return procs, nil
}

// outDir is the run directory. A run that fails before it measures
// anything (a refused --target, a stage whose address is taken) leaves
// nothing behind: the directory it made is removed, one given empty is
// emptied again.
type outDir struct {
	path       string
	made, kept bool
}

// newOutDir makes the run directory: --out as prepareOut says, or the
// default results/<UTC timestamp>, made new by this run alone (freshDir).
func newOutDir(o Options) (*outDir, error) {
	if o.outDefault {
		path, err := freshDir(o.Out)
		return &outDir{path: path, made: err == nil}, err
	}
	_, statErr := os.Stat(o.Out)
	d := &outDir{path: o.Out, made: errors.Is(statErr, fs.ErrNotExist)}
	return d, prepareOut(o.Out, o.Overwrite)
}

// freshDir makes base, or base-2, base-3 ... when taken, and returns the
// one it made: each made exclusively (mkdir fails on one that exists), so
// two runs started in the same second never share one.
func freshDir(base string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return "", fmt.Errorf("run.sh: %v", err)
	}
	for i := 1; i <= maxSameSecond; i++ {
		path := base
		if i > 1 {
			path += "-" + strconv.Itoa(i)
		}
		err := os.Mkdir(path, 0o755)
		if err == nil {
			return path, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("run.sh: %v", err)
		}
	}
	return "", fmt.Errorf("run.sh: %s and %s-2 to -%d are all taken (%d runs in one second?): give --out", base, base, maxSameSecond, maxSameSecond)
}

// maxSameSecond is how many default run directories one second may have.
const maxSameSecond = 100

// keep: measuring has begun, and what it writes stays.
func (d *outDir) keep() { d.kept = true }

func (d *outDir) dropUnlessKept() {
	if d.kept {
		return
	}
	if d.made {
		os.RemoveAll(d.path)
		return
	}
	if es, err := os.ReadDir(d.path); err == nil {
		for _, e := range es {
			os.RemoveAll(filepath.Join(d.path, e.Name()))
		}
	}
}

// newRunner plans the run, says what it will do, and writes its first
// run.json.
func newRunner(o Options, procs *procs, stdout io.Writer) *runner {
	plan := BuildPlan(o)
	r := &runner{o: o, plan: plan, dir: o.Out, out: stdout, procs: procs, start: time.Now(), warmed: map[string]bool{}}
	plan.Describe(stdout)
	if o.Pin {
		fmt.Fprintf(stdout, "  pinned: servers on CPUs %s, load generators and probers on CPUs %s\n", r.procs.serverCPUs, r.procs.genCPUs)
		if len(o.Targets) > 0 {
			fmt.Fprintln(stdout, "  not pinned: the --target servers (the kit did not start them)")
		}
	}
	r.run = newRun(plan, r.start)
	r.procs.onStart = func(pid int, name string) {
		r.mu.Lock()
		r.run.Processes = append(r.run.Processes, results.Process{PID: pid, Name: name})
		r.mu.Unlock()
	}
	r.save()
	r.prog = newProgress(stdout, plan)
	return r
}

// measure runs every step of the plan, each repetition in turn; a step
// after an interruption, or one the plan skips, is recorded as skipped.
func (r *runner) measure(ctx context.Context) {
	i := 0
	for rep := 1; rep <= r.o.Repeat; rep++ {
		for _, step := range r.plan.Steps {
			switch why := r.plan.Skips[step.ID]; {
			case ctx.Err() != nil:
				r.set(i, func(m *results.Measurement) { m.Status, m.Reason = "skipped", "the run was interrupted before it" })
			case why != "":
				r.set(i, func(m *results.Measurement) { m.Status, m.Reason = "skipped", why })
			default:
				r.prog.begin(step, rep)
				m := r.step(ctx, step, rep)
				r.set(i, func(mm *results.Measurement) { *mm = m })
				r.prog.end(m, r.said(m))
				r.sayWatch(m)
				r.save()
			}
			i++
		}
	}
}

// finish ends the run: the servers stopped, run.json closed, the report,
// the tables and findings written, and where they are said.
func (r *runner) finish(ctx context.Context) error {
	r.prog.finish()
	r.procs.stopAll()
	end := time.Now()
	r.mu.Lock()
	r.run.Manifest.EndUnixNs, r.run.Manifest.EndUTC = end.UnixNano(), end.UTC().Format(time.RFC3339Nano)
	r.run.Partial, r.run.PartialReason = false, ""
	if ctx.Err() != nil {
		r.run.Partial = true
		r.run.PartialReason = fmt.Sprintf("interrupted after %s", end.Sub(r.start).Round(time.Second))
	}
	r.mu.Unlock()
	r.report()
	r.save()

	var sb strings.Builder
	fd := findings.Compute(r.dir, r.run)
	fd.WriteTables(&sb)
	fmt.Fprint(r.out, sb.String())
	_ = files.WriteAtomic(filepath.Join(r.dir, "summary.txt"), []byte(sb.String()), 0o644)
	_ = files.WriteAtomic(filepath.Join(r.dir, "findings.json"), fd.FaceJSON(), 0o644)
	fmt.Fprintf(r.out, "\nresults: %s\n", r.dir)
	if r.run.Report != "" {
		fmt.Fprintf(r.out, "report:  %s\n", filepath.Join(r.dir, r.run.Report))
	} else {
		fmt.Fprintf(r.out, "report:  none (%s)\n", r.run.ReportNote)
	}
	if r.o.Open && r.run.Report != "" && !r.o.Stage {
		openReport(r.out, filepath.Join(r.dir, r.run.Report))
	}
	switch {
	case ctx.Err() != nil:
		return errInterrupted
	case r.failedCount() > 0:
		return ErrFailed
	}
	return nil
}

func newRun(plan Plan, start time.Time) *results.Run {
	o := plan.Options
	env := results.ReadEnv()
	run := &results.Run{
		Schema: results.RunSchema,
		// Until the run ends and says otherwise: a run killed outright
		// (SIGKILL, a crash) leaves this behind.
		Partial:       true,
		PartialReason: "unfinished: the run was still going when this was written, or was killed before it ended",
		Params: results.RunParams{
			Block: o.Block, StallBlock: o.StallBlock, Conc: o.Conc, DurationNs: int64(o.Duration),
			WarmupNs: int64(o.Warmup), Engines: o.Engines, Servers: o.Servers, Phases: o.Phases, Repeat: o.Repeat,
			Pin: o.Pin, Quick: o.Quick, Args: o.Args, Loops: o.Loops, PoolSlots: o.Slots, ProbeEveryNs: int64(o.ProbeInterval),
			BlockMode: o.BlockMode, DBPool: dbPool(o), DB: o.dbDesc, OffloadWorkers: o.Slots, AsyncDelayNs: int64(o.Delay), StallConns: stallConnsPerLoop * o.Loops,
			StallIntervalNs: int64(stallInterval), TraceCallers: o.TraceCallers, TraceConns: traceConnsPerLoop * o.Loops,
			Targets: targetServers(o.Targets), SweepEndpoint: o.SweepEndpoint, Stage: o.Stage, SlipBlock: slipBlock(o),
		},
		Manifest: results.Manifest{
			GitCommit: gitCommit(), GoVersion: goVersion(), Kernel: env.Kernel, CPUModel: env.CPUModel, Cores: env.NumCPU,
			StartUnixNs: start.UnixNano(), StartUTC: start.UTC().Format(time.RFC3339Nano), ExpectedNs: int64(plan.Expected()),
		},
		Processes: []results.Process{},
	}
	for rep := 1; rep <= o.Repeat; rep++ {
		for _, s := range plan.Steps {
			run.Measurements = append(run.Measurements, results.Measurement{Step: s, Repeat: rep, Status: "pending"})
		}
	}
	return run
}

// prepareOut makes dir the run directory: new, or empty, so no earlier
// run's files mix with this one's. With overwrite, a directory that holds
// an earlier run of the kit's (a run.json it wrote, of a schema it reads)
// and nothing else is cleared first; anything else is refused, and nothing
// is removed.
func prepareOut(dir string, overwrite bool) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("run.sh: --out %s: %v", dir, err)
	case len(entries) > 0 && !overwrite:
		return fmt.Errorf("run.sh: --out %s is not empty (%s): give a new or empty directory, or --overwrite to clear an earlier run there", dir, words.Plural(len(entries), "entry"))
	case len(entries) > 0:
		paths, err := earlierRun(dir)
		if err != nil {
			return fmt.Errorf("run.sh: --out %s: %v: not cleared; give a new or empty directory", dir, err)
		}
		for _, p := range paths { // deepest first: a phase's files before its directory
			if err := os.Remove(filepath.Join(dir, p)); err != nil {
				return fmt.Errorf("run.sh: --overwrite: %v", err)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("run.sh: --out %s: %v", dir, err)
	}
	return nil
}

// earlierRun lists what dir holds, deepest first, when it is an earlier
// run of the kit's and nothing else: its run.json one the kit wrote (read
// strictly, of a schema it knows), every other entry a file the kit writes
// in a run (the results of the measurements run.json lists, with their
// ready files and live streams, in their phase's directory; the summary,
// findings, report, stage recording and checks). A symbolic link, a
// directory of the user's or a file the run does not list is refused:
// --overwrite must never remove what the kit did not write.
func earlierRun(dir string) ([]string, error) {
	run, err := results.ReadRun(dir)
	if err != nil {
		return nil, fmt.Errorf("it holds no run of the kit's (%v)", err)
	}
	top := map[string]bool{"run.json": true, "summary.txt": true, "findings.json": true, "report.html": true, "stage.ndjson": true, "stage.html": true}
	if run.Report != "" && !strings.ContainsAny(run.Report, `/\`) {
		top[run.Report] = true
	}
	ids := map[string]map[string]bool{} // phase -> the bases of its measurements' files
	for _, m := range run.Measurements {
		if ids[m.Phase] == nil {
			ids[m.Phase] = map[string]bool{}
		}
		ids[m.Phase][m.ID] = true
		if m.Server.External {
			top["check-"+m.Server.Name+".json"] = true
		}
		ids[m.Phase][m.ID+".r"+strconv.Itoa(m.Repeat)] = true
	}
	kitFile := func(phase, name string) bool {
		base, _, ok := strings.Cut(name, ".")
		if !ok {
			return false
		}
		// base.rN.kind.json for a run of repetitions
		if n, _, _ := strings.Cut(strings.TrimPrefix(name, base+"."), "."); len(n) > 1 && n[0] == 'r' && strings.Trim(n[1:], "0123456789") == "" {
			base += "." + n
		}
		return ids[phase][base]
	}
	var paths, strangers []string
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.Type().IsRegular() && top[name]:
			paths = append(paths, name)
		case e.IsDir() && ids[name] != nil:
			sub, err := os.ReadDir(filepath.Join(dir, name))
			if err != nil {
				return nil, err
			}
			for _, f := range sub {
				if f.Type().IsRegular() && kitFile(name, f.Name()) {
					paths = append(paths, filepath.Join(name, f.Name()))
				} else {
					strangers = append(strangers, filepath.Join(name, f.Name()))
				}
			}
			paths = append(paths, name)
		default:
			strangers = append(strangers, name)
		}
	}
	if len(strangers) > 0 {
		if len(strangers) > 3 {
			strangers = append(strangers[:3], fmt.Sprintf("and %d more", len(strangers)-3))
		}
		return nil, fmt.Errorf("it holds an earlier run and what the run did not write (%s)", strings.Join(strangers, ", "))
	}
	return paths, nil
}

func (r *runner) set(i int, f func(*results.Measurement)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.run.Measurements[i])
}

func (r *runner) failedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.run.Measurements {
		if m.Status == "failed" {
			n++
		}
	}
	return n
}

func (r *runner) save() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := results.WriteRun(r.dir, r.run); err != nil {
		fmt.Fprintf(r.out, "run.sh: writing run.json: %v\n", err)
	}
}

// step runs one measurement against a fresh server.
func (r *runner) step(ctx context.Context, s Step, rep int) results.Measurement {
	m := results.Measurement{Step: s, Repeat: rep, Status: "ok"}
	fail := func(format string, a ...any) results.Measurement {
		m.Status, m.Reason = "failed", fmt.Sprintf(format, a...)
		m.Use = nil // not a figure of a server that was working
		if ctx.Err() != nil {
			m.Status, m.Reason = "failed", "interrupted: "+m.Reason
		}
		return m
	}
	if why := r.dbGone(); why != "" {
		return fail("%s", why)
	}
	srv, err := r.procs.startServer(ctx, s.Server, s.Block, r.o)
	if err != nil {
		if why := r.dbGone(); why != "" {
			return fail("%s", why)
		}
		return fail("the server did not start: %v", err)
	}
	defer srv.stop(syscall.SIGTERM, 2*time.Second)
	if err := os.MkdirAll(filepath.Join(r.dir, s.Phase), 0o755); err != nil {
		return fail("%v", err)
	}
	if t := r.asIsTarget(s.Server); t != nil && !r.warmed[t.Name] {
		// Once, before its first measurement: a service the user started
		// may have just started (a JVM's first seconds are several times
		// slower), and its call's own time is the sweep's first step.
		r.warmed[t.Name] = true
		if err := warmAsIs(ctx, t, r.o.JVMWarmup); err != nil && ctx.Err() == nil {
			return fail("%v", err)
		}
	}
	base := s.ID
	if r.o.Repeat > 1 {
		base += ".r" + strconv.Itoa(rep)
	}
	rel := func(kind string) string { return filepath.Join(s.Phase, base+"."+kind+".json") }
	switch s.Phase {
	case "stall":
		err = r.stall(ctx, srv, s, rel, &m)
	case "trace":
		err = r.trace(ctx, srv, s, rel, &m)
	default:
		err = r.load(ctx, srv, s, rel, &m)
	}
	if r.o.Pin && err == nil && !s.Server.External {
		if perr := checkPinned(srv.pid(), r.procs.serverCPUs); perr != nil {
			err = fmt.Errorf("--pin: %w", perr)
		}
	}
	if ctx.Err() != nil {
		// Interrupted: a Ctrl-C at a terminal reaches the servers too, so
		// a server gone now ended with the run, not on its own.
		m.Status, m.Reason = "failed", "interrupted during the measurement; partial files kept"
		return m
	}
	if why := r.dbGone(); why != "" {
		return fail("%s", why)
	}
	if !srv.alive() {
		return fail("the server died during the measurement: %v", srv.exitErr())
	}
	if why := answeredNone(r.dir, m); why != "" {
		if err != nil { // the tools say what they got instead (loadgen and the prober exit 1 with no answer)
			return fail("%s; %v", why, err)
		}
		return fail("%s", why)
	}
	if err != nil {
		return fail("%v", err)
	}
	return m
}

// answeredNone says why a measurement whose tools all ran measured
// nothing: the server answered no request of its load (or, in a stall
// measurement, none of its probes and none of its blockers') in the
// window. A server that is alive but frozen (SIGSTOP), or overloaded past
// the window, leaves such a result: a row of 0 req/s is not a figure.
func answeredNone(dir string, m results.Measurement) string {
	answered := func(rel string) (int64, bool) {
		if rel == "" {
			return 0, false
		}
		r, err := results.ReadResultIn(dir, rel)
		if err != nil {
			return 0, false
		}
		switch {
		case r.Load != nil:
			return r.Load.Requests, true
		case r.PerConn != nil:
			var n int64
			for _, c := range r.PerConn.Conns {
				n += c.Samples
			}
			return n, true
		case r.Trace != nil:
			return int64(len(r.Trace.Samples)), true
		}
		return 0, false
	}
	var total int64
	seen := false
	for _, rel := range []string{m.LoadFile, m.PerConnFile, m.TraceFile} {
		if n, ok := answered(rel); ok {
			total += n
			seen = true
		}
	}
	if !seen || total > 0 {
		return ""
	}
	return "the server answered no request in the measured window: it stopped answering (a frozen process, one stopped with SIGSTOP, or one overloaded past the window); a row of 0 req/s would not be a figure"
}

// callTimeout is loadgen's per-request timeout for calls that ask for
// these blocks: the longest and 10 s more (loadgen's own default is 10 s).
// A call may be asked to hold its worker for up to 10 s (--stall-block), and
// one answered after loadgen's timeout counts as a timeout, not an answer:
// blockers whose every call timed out got no answer and fail their step.
func callTimeout(blocks ...time.Duration) string {
	return (slices.Max(append(blocks, 0)) + 10*time.Second).String()
}

// tool runs loadgen or prober to completion (bounded) and checks its exit.
func (r *runner) tool(ctx context.Context, c *child, limit time.Duration) error {
	err := c.wait(ctx, limit)
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 130 && ctx.Err() != nil {
		return nil // interrupted by us: the partial result is written
	}
	if err != nil {
		return c.exitErr()
	}
	return nil
}

// startDelay is how far ahead the load and its bystander prober are told
// to start their clocks (--start-at): time for both processes to start and
// open their connections, so the two share one measured window.
const startDelay = 300 * time.Millisecond

// load runs loadgen on the step's endpoint with the /fast prober probing
// over the same measured window, and samples the server's cost over it.
func (r *runner) load(ctx context.Context, srv *server, s Step, rel func(string) string, m *results.Measurement) error {
	total := s.Warmup + s.Duration
	asIs := s.Server.AsIs()
	lead := startDelay
	if asIs {
		lead += placeAllowance
	}
	at := time.Now().Add(lead)
	startAt := at.UTC().Format(time.RFC3339Nano)
	// The watched step: the service watched over the load, the watch's
	// source started now.
	wt := startWatch(ctx, s, at, at.Add(total))
	defer wt.wait()
	ready := filepath.Join(r.dir, s.Phase, s.ID+".ready")
	defer os.Remove(ready)
	tap := tapLag(ctx, srv, lead+total+time.Minute, r.lagEvent(s.Server.Name))
	defer tap.stop()
	// What the bystanders and the load ask: the protocol's /fast and the
	// step's endpoint, or a server's own requests (measured as it is).
	bystander := []string{"--target", "http://" + srv.addr + "/fast"}
	loadArgs := []string{"--target", "http://" + srv.addr + asked(s.Endpoint, s.Block.D())}
	var conns *child
	if asIs {
		bystander = []string{"--target", "http://" + srv.addr, "--bystander", toolSpec(r.o.Bystander)}
		loadArgs = []string{"--target", "http://" + srv.addr, "--load", toolSpec(r.o.Load)}
		// The 12-connection prober opens and places its connections first,
		// unloaded (its baseline), and so is dealt its connections before
		// anyone else's: on a server that deals them round robin, 3 on each
		// of 4 loops. Its clock is the load's.
		cready := filepath.Join(r.dir, s.Phase, s.ID+".conns.ready")
		defer os.Remove(cready)
		var err error
		conns, err = r.procs.start("gen", "prober", nil, append([]string{"--mode", "perconn", "--conns", strconv.Itoa(asIsConns),
			"--interval", stallInterval.String(), "--warmup", s.Warmup.String(), "--duration", s.Duration.String(), "--start-at", startAt,
			"--ready-file", cready, "--out", filepath.Join(r.dir, rel("perconn"))}, bystander...)...)
		if err != nil {
			return err
		}
		if !waitReady(ctx, conns, cready, at.Add(-startDelay/2)) && !conns.alive() {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("the 12-connection prober never got ready: %v", conns.exitErr())
		}
	}
	stopConns := func() {
		if conns != nil {
			conns.stop(os.Interrupt, 3*time.Second)
		}
	}
	prArgs, stopFast := r.liveArgs(s, "fast", append([]string{"--mode", "interval",
		"--interval", r.o.ProbeInterval.String(), "--warmup", s.Warmup.String(), "--duration", s.Duration.String(), "--start-at", startAt,
		"--ready-file", ready, "--out", filepath.Join(r.dir, rel("fast"))}, bystander...))
	defer stopFast()
	pr, err := r.procs.start("gen", "prober", nil, prArgs...)
	if err != nil {
		stopConns()
		return err
	}
	// The bystander's connection is dealt to a loop before the callers'
	// are, so the dealing is the same in every run: round-robin puts it
	// beside one caller's, as the published experiment's bystander was.
	waitReady(ctx, pr, ready, at)
	args := append(loadArgs, "--conc", strconv.Itoa(s.Conc),
		"--duration", s.Duration.String(), "--warmup", s.Warmup.String(), "--start-at", startAt, "--quiet", "--out", filepath.Join(r.dir, rel("load")),
		"--timeout", callTimeout(s.Block.D(), s.SlipBlock.D()))
	if s.SlipBlock > 0 {
		// The slip: the same endpoint, a slower call from halfway on,
		// counted in 100 ms steps.
		args = append(args, "--switch-to", "http://"+srv.addr+asked(s.Endpoint, s.SlipBlock.D()),
			"--switch-at", time.Duration(s.SlipAtNs).String(), "--tick", slipTick.String())
		if r.hub != nil {
			// On stage the presenter's key slows the call (tellSlip makes
			// the file); the plan's moment is the latest.
			args = append(args, "--switch-when", slipTold(r.dir, s))
		}
	}
	lgArgs, stopLoad := r.liveArgs(s, "load", args)
	defer stopLoad()
	lg, err := r.procs.start("gen", "loadgen", nil, lgArgs...)
	if err != nil {
		pr.stop(os.Interrupt, 3*time.Second)
		stopConns()
		return err
	}
	// What the processes and the machine used over most of the measured
	// window, read from /proc.
	from, to := at.Add(s.Warmup+100*time.Millisecond), at.Add(total-50*time.Millisecond)
	var s0, s1 sample
	pids := func() (int, int, int, int) { return srv.pid(), lg.cmd.Process.Pid, pr.cmd.Process.Pid, r.o.dbPID }
	connsPID := 0
	if conns != nil {
		connsPID = conns.cmd.Process.Pid
	}
	sampled := sleepUntil(ctx, from)
	if sampled {
		s0 = takeSample(pids())
		s0.conns = readProc(connsPID)
		sampled = sleepUntil(ctx, to)
		if sampled {
			s1 = takeSample(pids())
			s1.conns = readProc(connsPID)
		}
	}
	var pinErr error
	if r.o.Pin {
		// Every thread the generators started by now runs on their CPU set.
		for _, c := range []*child{lg, pr, conns} {
			if c != nil && c.alive() {
				if err := checkPinned(c.cmd.Process.Pid, r.procs.genCPUs); err != nil {
					pinErr = fmt.Errorf("--pin: %s: %w", c.name, err)
				}
			}
		}
	}
	errL := r.tool(ctx, lg, lead+total+30*time.Second)
	errP := r.tool(ctx, pr, lead+total+30*time.Second)
	var errC error
	if conns != nil {
		errC = r.tool(ctx, conns, lead+total+30*time.Second)
		if _, err := os.Stat(filepath.Join(r.dir, rel("perconn"))); err == nil {
			m.PerConnFile = rel("perconn")
		}
	}
	if _, err := os.Stat(filepath.Join(r.dir, rel("load"))); err == nil {
		m.LoadFile = rel("load")
	}
	if _, err := os.Stat(filepath.Join(r.dir, rel("fast"))); err == nil {
		m.ProbeFile = rel("fast")
	}
	var errW error
	if wt != nil {
		m.WatchFile, errW = wt.finish(r.dir, rel("watch"), s.Server.Name)
	}
	if err := errors.Join(errL, errP, errC, pinErr, errW); err != nil {
		return err
	}
	if m.LagFile, err = tap.finish(r.dir, rel("lag"), s.Server.Name, at.Add(s.Warmup), at.Add(total)); err != nil {
		return err
	}
	if m.LoadFile == "" {
		return fmt.Errorf("loadgen wrote no result")
	}
	lr, err := results.Read(filepath.Join(r.dir, m.LoadFile))
	if err != nil {
		return err
	}
	// A tool that started its clock late measured a window the /proc
	// readings (taken by the clock it was given) do not cover: the figures
	// it measured stand, the cost is not claimed.
	late := lateNotes(lr, r.dir, m.ProbeFile, m.PerConnFile)
	m.Notes = append(m.Notes, late...)
	if sampled && lr.Load != nil && len(late) == 0 {
		m.Use = useOf(s0, s1, runtime.NumCPU())
	}
	if n := results.TotalErrors(lr.Errors); n > 0 && lr.Load != nil && n*10 > lr.Load.Requests {
		if asIs {
			// A service's own answers, whatever they are, are what it did
			// under the load: counted apart, shown, never taken as answers.
			m.Notes = append(m.Notes, fmt.Sprintf("loadgen: %s beside %d answered requests: only 2xx and 3xx answers count as answered", results.ErrorsLine(lr.Errors), lr.Load.Requests))
			return nil
		}
		return fmt.Errorf("loadgen: %s (of %d requests)", results.ErrorsLine(lr.Errors), lr.Load.Requests)
	}
	return nil
}

// stall places 3 /async probe connections per loop, then keeps k loops
// blocked with k back-to-back /slow callers: on a loop server, consecutive
// connections land on distinct loops, so the k callers block k loops (where
// they landed is read back from their X-Loop). The probe connections on
// those loops stall.
func (r *runner) stall(ctx context.Context, srv *server, s Step, rel func(string) string, m *results.Measurement) error {
	ready := filepath.Join(r.dir, s.Phase, s.ID+".ready")
	defer os.Remove(ready)
	tap := tapLag(ctx, srv, s.Warmup+s.Duration+time.Minute, r.lagEvent(s.Server.Name))
	defer tap.stop()
	pcArgs, stopConns := r.liveArgs(s, "conns", []string{"--mode", "perconn", "--target", "http://" + srv.addr + asked("/async", r.o.Delay),
		"--conns", strconv.Itoa(stallConnsPerLoop * r.o.loopsOf(s.Server)), "--interval", stallInterval.String(), "--block", s.Block.D().String(),
		"--duration", s.Duration.String(), "--warmup", s.Warmup.String(), "--ready-file", ready,
		"--out", filepath.Join(r.dir, rel("perconn"))})
	defer stopConns()
	// The outside view looks at the server's threads before the blockers
	// come (before the prober starts too: nothing is measured yet).
	ov := r.outsideView(srv, s)
	ov.before(ctx, s.Block.D())
	pr, err := r.procs.start("gen", "prober", nil, pcArgs...)
	if err != nil {
		return err
	}
	if !waitReady(ctx, pr, ready, time.Now().Add(10*time.Second)) {
		pr.stop(os.Interrupt, 3*time.Second)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("the per-connection prober never got ready: %v", pr.exitErr())
	}
	var blockers *child
	began := time.Now()
	// The prober's clock starts as it says it is ready; what the machine
	// and the processes used is read over most of its window.
	from, to := began.Add(s.Warmup+100*time.Millisecond), began.Add(s.Warmup+s.Duration-50*time.Millisecond)
	var blockersEnd time.Time
	if s.K > 0 {
		// The blockers outlast the prober's window by a little, and by the
		// outside view's looks and stacks where it looks.
		hold := s.Warmup + s.Duration + 300*time.Millisecond + ov.tail()
		blockersEnd = time.Now().Add(hold)
		blockers, err = r.procs.start("gen", "loadgen", nil, "--target", "http://"+srv.addr+asked("/slow", s.Block.D()), "--conc", strconv.Itoa(s.K),
			"--duration", hold.String(), "--warmup", "0s", "--quiet", "--timeout", callTimeout(s.Block.D()),
			"--out", filepath.Join(r.dir, rel("load")))
		if err != nil {
			pr.stop(os.Interrupt, 3*time.Second)
			return err
		}
	}
	var s0, s1 sample
	pids := func() (int, int, int, int) {
		b := 0
		if blockers != nil {
			b = blockers.cmd.Process.Pid
		}
		return srv.pid(), b, pr.cmd.Process.Pid, r.o.dbPID
	}
	if sleepUntil(ctx, from) {
		s0 = takeSample(pids())
		if sleepUntil(ctx, to) {
			s1 = takeSample(pids())
			m.Use = useOf(s0, s1, runtime.NumCPU())
		}
	}
	errP := r.tool(ctx, pr, s.Warmup+s.Duration+30*time.Second)
	ended := time.Now()
	if ov != nil && blockers != nil && errP == nil {
		// The measured window is over; the blockers still hold.
		m.ThreadsFile = ov.during(ctx, r.dir, rel("threads"), blockersEnd)
	}
	var errB error
	if blockers != nil {
		errB = r.tool(ctx, blockers, s.Warmup+s.Duration+30*time.Second)
		if _, err := os.Stat(filepath.Join(r.dir, rel("load"))); err == nil {
			m.LoadFile = rel("load")
		}
	}
	if _, err := os.Stat(filepath.Join(r.dir, rel("perconn"))); err == nil {
		m.PerConnFile = rel("perconn")
	}
	if err := errors.Join(errP, errB); err != nil {
		return err
	}
	var err2 error
	m.LagFile, err2 = tap.finish(r.dir, rel("lag"), s.Server.Name, began.Add(s.Warmup), ended)
	return err2
}

// trace takes /async apart while 8 callers block on /slow.
func (r *runner) trace(ctx context.Context, srv *server, s Step, rel func(string) string, m *results.Measurement) error {
	lg, err := r.procs.start("gen", "loadgen", nil, "--target", "http://"+srv.addr+asked("/slow", s.Block.D()), "--conc", strconv.Itoa(s.Conc),
		"--duration", (s.Warmup + s.Duration + 300*time.Millisecond).String(), "--warmup", "0s", "--quiet", "--timeout", callTimeout(s.Block.D()),
		"--out", filepath.Join(r.dir, rel("load")))
	if err != nil {
		return err
	}
	pr, err := r.procs.start("gen", "prober", nil, "--mode", "trace", "--target", "http://"+srv.addr+asked("/async", r.o.Delay),
		"--conns", strconv.Itoa(traceConnsPerLoop*r.o.loopsOf(s.Server)), "--delay", r.o.Delay.String(), "--duration", s.Duration.String(), "--warmup", s.Warmup.String(), "--out", filepath.Join(r.dir, rel("trace")))
	if err != nil {
		lg.stop(os.Interrupt, 3*time.Second)
		return err
	}
	errP := r.tool(ctx, pr, s.Warmup+s.Duration+30*time.Second)
	errL := r.tool(ctx, lg, s.Warmup+s.Duration+30*time.Second)
	for kind, dst := range map[string]*string{"trace": &m.TraceFile, "load": &m.LoadFile} {
		if _, err := os.Stat(filepath.Join(r.dir, rel(kind))); err == nil {
			*dst = rel(kind)
		}
	}
	return errors.Join(errP, errL)
}

// lateNotes says which of a load's tools started their clock late (their
// StartLateNs past MaxWindowOffset): the load, and the bystander probers
// of probeFiles ("" for none).
func lateNotes(lr *results.Result, dir string, probeFiles ...string) []string {
	var out []string
	if lr.StartLateNs > int64(findings.MaxWindowOffset) {
		out = append(out, lr.LateLine()+findings.ProcNotRead)
	}
	for _, f := range probeFiles {
		if f == "" {
			continue
		}
		if pr, err := results.Read(filepath.Join(dir, f)); err == nil && pr.StartLateNs > int64(findings.MaxWindowOffset) {
			out = append(out, pr.LateLine()+findings.ProcNotRead)
		}
	}
	return out
}

// throughput is what the measurement's load result says, 0 without one.
// said is a measurement's figure for its progress line: its throughput,
// or on each side of the slip; "" for none.
func (r *runner) said(m results.Measurement) string {
	if m.LoadFile == "" || m.Phase == "stall" || m.Phase == "trace" {
		return ""
	}
	lr, err := results.Read(filepath.Join(r.dir, m.LoadFile))
	if err != nil || lr.Load == nil {
		return ""
	}
	switch tput := lr.Load.ThroughputPerS; {
	case tput <= 0:
		return ""
	case m.Phase == "slip":
		row := findings.SlipRowOf(&findings.Group{Step: m.Step, Reps: []findings.Rep{{M: m, Load: lr}}}, findings.Params{OffloadWorkers: r.o.Slots})
		if !row.Before.PerS.OK() || !row.After.PerS.OK() {
			return fmt.Sprintf("%.0f req/s", tput)
		}
		return fmt.Sprintf("%.0f req/s, then %.0f from %s on (%s -> %s)", row.Before.PerS.Median(), row.After.PerS.Median(), row.At.Round(10*time.Millisecond), row.Before.Block, row.After.Block)
	default:
		return fmt.Sprintf("%.0f req/s", tput)
	}
}

// toolSpec is a REQUEST flag's value as the tools are given it: a targets
// file by its absolute path, so that it is the file the run read whatever
// directory a tool starts in.
func toolSpec(v string) string {
	v = strings.TrimSpace(v)
	if file, ok := strings.CutPrefix(v, "@"); ok {
		return "@" + abs(strings.TrimSpace(file))
	}
	return v
}

// asked is the request target that asks a server for the step's block
// (/slow, /offload) or delay (/async): every server, the kit's or a
// --target, blocks or waits what the run says, whatever its own default.
func asked(endpoint string, d time.Duration) string {
	switch endpoint {
	case "/slow", "/offload":
		return endpoint + "?block=" + d.String()
	case "/async":
		return endpoint + "?delay=" + d.String()
	}
	return endpoint
}

// waitReady waits until c wrote its ready file, has ended, or until by.
func waitReady(ctx context.Context, c *child, path string, by time.Time) bool {
	_, err := ready.Wait(ctx, path, c.done, time.Until(by))
	return err == nil
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// report runs the report program when it is built.
func (r *runner) report() {
	bin := filepath.Join(r.o.Bin, "report")
	if _, err := os.Stat(bin); err != nil {
		r.run.ReportNote = "the report program is not built yet"
		return
	}
	out := filepath.Join(r.dir, "report.html")
	r.save() // the report reads run.json
	cmd := exec.Command(bin, "--in", r.dir, "--out", out)
	cmd.Stdout, cmd.Stderr = r.out, r.out
	cmd.WaitDelay = toolWaitDelay
	if err := cmd.Run(); err != nil {
		r.run.ReportNote = fmt.Sprintf("the report failed: %v", err)
		return
	}
	r.run.Report = "report.html"
}

func openReport(w io.Writer, path string) {
	for _, opener := range []string{"xdg-open", "open"} {
		if p, err := exec.LookPath(opener); err == nil {
			if err := exec.Command(p, path).Start(); err == nil {
				return
			}
		}
	}
	fmt.Fprintf(w, "--open: no browser opener found (xdg-open); open %s yourself\n", path)
}

func gitCommit() string {
	out, err := toolOutput("git", "rev-parse", "HEAD")
	if err != nil {
		return "unknown (not a git checkout)"
	}
	s := strings.TrimSpace(string(out))
	if st, err := toolOutput("git", "status", "--porcelain", "--untracked-files=no"); err == nil && len(st) > 0 {
		s += " (with uncommitted changes)"
	}
	return s
}

func goVersion() string {
	if out, err := toolOutput("go", "env", "GOVERSION"); err == nil {
		return strings.TrimSpace(string(out))
	}
	return runtime.Version()
}

// toolOutput is what a command the manifest asks (git, go) prints, within
// toolLimit, and waited for toolWaitDelay at most once it has ended: a
// child of its left holding its output does not hold the run.
func toolOutput(name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), toolLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = toolWaitDelay
	out, err := cmd.Output()
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // it answered and ended; what it left behind kept the pipe
	}
	return out, err
}

// The bounds of the run's waits for the commands it runs: toolLimit for
// one the manifest asks, toolWaitDelay for any command's output once the
// command has ended (or was ended).
const (
	toolLimit     = 10 * time.Second
	toolWaitDelay = time.Second
)
