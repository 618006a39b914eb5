package loopwatch_test

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/bystander-kit/bystander/loopwatch"
)

// queryDatabase stands for a blocking call left in a callback: it waits for
// a reply that, so that each run prints the same, comes once loopwatch has
// reported it.
func queryDatabase(reply <-chan struct{}) { <-reply }

// short is a function's name without its package path.
func short(fn string) string { return fn[strings.LastIndex(fn, "/")+1:] }

// The quick start: one Watcher; one Loop per event loop, made before the
// loops run; Enter and Exit around each callback, on its loop's goroutine.
// A callback that holds its loop past the threshold is reported while it
// still holds it, with where.
func Example() {
	reply := make(chan struct{})
	w := loopwatch.New(loopwatch.Options{
		Threshold: 5 * time.Millisecond,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)), // or your logger: a Warn line an episode
		OnEpisode: func(e loopwatch.Episode) { // on the watcher's goroutine
			if !e.Ended {
				fmt.Printf("%s held, in %s at %s\n", e.Loop, e.State, short(e.Culprit().Function))
				close(reply)
			}
		},
	})
	defer w.Stop()

	// Two event loops, each a goroutine that runs the callbacks it is
	// handed (gnet's, nbio's, evio's loops are such goroutines).
	loops := []chan func(){make(chan func()), make(chan func())}
	var wg sync.WaitGroup
	for i, callbacks := range loops {
		l := w.Loop(fmt.Sprintf("loop-%d", i)) // made here, before the loop runs: no loop writes what another reads
		wg.Add(1)
		go func(callbacks chan func(), l *loopwatch.Loop) { // the event loop
			defer wg.Done()
			for callback := range callbacks {
				l.Enter()
				callback()
				l.Exit()
			}
		}(callbacks, l)
	}
	loops[0] <- func() {}                       // a quick callback
	loops[1] <- func() { queryDatabase(reply) } // a blocking call left in a handler
	loops[0] <- func() {}                       // loop 0 is not held meanwhile
	for _, callbacks := range loops {
		close(callbacks)
	}
	wg.Wait()
	// Output: loop-1 held, in chan receive at loopwatch_test.queryDatabase
}
