package experiment

import (
	"context"
	"fmt"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/prose"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/watch"
	"github.com/bystander-kit/bystander/internal/words"
)

// watchPlan says what the plan does to watch a target measured as it is,
// or why it does not.
func watchPlan(t Target, top int) string {
	if why := prose.NotWatched(t.Server); why != "" {
		return why
	}
	how := fmt.Sprintf("Flight Recorder if pid %d is a JVM, else /proc", t.PID)
	switch {
	case t.Pprof != "" && t.PID > 0:
		how = fmt.Sprintf("its execution trace from %s (else Flight Recorder or /proc on pid %d)", t.Pprof, t.PID)
	case t.Pprof != "":
		how = "its execution trace from " + t.Pprof
	}
	return fmt.Sprintf("its top step (%s) is measured again, watched through %s: what held its threads, and what watching cost it",
		words.Plural(top, "caller"), how)
}

// watchStart is the least warm-up of a JVM's watched step: its watch
// begins as the step does, and Flight Recorder's start (jcmd attaching,
// the recorder starting in the JVM: 3 s on a busy 2-core machine) falls
// in the connections' placing and the warm-up, not in the measured
// window. A trace and /proc start at once: their step keeps the run's.
const watchStart = 3 * time.Second

// watchWarmup is the warm-up of s's watched step.
func (o Options) watchWarmup(s Server) time.Duration {
	for _, t := range o.Targets {
		if t.Name == s.Name && t.jvm && s.Pprof == "" {
			return max(o.Warmup, watchStart)
		}
	}
	return o.Warmup
}

// watching is a watch of a target over a watched step's loaded window,
// begun with the step.
type watching struct {
	done   chan struct{}
	found  culprit.Service
	window time.Duration
}

// startWatch watches the step's server over its load, from at (the
// load's start, its warm-up loaded too) to end (its measured window's
// end), its source started at once: a source slow to start (a JVM's first
// JFR.start) takes from the lead and the warm-up, not the window; nil for
// a step that is not the watched one.
func startWatch(ctx context.Context, s Step, at, end time.Time) *watching {
	if s.Variant != results.Watched {
		return nil
	}
	w := &watching{done: make(chan struct{}), window: time.Until(end)}
	go func() {
		defer close(w.done)
		w.found = watch.Watch(ctx, watch.Target{PID: s.Server.PID, Pprof: s.Server.Pprof}, watch.Options{From: at, Until: end})
	}()
	return w
}

// watchWait bounds the wait for a watch past its window: Flight
// Recorder's stop and its recording's digest, the trace's reading (each
// bounded on its own, within this).
const watchWait = 2 * time.Minute

// finish waits for the watch (bounded) and writes what it found to rel
// in the run directory: the file's path, relative ("" when not written).
// An interrupted run waits too: the watch ends its window at once, and
// stops its recording and removes its files before it returns (nothing
// left in the JVM, nor a digest's process behind the run).
func (w *watching) finish(dir, rel, server string) (string, error) {
	found := culprit.Service{Limits: []string{fmt.Sprintf("watch: no answer within %s of the window's end: nothing watched is said", watchWait)}}
	if w.wait() {
		found = w.found
	}
	if err := watch.Write(dir, rel, server, found); err != nil {
		return "", err
	}
	return rel, nil
}

// sayWatch says at once, a line each, what the watched step's watch found
// and the limits it met; the run goes on.
func (r *runner) sayWatch(m results.Measurement) {
	if m.WatchFile == "" {
		return
	}
	f, err := watch.ReadIn(r.dir, m.WatchFile)
	if err != nil {
		r.emit(Said{"  watched: " + err.Error()})
		return
	}
	lines := f.Service.LinesOver(m.Duration)
	if f.Service.WindowNs == 0 { // nothing watched: why
		lines = f.Service.Limits
	}
	for _, l := range lines {
		r.emit(Said{"  watched: " + l})
	}
}

// wait waits for the watch to end, its recording stopped and its files
// removed, at most its window and watchWait; false when it did not end.
// A step that failed before it finished the watch waits for it too (nil:
// no watch).
func (w *watching) wait() bool {
	if w == nil {
		return true
	}
	t := time.NewTimer(w.window + watchWait)
	defer t.Stop()
	select {
	case <-w.done:
		return true
	case <-t.C:
		return false
	}
}
