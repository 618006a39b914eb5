package loopwatch

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// heldLoops makes n loops of w, each held by a goroutine of its own until
// release closes; it returns once every one has entered and parked in
// holdOn (a goroutine just past Enter may still be in the WaitGroup's
// wake-up, seen on Go 1.21 in CI), and exited waits until every one has left.
func heldLoops(w *Watcher, n int, release chan struct{}, name string) (loops []*Loop, exited func()) {
	var entered, left sync.WaitGroup
	for i := 0; i < n; i++ {
		l := w.Loop(fmt.Sprintf("%s-%d", name, i))
		loops = append(loops, l)
		entered.Add(1)
		left.Add(1)
		go func() {
			defer left.Done()
			l.Enter()
			entered.Done()
			holdOn(release)
			l.Exit()
		}()
	}
	entered.Wait()
	parkedInHoldOn(loops)
	return loops, left.Wait
}

// parkedInHoldOn waits, at most 10 s, until each loop's goroutine is
// parked in a channel receive at holdOn, read as the watcher reads it
// (parse, by the goroutine's id).
func parkedInHoldOn(loops []*Loop) {
	var buf []byte
	deadline := time.Now().Add(10 * time.Second)
	for _, l := range loops {
		for time.Now().Before(deadline) {
			if n := runtime.NumGoroutine() * 1024; len(buf) < n {
				buf = make([]byte, n)
			}
			state, frames, _, _ := parse(buf[:runtime.Stack(buf, true)], l.gid.Load())
			if state == "chan receive" && len(frames) > 0 && strings.HasSuffix(frames[0].Function, ".holdOn") {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// TestEveryHeldLoopCounted: loops held past the threshold in one look are
// all counted before any stack is taken, and one stack serves them all,
// however long it takes and whatever the loops do meanwhile. Here the
// first report releases every loop and waits until each has left its
// callback: one stack per loop, one after another, counted one of the
// eight (and a slow stack in a process of many goroutines did the same,
// issue 53: 1 of 8 beside 50,000 goroutines).
func TestEveryHeldLoopCounted(t *testing.T) {
	release := make(chan struct{})
	var exited func()
	var once sync.Once
	var got []Episode
	w := NewDriven(Options{Threshold: time.Millisecond, Logger: quiet,
		OnEpisode: func(e Episode) {
			got = append(got, e)
			once.Do(func() { close(release); exited() })
		}})
	defer w.Stop()
	loops, left := heldLoops(w, 8, release, "loop")
	exited = left
	t0 := time.Now()
	w.Look(t0)
	w.Look(t0.Add(2 * time.Millisecond))
	if s := w.Stats(); s.Episodes != 8 || s.Stacks != 1 {
		t.Fatalf("stats %+v: want 8 episodes and one stack for them all", s)
	}
	for _, l := range loops {
		if c := l.Counts(); c.Unknown != 1 {
			t.Errorf("%s: counts %+v, want one episode", l.Name(), c)
		}
	}
	if len(got) != 8 {
		t.Fatalf("%d reports, want 8", len(got))
	}
	for _, e := range got {
		// (A loop's goroutine may not have parked yet: "runnable" at holdOn.)
		if e.Ended || e.State == "" || !strings.HasSuffix(e.Culprit().Function, ".holdOn") {
			t.Errorf("%s: %+v, want it reported held, at holdOn (the stack was taken before any report)", e.Loop, e)
		}
	}
}

// TestEveryHeldLoopCountedBesideManyGoroutines: eight loops held at once,
// beside 50,000 idle goroutines, where one stack stops the world for about
// 0.1 s: every episode is counted (issue 53: 2 of 8 beside 10,000, 1 of 8
// beside 50,000, one stack per held loop, one after another). The loops
// are held for four stacks' time, so that one stack a look is enough and
// one a loop is not.
func TestEveryHeldLoopCountedBesideManyGoroutines(t *testing.T) {
	idle := make(chan struct{})
	defer close(idle)
	for i := 0; i < 50000; i++ {
		go func() { <-idle }()
	}
	var stackTime time.Duration
	buf := make([]byte, runtime.NumGoroutine()*512)
	for i := 0; i < 2; i++ {
		t0 := time.Now()
		runtime.Stack(buf, true)
		stackTime = max(stackTime, time.Since(t0))
	}
	hold := max(4*stackTime, 50*time.Millisecond)
	var mu sync.Mutex
	ended := 0
	w := New(Options{Threshold: time.Millisecond, Logger: quiet, OnEpisode: func(e Episode) {
		mu.Lock()
		defer mu.Unlock()
		if e.Ended {
			ended++
		}
	}})
	defer w.Stop()
	release := make(chan struct{})
	loops, exited := heldLoops(w, 8, release, "loop")
	time.Sleep(hold)
	close(release)
	exited()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := ended
		mu.Unlock()
		if n >= 8 || time.Now().After(deadline) {
			break
		}
	}
	w.Stop()
	s := w.Stats()
	t.Logf("one stack took up to %s; loops held %s; %+v", stackTime, hold, s)
	if s.Episodes != 8 {
		t.Errorf("%d episodes counted, want 8 (one a loop)", s.Episodes)
	}
	for _, l := range loops {
		if c := l.Counts(); c.Unknown != 1 {
			t.Errorf("%s: counts %+v, want one episode", l.Name(), c)
		}
	}
}

// TestStackServesLoopsHeldAcross: a loop held across a look's stack by the
// callback that holds it still, and past the threshold only later, has its
// episode's stack from that one, without another; a loop whose callback
// ended meanwhile, held again by a new one, gets a new stack.
func TestStackServesLoopsHeldAcross(t *testing.T) {
	var got []Episode
	w := NewDriven(Options{Threshold: time.Millisecond, Logger: quiet,
		OnEpisode: func(e Episode) { got = append(got, e) }})
	defer w.Stop()
	release := make(chan struct{})
	defer close(release)
	a, _ := heldLoops(w, 1, release, "a")
	t0 := time.Now()
	w.Look(t0) // a seen
	b, _ := heldLoops(w, 1, release, "b")
	again := make(chan struct{})
	var c *Loop
	{
		var entered sync.WaitGroup
		c = w.Loop("c-0")
		entered.Add(1)
		go func() {
			c.Enter()
			entered.Done()
			<-again
			c.Exit()
			c.Enter()
			holdOn(release)
			c.Exit()
		}()
		entered.Wait()
	}
	w.Look(t0.Add(500 * time.Microsecond)) // b and c seen
	w.Look(t0.Add(1200 * time.Microsecond))
	if s := w.Stats(); s.Episodes != 1 || s.Stacks != 1 || a[0].Counts().Unknown != 1 {
		t.Fatalf("stats %+v: want a's episode and its stack", s)
	}
	close(again) // c's callback ends, and another begins
	for c.seq.Load() != 2 || !c.in.Load() {
		time.Sleep(time.Millisecond)
	}
	w.Look(t0.Add(1600 * time.Microsecond)) // b past the threshold; c's new callback seen
	if s := w.Stats(); s.Episodes != 2 || s.Stacks != 1 || b[0].Counts().Unknown != 1 {
		t.Fatalf("stats %+v: want b's episode, from the same stack", s)
	}
	w.Look(t0.Add(3 * time.Millisecond)) // c's new callback past the threshold
	if s := w.Stats(); s.Episodes != 3 || s.Stacks != 2 || c.Counts().Unknown != 1 {
		t.Fatalf("stats %+v: want c's episode, with a stack of its own", s)
	}
	if len(got) != 3 {
		t.Fatalf("%d reports, want 3", len(got))
	}
	for _, e := range got {
		if e.State == "" || !strings.HasSuffix(e.Culprit().Function, ".holdOn") {
			t.Errorf("%s: in %q at %s, want a stack at holdOn", e.Loop, e.State, e.Culprit())
		}
	}
}
