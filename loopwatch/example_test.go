package loopwatch_test

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/loopwatch"
)

// queryDatabase stands for a blocking call left in a callback: it waits for
// a reply that, so that each run prints the same, comes once loopwatch has
// reported it.
func queryDatabase(reply <-chan struct{}) { <-reply }

// short is a function's name without its package path.
func short(fn string) string { return fn[strings.LastIndex(fn, "/")+1:] }

// A loop marks each callback; one that holds it past the threshold is
// reported while it still holds it, with where.
func Example() {
	reply := make(chan struct{})
	w := loopwatch.New(loopwatch.Options{
		Threshold: 5 * time.Millisecond,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)), // or your logger: one Warn line an episode
		OnEpisode: func(e loopwatch.Episode) {
			if !e.Ended {
				fmt.Printf("%s held, in %s at %s\n", e.Loop, e.State, short(e.Culprit().Function))
				close(reply)
			}
		},
	})
	defer w.Stop()
	loop := w.Loop("loop-0")
	done := make(chan struct{})
	go func() { // the event loop
		defer close(done)
		loop.Enter()
		queryDatabase(reply)
		loop.Exit()
	}()
	<-done
	// Output: loop-0 held, in chan receive at loopwatch_test.queryDatabase
}
