package findings

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/words"
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
	// watch (nil: not watched, Why says why). For a pool whose bystanders
	// were unharmed meanwhile, its Forgiven says how.
	Service *culprit.Service
	Why     string
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

// NotWatched says in one line why a server measured as it is is not
// watched at its top step, "" when it is watched (or not measured as it
// is).
func NotWatched(s results.Server) string {
	if !s.AsIs() || s.Watchable() {
		return ""
	}
	if u, err := url.Parse(s.URL); err == nil && u.Hostname() != "" && !client.IsLoopback(u.Hostname()) {
		return "not watched: the service is on another machine: Flight Recorder and /proc read a process on this one (a Go service's pprof=URL is watched from afar)"
	}
	return "not watched: no pid= (nor pprof= for a Go service with net/http/pprof): give --target NAME=URL,pid=N to have its top step watched (Flight Recorder for a JVM, /proc for any other process)"
}

// watchOf computes the watch from the watched step's group (nil when the
// run has none), the top step unwatched taken from a's sweep.
func (a *AsIs) watchOf(g *Group, server results.Server, p Params, call, unloaded time.Duration) {
	w := &a.Watch
	if why := NotWatched(server); why != "" {
		w.Why = why
		return
	}
	if g == nil {
		w.Why = "not watched: this run has no watched step (its kit did not watch yet)"
		return
	}
	st := asIsStep(g, p)
	st.unloadedOf()
	st.judge(call, unloaded)
	w.Step = &st
	w.Unwatched = a.step(g.Step.Conc)
	if !st.OK() {
		w.Why = "not watched: the watched step did not complete: " + st.Why
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
		w.Why = "not watched: the watched step left no watch's file"
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
	if w.Service.Pool && st.Stalled.OK() && st.Stalled.Median() == 0 {
		f := fmt.Sprintf("none of its %.0f connections stalled meanwhile", st.Probed.Median())
		if p, ok := bystanderP50(&st); ok && unloaded > 0 {
			f += fmt.Sprintf(", its bystander's median %.1fx its wait unloaded", p*1e3/float64(unloaded))
		}
		w.Service.Forgiven = f
	}
}

// Watched says whether the watch found anything to say (a source that
// watched a window).
func (w AsIsWatch) Watched() bool { return w.Service != nil && w.Service.WindowNs > 0 }

// Heading says where and how it was watched: "watched at 16 callers
// through Flight Recorder for 1.8 s".
func (w AsIsWatch) Heading() string {
	if w.Step == nil {
		return "watched"
	}
	h := "watched at " + words.Plural(w.Step.Step.Conc, "caller")
	if w.Watched() {
		h += fmt.Sprintf(" through %s for %s", w.Service.Source, culprit.FormatHeld(time.Duration(w.Service.WindowNs)))
	}
	return h
}

// Lines say the watch: each hold's sentence (the culprit first), the
// limits met, the hint, what watching cost; or why it was not watched.
func (w AsIsWatch) Lines() []string {
	switch {
	case w.Service == nil:
		return []string{w.Why}
	case !w.Watched():
		if len(w.Service.Limits) == 0 {
			return []string{"not watched: no source could watch it"}
		}
		return w.Service.Limits
	}
	var measured time.Duration
	if w.Step != nil {
		measured = w.Step.Step.Duration
	}
	out := w.Service.LinesOver(measured)
	if f := w.forgivenText(); f != "" {
		out = append(out, f)
	}
	if w.Short > 0 && w.Step != nil {
		out = append(out, fmt.Sprintf("the watch covered %s of the %s measured: its start took the rest", culprit.FormatHeld(w.Short), culprit.FormatHeld(w.Step.Step.Duration)))
	}
	if c := w.CostText(); c != "" {
		out = append(out, c)
	}
	return out
}

// forgivenText says, for a pool whose holds were not said forgiven, why
// not: its connections stalled meanwhile, or were not judged ("" else).
func (w AsIsWatch) forgivenText() string {
	if !w.Service.Pool || w.Service.Forgiven != "" || len(w.Service.Holds) == 0 || w.Step == nil {
		return ""
	}
	st := w.Step
	if st.Stalled.OK() {
		return fmt.Sprintf("held, and not forgiven: %s of its connections stalled meanwhile", st.StalledText())
	}
	why := st.StalledText()
	if len(st.Unjudged) > 0 {
		why = st.Unjudged[0]
	}
	return "whether the pool forgave them meanwhile is not told: " + why
}

// CostText is what watching cost the service, watched against unwatched
// at the same callers: "what watching cost: throughput 0.97x, its
// bystander's median 1.10x (1,812 against 1,868 req/s; 0.41ms against
// 0.37ms)"; "" when not known.
func (w AsIsWatch) CostText() string {
	if w.Step == nil || w.Unwatched == nil || (w.Throughput == 0 && w.Bystander == 0) {
		return ""
	}
	var parts, figs []string
	if w.Throughput > 0 {
		parts = append(parts, fmt.Sprintf("throughput %.2fx", w.Throughput))
		figs = append(figs, fmt.Sprintf("%s against %s", words.PerS(w.Step.Throughput.Median()), words.PerS(w.Unwatched.Throughput.Median())))
	}
	if w.Bystander > 0 {
		parts = append(parts, fmt.Sprintf("its bystander's median %.2fx", w.Bystander))
		figs = append(figs, fmt.Sprintf("%s against %s", words.Round(time.Duration(w.Step.Fast.P50.Median()*1e3)), words.Round(time.Duration(w.Unwatched.Fast.P50.Median()*1e3))))
	}
	s := fmt.Sprintf("what watching cost: %s (watched against unwatched at %s: %s)", strings.Join(parts, ", "), words.Plural(w.Step.Step.Conc, "caller"), strings.Join(figs, "; "))
	if w.Service != nil && w.Service.CostNs > 0 {
		s += fmt.Sprintf("; on the kit's side %s of CPU", culprit.FormatHeld(time.Duration(w.Service.CostNs)))
	}
	return s
}
