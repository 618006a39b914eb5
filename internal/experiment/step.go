package experiment

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/bystander-kit/bystander/internal/results"
)

// step runs the job's measurement against a fresh server.
func (r *runner) step(ctx context.Context, job Job) results.Measurement {
	s, rep := job.Step, job.Rep
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
		err = r.load(ctx, srv, s, job.SlipWhen, rel, &m)
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
