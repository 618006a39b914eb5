package findings

import (
	"net/url"
	"time"

	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/results"
)

// A server measured as it is, given its process (pid=) or a Go service's
// profiler (pprof=), has its sweep's top step measured twice: unwatched
// (its figures, as every step's) and then watched (internal/watch: Flight
// Recorder for a JVM, the Go execution trace, /proc for any other
// process). The watched step says what held the service's threads in its
// own traffic, and, against the step unwatched, what watching cost it.

// AsIsWatch is what watching a server measured as it is found at its
// sweep's top step, and what watching cost it.
type AsIsWatch struct {
	// Step is the watched step (its figures and stall verdict): nil when
	// none was measured.
	Step *AsIsStep
	// Service is what the watch found, the first repetition's that has a
	// watch (nil: not watched, Why says why).
	Service *culprit.Service
	Why     WatchWhy
	// Forgiven: a pool whose holds were forgiven, none of its connections
	// stalled meanwhile (the watched step's verdict).
	Forgiven bool
	// Throughput and Bystander are what watching cost: the watched step's
	// throughput and its bystander's median from due over the unwatched
	// top step's, medians (0: not known).
	Throughput, Bystander float64
	// Unwatched is the top step measured unwatched.
	Unwatched *AsIsStep
	// Short: the watch covered this much of the step's measured window
	// only (0: all of it), its source's start taking the rest.
	Short time.Duration
}

// WatchWhy is why a server measured as it is was not watched at its top
// step (0: it was, or it is not measured as it is).
type WatchWhy int

const (
	WatchRemote     WatchWhy = iota + 1 // the service is on another machine
	WatchNoPID                          // no pid= (nor pprof= for a Go service)
	WatchNoStep                         // the run has no watched step
	WatchIncomplete                     // the watched step did not complete (its Step's Why)
	WatchNoFile                         // the watched step left no watch's file
)

// WatchWhyOf is why a server measured as it is cannot be watched at its
// top step, 0 when it can (or is not measured as it is).
func WatchWhyOf(s results.Server) WatchWhy {
	if !s.AsIs() || s.Watchable() {
		return 0
	}
	if u, err := url.Parse(s.URL); err == nil && u.Hostname() != "" && !client.IsLoopback(u.Hostname()) {
		return WatchRemote
	}
	return WatchNoPID
}

// watchOf computes the watch from the watched step's group (nil when the
// run has none), the top step unwatched taken from a's sweep.
func (a *AsIs) watchOf(g *Group, server results.Server, p Params, call, unloaded time.Duration) {
	w := &a.Watch
	if why := WatchWhyOf(server); why != 0 {
		w.Why = why
		return
	}
	if g == nil {
		w.Why = WatchNoStep
		return
	}
	st := asIsStep(g, p)
	st.unloadedOf()
	st.judge(call, unloaded)
	w.Step = &st
	w.Unwatched = a.step(g.Step.Conc)
	if !st.OK() {
		w.Why = WatchIncomplete
		return
	}
	for _, rep := range g.Reps {
		if rep.Watch == nil {
			continue
		}
		s := rep.Watch.Service
		w.Service = &s
		if s.WindowNs > 0 && time.Duration(s.WindowNs) < 9*rep.M.Duration/10 {
			w.Short = time.Duration(s.WindowNs)
		}
		break
	}
	if w.Service == nil {
		w.Why = WatchNoFile
		return
	}
	if u := w.Unwatched; u != nil && u.OK() {
		if st.Throughput.OK() && u.Throughput.OK() && u.Throughput.Median() > 0 {
			w.Throughput = st.Throughput.Median() / u.Throughput.Median()
		}
		if st.Fast.P50.OK() && u.Fast.P50.OK() && u.Fast.P50.Median() > 0 {
			w.Bystander = st.Fast.P50.Median() / u.Fast.P50.Median()
		}
	}
	w.Forgiven = w.Service.Pool && st.Stalled.OK() && st.Stalled.Median() == 0
}

// Watched says whether the watch found anything to say (a source that
// watched a window).
func (w AsIsWatch) Watched() bool { return w.Service != nil && w.Service.WindowNs > 0 }
