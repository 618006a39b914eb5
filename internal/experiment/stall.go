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
	ov := newOutsideView(srv, s, &r.noJcmd)
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
	r.written(rel, map[string]*string{"trace": &m.TraceFile, "load": &m.LoadFile})
	return errors.Join(errP, errL)
}
