package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/ready"
	"github.com/bystander-kit/bystander/internal/results"
)

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

// waitReady waits until c wrote its ready file, has ended, or until by.
func waitReady(ctx context.Context, c *child, path string, by time.Time) bool {
	_, err := ready.Wait(ctx, path, c.done, time.Until(by))
	return err == nil
}

// written names in m's fields (dst, by kind) the result files the tools
// wrote (rel: a kind's file in the run directory).
func (r *runner) written(rel func(string) string, dst map[string]*string) {
	for kind, f := range dst {
		if _, err := os.Stat(filepath.Join(r.dir, rel(kind))); err == nil {
			*f = rel(kind)
		}
	}
}
