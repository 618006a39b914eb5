// Package watch finds what holds a service's serving threads in the
// service's own traffic, watching it as it runs for a window: Flight
// Recorder for a JVM (every socket read, sleep, monitor and park past a
// threshold, with its thread, stack and peer), the execution trace a Go
// service's net/http/pprof serves (every goroutine's system calls and
// blocks, with durations and stacks), and /proc for any other process
// (its threads, their calls and peers, on a CPU or not). Each fills one
// culprit.Service, said in one sentence.
//
// What a service gives (a recording, a trace) is a stranger's input: every
// read is capped and every wait bounded.
package watch

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/outside"
)

// Target is the service to watch: its process, and for a Go service the
// listener that serves /debug/pprof/ ("http://127.0.0.1:6060").
type Target struct {
	PID   int
	Pprof string
}

// Options say how long to watch and what counts as held.
type Options struct {
	Window    time.Duration // default DefaultWindow
	Threshold time.Duration // default DefaultThreshold
	// From and Until, when set, place the window against the clock
	// instead: it begins at From at the earliest (a source started ahead,
	// as Flight Recorder is, since its first start in a JVM takes seconds
	// on a busy machine, counts nothing before) and ends at Until, however
	// long the source took to start: a window that should be a measured
	// one. Window is then not used.
	From, Until time.Time
}

// The defaults: a window long enough for a few hundred 5 ms calls, and a
// threshold below the calls people ask about.
const (
	DefaultWindow    = 3 * time.Second
	DefaultThreshold = time.Millisecond
)

func (o Options) withDefaults() Options {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Threshold <= 0 {
		o.Threshold = DefaultThreshold
	}
	return o
}

// left is how long the window lasts from now: Window, or until Until
// (at least minWindow: a source that started late still watches a little).
func (o Options) left() time.Duration {
	if o.Until.IsZero() {
		return o.Window
	}
	return max(time.Until(o.Until), minWindow)
}

// begin is when the window begins for a source ready now: now, or From
// when that is later.
func (o Options) begin(now time.Time) time.Time {
	if o.From.After(now) {
		return o.From
	}
	return now
}

// minWindow is the least a window lasts once its source has started.
const minWindow = 100 * time.Millisecond

// Watch watches the service for o.Window and says what held its serving
// threads: a Go service with Pprof through its execution trace, a JVM
// through Flight Recorder, any other process through /proc. A source that
// cannot be used is said in one line and the next one watches (a JVM that
// refuses attach is still seen through /proc).
func Watch(ctx context.Context, t Target, o Options) culprit.Service {
	o = o.withDefaults()
	var limits []string
	if t.Pprof != "" {
		s := GoTrace(ctx, t.Pprof, o)
		if len(s.Holds) > 0 || t.PID <= 0 || !failed(s) {
			return s.Clean()
		}
		limits = s.Limits
	}
	if t.PID <= 0 {
		return culprit.Service{Limits: append(limits, "watch: nothing to watch: give the service's pid=N (or pprof=URL for a Go service with net/http/pprof)")}
	}
	if outside.IsJVM(t.PID) {
		s := JFR(ctx, t.PID, o)
		if !failed(s) {
			s.Limits = append(limits, s.Limits...)
			return s.Clean()
		}
		limits = append(limits, s.Limits...)
	}
	s := Proc(ctx, t.PID, o)
	s.Limits = append(limits, s.Limits...)
	return s.Clean()
}

// failed says the source could not watch at all (its window is 0).
func failed(s culprit.Service) bool { return s.WindowNs == 0 }

// holdKey is one place a thread was held: what held it, and the culprit
// frame. A place's peers are counted apart: the same frame writing to
// each of the service's clients is one place, "to 12 peers".
type holdKey struct {
	state, fn string
	line      int
}

// tally adds up holds by place and by thread.
type tally struct {
	places map[holdKey]*place
}

type place struct {
	culprit.Hold
	byThread map[string]int64
	peers    map[string]bool // at most maxPeers
}

// maxPeers caps the peers a place keeps apart.
const maxPeers = 1024

func newTally() *tally { return &tally{places: map[holdKey]*place{}} }

// add counts calls holds of heldNs in all (within the window), the
// longest longestNs, by thread at the place; false when the place is new
// and MaxPlaces are counted already.
func (t *tally) add(thread, state, peer string, frames []culprit.Frame, inferred bool, heldNs int64, calls int, longestNs int64) bool {
	k := holdKey{state: state}
	if len(frames) > 0 {
		k.fn, k.line = frames[0].Function, frames[0].Line
	}
	p := t.places[k]
	if p == nil {
		if len(t.places) >= MaxPlaces {
			return false
		}
		if len(frames) > culprit.MaxFrames {
			frames = frames[:culprit.MaxFrames]
		}
		p = &place{Hold: culprit.Hold{State: state, Frames: frames, FileInferred: inferred}, byThread: map[string]int64{}, peers: map[string]bool{}}
		t.places[k] = p
	}
	if peer != "" && len(p.peers) < maxPeers {
		p.peers[peer] = true
	}
	p.byThread[thread] += heldNs
	p.HeldNs += heldNs
	p.Calls += calls
	p.LongestNs = max(p.LongestNs, longestNs)
	return true
}

// holds are the places, the longest held first (at most
// culprit.MaxHolds), each with its threads in natural order.
func (t *tally) holds() []culprit.Hold {
	var out []culprit.Hold
	for _, p := range t.places {
		h := p.Hold
		switch len(p.peers) {
		case 0:
		case 1:
			for peer := range p.peers {
				h.Peer = peer
			}
		case maxPeers:
			h.Peer = fmt.Sprintf("%d peers or more", maxPeers)
		default:
			h.Peer = fmt.Sprintf("%d peers", len(p.peers))
		}
		for n := range p.byThread {
			h.Threads = append(h.Threads, n)
		}
		slices.SortFunc(h.Threads, outside.Natural)
		h.Held = len(h.Threads)
		if len(h.Threads) > culprit.MaxNames {
			h.Threads = h.Threads[:culprit.MaxNames]
		}
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b culprit.Hold) int {
		return cmp.Or(cmp.Compare(b.HeldNs, a.HeldNs), strings.Compare(a.Where(), b.Where()))
	})
	if len(out) > culprit.MaxHolds {
		out = out[:culprit.MaxHolds]
	}
	return out
}

// total is how long the tally's holds held, in all places.
func (t *tally) total() int64 {
	var n int64
	for _, p := range t.places {
		n += p.HeldNs
	}
	return n
}

// culpritAt is the index of the first frame (innermost first) that is
// not the runtime's or the server library's (skip says which are), or
// the first that is not the runtime's when all are, or 0.
func culpritAt(frames []culprit.Frame, runtime, library func(fn string) bool) int {
	for i, f := range frames {
		if !runtime(f.Function) && !library(f.Function) {
			return i
		}
	}
	for i, f := range frames {
		if !runtime(f.Function) {
			return i
		}
	}
	return 0
}

// hasPrefix says whether s starts with one of the prefixes.
func hasPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// servingRole is which of the serving roles (in order) a server serves
// by: the one its threads were held in longest, else the first of them
// any of its threads has (seen), else "" (none recognised).
func servingRole(tallies map[string]*tally, serving []string, seen func(role string) bool) string {
	role, most := "", int64(-1)
	for _, c := range serving {
		if t := tallies[c]; t != nil {
			if held := t.total(); held > most {
				role, most = c, held
			}
		}
	}
	if role != "" {
		return role
	}
	for _, c := range serving {
		if seen(c) {
			return c
		}
	}
	return ""
}
