package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/bystander-kit/bystander/internal/results"
)

// load runs loadgen on the step's endpoint with the /fast prober probing
// over the same measured window, and samples the server's cost over it;
// a slip's call slowed when slipWhen is made ("": at the plan's moment).
func (r *runner) load(ctx context.Context, srv *server, s Step, slipWhen string, rel func(string) string, m *results.Measurement) error {
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
		if conns, err = r.startConns(ctx, s, at, cready, rel("perconn"), bystander); err != nil {
			return err
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
	args = append(args, slipArgs(srv, s, slipWhen)...)
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
	pids := func() (int, int, int, int) { return srv.pid(), lg.cmd.Process.Pid, pr.cmd.Process.Pid, r.o.dbPID }
	s0, s1, sampled := sampleWindow(ctx, from, to, pids, conns)
	pinErr := r.genPinned(lg, pr, conns)
	errL := r.tool(ctx, lg, lead+total+30*time.Second)
	errP := r.tool(ctx, pr, lead+total+30*time.Second)
	var errC error
	written := map[string]*string{"load": &m.LoadFile, "fast": &m.ProbeFile}
	if conns != nil {
		errC = r.tool(ctx, conns, lead+total+30*time.Second)
		written["perconn"] = &m.PerConnFile
	}
	r.written(rel, written)
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
	return r.loadFigures(m, asIs, sampled, s0, s1)
}

// startConns starts a server measured as it is its 12-connection prober,
// asking bystander, and waits until it placed its connections (cready),
// by at's half lead.
func (r *runner) startConns(ctx context.Context, s Step, at time.Time, cready, out string, bystander []string) (*child, error) {
	startAt := at.UTC().Format(time.RFC3339Nano)
	conns, err := r.procs.start("gen", "prober", nil, append([]string{"--mode", "perconn", "--conns", strconv.Itoa(asIsConns),
		"--interval", stallInterval.String(), "--warmup", s.Warmup.String(), "--duration", s.Duration.String(), "--start-at", startAt,
		"--ready-file", cready, "--out", filepath.Join(r.dir, out)}, bystander...)...)
	if err != nil {
		return nil, err
	}
	if !waitReady(ctx, conns, cready, at.Add(-startDelay/2)) && !conns.alive() {
		if ctx.Err() != nil {
			return conns, ctx.Err()
		}
		return conns, fmt.Errorf("the 12-connection prober never got ready: %v", conns.exitErr())
	}
	return conns, nil
}

// slipArgs are loadgen's flags for the slip: the same endpoint, a slower
// call from halfway on, counted in 100 ms steps, or from when the file
// when is made; none for another step.
func slipArgs(srv *server, s Step, when string) []string {
	if s.SlipBlock <= 0 {
		return nil
	}
	args := []string{"--switch-to", "http://" + srv.addr + asked(s.Endpoint, s.SlipBlock.D()),
		"--switch-at", time.Duration(s.SlipAtNs).String(), "--tick", slipTick.String()}
	if when != "" {
		// On stage the presenter's key slows the call (tellSlip makes
		// the file); the plan's moment is the latest.
		args = append(args, "--switch-when", when)
	}
	return args
}

// sampleWindow reads what the processes (pids) and the machine used
// from from to to, and the 12-connection prober's (nil: none); false
// when ctx ended first.
func sampleWindow(ctx context.Context, from, to time.Time, pids func() (int, int, int, int), conns *child) (s0, s1 sample, sampled bool) {
	connsPID := 0
	if conns != nil {
		connsPID = conns.cmd.Process.Pid
	}
	sampled = sleepUntil(ctx, from)
	if sampled {
		s0 = takeSample(pids())
		s0.conns = readProc(connsPID)
		sampled = sleepUntil(ctx, to)
		if sampled {
			s1 = takeSample(pids())
			s1.conns = readProc(connsPID)
		}
	}
	return s0, s1, sampled
}

// genPinned: with --pin, every thread the generators started by now runs
// on their CPU set.
func (r *runner) genPinned(gens ...*child) error {
	var pinErr error
	if r.o.Pin {
		for _, c := range gens {
			if c != nil && c.alive() {
				if err := checkPinned(c.cmd.Process.Pid, r.procs.genCPUs); err != nil {
					pinErr = fmt.Errorf("--pin: %s: %w", c.name, err)
				}
			}
		}
	}
	return pinErr
}

// loadFigures reads the load's result into m: the notes of a tool that
// started late, the cost sampled (s0 to s1) unless one did, and whether
// the load's errors fail the step (a server measured as it is: noted).
func (r *runner) loadFigures(m *results.Measurement, asIs, sampled bool, s0, s1 sample) error {
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
