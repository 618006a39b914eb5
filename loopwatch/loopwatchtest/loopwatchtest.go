// Package loopwatchtest fails a test whose event loops were held by a
// callback: BlockHound's idea for Go's event loops. A blocking call left in
// a handler then fails in the test suite, with where it blocked, instead of
// capping the server in production.
//
//	func TestHandlers(t *testing.T) {
//		w := loopwatchtest.New(t, 5*time.Millisecond)
//		srv := startServer(w) // a server whose callbacks Enter and Exit w's loops
//		... // drive it
//	} // fails here if a callback held its loop for 5 ms or more
package loopwatchtest

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/loopwatch"
)

// New returns a watcher for t's loops (threshold 0: loopwatch's default),
// which takes a stack for every episode. When t ends, t fails once per
// episode: the loop, how long it was held and where, with the holding
// goroutine's stack. An episode whose loop's thread did not get a CPU
// (loopwatch.Starved: a busy machine, not the callback; known only for a
// loop on a locked thread, see Loop.LockThread), or whose goroutine was
// back from a system call and waiting for a Go P (loopwatch.WaitingForP:
// the scheduler, not the call), is logged, not failed.
func New(t testing.TB, threshold time.Duration) *loopwatch.Watcher {
	t.Helper()
	var mu sync.Mutex
	var held []loopwatch.Episode
	w := loopwatch.New(loopwatch.Options{
		Threshold:  threshold,
		StackEvery: time.Nanosecond,                                // a stack for every episode: a test can pay for it
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)), // the test says it
		OnEpisode: func(e loopwatch.Episode) {
			mu.Lock()
			defer mu.Unlock()
			if reported != nil {
				reported(e)
			}
			if !e.Ended {
				held = append(held, e)
				return
			}
			for i := range held { // the same episode, now with its whole length
				if held[i].Loop == e.Loop && held[i].Start.Equal(e.Start) {
					held[i].Held, held[i].Ended = e.Held, true
				}
			}
		},
	})
	t.Cleanup(func() {
		w.Stop()
		mu.Lock()
		defer mu.Unlock()
		for _, e := range held {
			if e.Cause == loopwatch.Starved || e.Cause == loopwatch.WaitingForP {
				t.Logf("%s", Describe(e))
				continue
			}
			t.Errorf("%s", Describe(e))
		}
	})
	return w
}

// reported, set by this package's tests before New, sees each episode as
// the watcher reports it.
var reported func(loopwatch.Episode)

// Describe is an episode in words: "loop-0 was held 52ms (at least: still
// held) in chan receive at main.query (app.go:12)", and its stack.
func Describe(e loopwatch.Episode) string {
	s := e.Loop + " was held " + e.Held.Round(time.Microsecond).String()
	if !e.Ended {
		s += " (at least: still held when the test ended)"
	}
	switch e.Cause {
	case loopwatch.Starved:
		return s + fmt.Sprintf(": its thread did not get a CPU (waited %s of the %s watched), not a blocking call",
			e.Thread.Waited.Round(time.Microsecond), e.Thread.Watched.Round(time.Microsecond))
	case loopwatch.WaitingForP:
		return s + ": its goroutine, back from a system call, waited for a Go P (all busy), not a blocking call"
	}
	if len(e.Frames) == 0 {
		return s + " (no stack: the loop was released before one could be taken, or one had just been)"
	}
	s += " in " + e.State + " at " + e.Culprit().String() + "\n"
	for _, f := range e.Frames {
		s += "\t" + f.String() + "\n"
	}
	return s
}
