package experiment

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/bystander-kit/bystander/internal/results"
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
	// observers are told the run's events (events.go): the progress
	// lines, and the stage's page on stage (a LiveObserver: it is told
	// the live samples too). They are all added before the first step.
	observers []Observer
	start     time.Time
	// warmed are the servers measured as they are that were warmed up.
	warmed map[string]bool
	// noJcmd are the servers whose stacks jcmd refused in this run: not
	// asked again.
	noJcmd noJcmd
	// dbSaid: the private database's death was said.
	dbSaid sync.Once
}

func (r *runner) set(i int, f func(*results.Measurement)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.run.Measurements[i])
}

// record puts a measurement in its slot of run.json (-1: after the
// others, a step measured again on stage).
func (r *runner) record(slot int, m results.Measurement) {
	if slot >= 0 {
		r.set(slot, func(mm *results.Measurement) { *mm = m })
		return
	}
	r.mu.Lock()
	r.run.Measurements = append(r.run.Measurements, m)
	r.mu.Unlock()
}

// emit tells every observer ev.
func (r *runner) emit(ev Event) {
	for _, o := range r.observers {
		o.Observe(ev)
	}
}

// wantsLive: an observer takes the live samples (the tools are asked
// for them, and read, only then).
func (r *runner) wantsLive() bool {
	for _, o := range r.observers {
		if _, ok := o.(LiveObserver); ok {
			return true
		}
	}
	return false
}

// emitLive tells every observer that takes the live samples ev; safe
// from any goroutine (the observers are all added before the first
// step).
func (r *runner) emitLive(ev Live) {
	for _, o := range r.observers {
		if lo, ok := o.(LiveObserver); ok {
			lo.ObserveLive(ev)
		}
	}
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

// skipPending records the measurements never reached as skipped, and why.
func (r *runner) skipPending(ctx context.Context, why string) {
	for i, m := range r.run.Measurements {
		if m.Status == "pending" {
			r.set(i, func(mm *results.Measurement) {
				mm.Status, mm.Reason = "skipped", why
				if ctx.Err() != nil {
					mm.Reason = "the run was interrupted before it"
				}
			})
		}
	}
}
