package prose

import (
	"fmt"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/words"
)

// The words of a server measured as it is watched at its top step, said
// from what findings' asiswatch.go found.

// NotWatched says in one line why a server measured as it is is not
// watched at its top step, "" when it is watched (or not measured as it
// is).
func NotWatched(s results.Server) string { return watchWhy(findings.WatchWhyOf(s), nil) }

// AsIsWatchWhy says why its top step was not watched ("" when it was).
func AsIsWatchWhy(w findings.AsIsWatch) string { return watchWhy(w.Why, w.Step) }

func watchWhy(why findings.WatchWhy, st *findings.AsIsStep) string {
	switch why {
	case findings.WatchRemote:
		return "not watched: the service is on another machine: Flight Recorder and /proc read a process on this one (a Go service's pprof=URL is watched from afar)"
	case findings.WatchNoPID:
		return "not watched: no pid= (nor pprof= for a Go service with net/http/pprof): give --target NAME=URL,pid=N to have its top step watched (Flight Recorder for a JVM, /proc for any other process)"
	case findings.WatchNoStep:
		return "not watched: this run has no watched step (its kit did not watch yet)"
	case findings.WatchIncomplete:
		return "not watched: the watched step did not complete: " + GroupWhy(st.Group)
	case findings.WatchNoFile:
		return "not watched: the watched step left no watch's file"
	}
	return ""
}

// AsIsWatchHeading says where and how it was watched: "watched at 16
// callers through Flight Recorder for 1.8 s".
func AsIsWatchHeading(w findings.AsIsWatch) string {
	if w.Step == nil {
		return "watched"
	}
	h := "watched at " + words.Plural(w.Step.Step.Conc, "caller")
	if w.Watched() {
		h += fmt.Sprintf(" through %s for %s", w.Service.Source, culprit.FormatHeld(time.Duration(w.Service.WindowNs)))
	}
	return h
}

// AsIsWatchService is what the watch found, its Forgiven said for a pool
// whose bystanders were unharmed meanwhile (nil: not watched).
func AsIsWatchService(a findings.AsIs) *culprit.Service {
	w := a.Watch
	if w.Service == nil {
		return nil
	}
	s := *w.Service
	if w.Forgiven {
		st := w.Step
		s.Forgiven = fmt.Sprintf("none of its %.0f connections stalled meanwhile", st.Probed.Median())
		if r, ok := a.WaitOverUnloaded(*st); ok {
			s.Forgiven += fmt.Sprintf(", their median wait %.1fx their wait unloaded", r)
		}
	} else {
		s.Forgiven = "" // findings' judgment, not what a file says of itself
	}
	return &s
}

// AsIsWatchLines say the watch: each hold's sentence (the culprit first),
// the limits met, the hint, what watching cost; or why it was not
// watched.
func AsIsWatchLines(a findings.AsIs) []string {
	w := a.Watch
	switch {
	case w.Service == nil:
		return []string{AsIsWatchWhy(w)}
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
	out := AsIsWatchService(a).LinesOver(measured)
	if f := notForgiven(w); f != "" {
		out = append(out, f)
	}
	if w.Short > 0 && w.Step != nil {
		out = append(out, fmt.Sprintf("the watch covered %s of the %s measured: its start took the rest", culprit.FormatHeld(w.Short), culprit.FormatHeld(w.Step.Step.Duration)))
	}
	if c := AsIsWatchCost(w); c != "" {
		out = append(out, c)
	}
	return out
}

// notForgiven says, for a pool whose holds were not said forgiven, why
// not: its connections stalled meanwhile, or were not judged ("" else).
func notForgiven(w findings.AsIsWatch) string {
	if !w.Service.Pool || w.Forgiven || len(w.Service.Holds) == 0 || w.Step == nil {
		return ""
	}
	st := w.Step
	if st.Stalled.OK() {
		return fmt.Sprintf("held, and not forgiven: %s of its connections stalled meanwhile", AsIsStalled(*st))
	}
	why := AsIsStalled(*st)
	if len(st.Unjudged) > 0 {
		why = AsIsUnjudged(*st, st.Unjudged[0])
	}
	return "whether the pool forgave them meanwhile is not told: " + why
}

// AsIsWatchCost is what watching cost the service, watched against
// unwatched at the same callers: "what watching cost: throughput 0.97x,
// its bystander's median 1.10x (1,812 against 1,868 req/s; 0.41ms against
// 0.37ms)"; "" when not known.
func AsIsWatchCost(w findings.AsIsWatch) string {
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
