package loopwatchprom

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/bystander-kit/bystander/loopwatch"
)

// TestCollector: one held loop shows as one episode of that loop, with
// the time it held and the stack taken; the other loop shows none.
func TestCollector(t *testing.T) {
	ended := make(chan struct{})
	w := loopwatch.New(loopwatch.Options{Threshold: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnEpisode: func(e loopwatch.Episode) {
			if e.Ended {
				close(ended)
			}
		}})
	defer w.Stop()
	held, calm := w.Loop("loop-0"), w.Loop("loop-1")
	calm.Enter()
	calm.Exit()
	release := make(chan struct{})
	go func() {
		held.Enter()
		<-release
		held.Exit()
	}()
	for w.Stats().Stacks == 0 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the episode did not end")
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(Collector(w))
	want := `
# HELP loopwatch_episodes_total Callbacks that held their event loop past the threshold, by cause: blocked (the callback held it), starved (its thread waited for a CPU), waiting_for_p (its goroutine, back from a system call, waited for a Go P), unknown (not on a locked thread: cannot tell).
# TYPE loopwatch_episodes_total counter
loopwatch_episodes_total{cause="blocked",loop="loop-0"} 0
loopwatch_episodes_total{cause="blocked",loop="loop-1"} 0
loopwatch_episodes_total{cause="starved",loop="loop-0"} 0
loopwatch_episodes_total{cause="starved",loop="loop-1"} 0
loopwatch_episodes_total{cause="unknown",loop="loop-0"} 1
loopwatch_episodes_total{cause="waiting_for_p",loop="loop-0"} 0
loopwatch_episodes_total{cause="waiting_for_p",loop="loop-1"} 0
loopwatch_episodes_total{cause="unknown",loop="loop-1"} 0
# HELP loopwatch_stacks_total Stacks taken of a holding goroutine (the world is stopped for part of each).
# TYPE loopwatch_stacks_total counter
loopwatch_stacks_total 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "loopwatch_episodes_total", "loopwatch_stacks_total"); err != nil {
		t.Fatal(err)
	}
	if n := held.Counts(); n.Unknown != 1 || n.Held < 10*time.Millisecond {
		t.Fatalf("loop-0: %+v, want one episode of unknown cause (not on a locked thread)", n)
	}
	// (Counted by hand: testutil.GatherAndCount is younger than the
	// client_golang this module asks for.)
	mfs, err := reg.Gather()
	c := 0
	for _, mf := range mfs {
		if n := mf.GetName(); n == "loopwatch_held_seconds_total" || n == "loopwatch_stack_pause_seconds_max" {
			c += len(mf.GetMetric())
		}
	}
	if err != nil || c != 3 {
		t.Fatalf("%d series, %v", c, err)
	}
}
