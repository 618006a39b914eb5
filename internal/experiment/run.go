package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/files"
	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/pgrun"
	"github.com/bystander-kit/bystander/internal/prose"
	"github.com/bystander-kit/bystander/internal/results"
)

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
		r.measure(ctx, newPlanSteps(r.plan))
	}
	return r.finish(ctx)
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
	r.observers = []Observer{newProgress(stdout, plan)}
	return r
}

// finish ends the run: the servers stopped, run.json closed, the report,
// the tables and findings written, and where they are said.
func (r *runner) finish(ctx context.Context) error {
	r.emit(Finished{})
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
	prose.WriteTables(&sb, fd)
	fmt.Fprint(r.out, sb.String())
	_ = files.WriteAtomic(filepath.Join(r.dir, "summary.txt"), []byte(sb.String()), 0o644)
	_ = files.WriteAtomic(filepath.Join(r.dir, "findings.json"), prose.FaceJSON(fd), 0o644)
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
