package loopwatchtest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/loopwatch"
)

// recorder is a test that records what would fail it.
type recorder struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (r *recorder) Helper()                   {}
func (r *recorder) Cleanup(f func())          { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(f string, a ...any) { r.errs = append(r.errs, fmt.Sprintf(f, a...)) }
func (r *recorder) end() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}
func blockingCall(release chan struct{}) { <-release }

// TestFailsOnHeldLoop: a callback that holds its loop past the threshold
// fails the test, naming the loop and the blocking call; one that does not,
// does not.
func TestFailsOnHeldLoop(t *testing.T) {
	r := &recorder{}
	held := make(chan struct{}, 1)
	reported = func(e loopwatch.Episode) {
		if !e.Ended {
			held <- struct{}{}
		}
	}
	defer func() { reported = nil }()
	w := New(r, 10*time.Millisecond)
	l := w.Loop("loop-0")
	release := make(chan struct{})
	done := make(chan struct{})
	go func() {
		l.Enter()
		blockingCall(release)
		l.Exit()
		close(done)
	}()
	// Held until the episode is reported: its stack is taken, and kept (it
	// was still held), by then. (Stacks counts a stack as it is taken,
	// before the watcher knows whether the loop was still held, and an
	// episode is counted before its stack is taken: released then, the
	// stack was dropped and the test failed.)
	<-held
	close(release)
	<-done
	r.end()
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "loop-0 was held") || !strings.Contains(r.errs[0], "blockingCall") {
		t.Fatalf("failures %q: want one naming loop-0 and blockingCall", r.errs)
	}

	quiet := &recorder{}
	w = New(quiet, 2*time.Second)
	l = w.Loop("loop-1")
	for i := 0; i < 1000; i++ {
		l.Enter()
		l.Exit()
	}
	quiet.end()
	if len(quiet.errs) != 0 {
		t.Fatalf("short callbacks failed the test: %q", quiet.errs)
	}
}
