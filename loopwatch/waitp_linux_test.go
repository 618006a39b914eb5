package loopwatch

import (
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// napInSyscall is a short system call (a 100 us nanosleep) made the way
// Go's syscall package makes one: a loop callback's write, say.
func napInSyscall() {
	ts := syscall.NsecToTimespec(int64(100 * time.Microsecond))
	syscall.Syscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// TestBackFromSyscallWithoutP: with one Go P held by a goroutine that
// spins, a loop whose callbacks make one short system call each comes
// back from it without a P and waits (until the scheduler preempts the
// spinner: about 10 ms). The hold is the scheduler's, not the call's: it
// is counted WaitingForP, its frame not blamed (issue 49: such a hold was
// reported blocked at the lag monitor's eventfd write).
func TestBackFromSyscallWithoutP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var mu sync.Mutex
	var eps []Episode
	w := New(Options{Threshold: time.Millisecond, StackEvery: time.Nanosecond, Logger: quiet,
		OnEpisode: func(e Episode) {
			mu.Lock()
			defer mu.Unlock()
			if !e.Ended {
				eps = append(eps, e)
			}
		}})
	defer w.Stop()
	l := w.Loop("loop-0")
	var stop atomic.Bool
	spun := make(chan struct{})
	go func() { // holds the one P but when the scheduler preempts it
		defer close(spun)
		for !stop.Load() {
		}
	}()
	found := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range eps {
			if e.Cause == WaitingForP {
				return true
			}
		}
		return false
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		l.LockThread()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !found(); {
			l.Enter()
			napInSyscall()
			l.Exit()
		}
	}()
	<-done
	stop.Store(true)
	<-spun
	w.Stop()
	mu.Lock()
	defer mu.Unlock()
	waited := 0
	for _, e := range eps {
		c := e.Culprit()
		if e.State == "runnable" && strings.HasSuffix(c.Function, ".napInSyscall") {
			t.Errorf("blamed on the system call it was back from: %+v", e)
		}
		if e.Cause == WaitingForP {
			waited++
			if e.State != "runnable" || e.Frames != nil {
				t.Errorf("waiting for a P: %+v, want state runnable and no frame blamed", e)
			}
		}
	}
	if waited == 0 {
		t.Fatalf("no episode waiting for a P in 20 s; %d episodes: %+v", len(eps), eps)
	}
	if c := l.Counts(); c.WaitingForP != int64(waited) || w.Stats().WaitingForP != int64(waited) {
		t.Errorf("counts %+v, stats %+v: want %d waiting for a P", c, w.Stats(), waited)
	}
}

// TestWaitingForPThenHeld: a callback back from a system call without a
// P is counted waiting for a P; once it has the P and holds its loop in
// a wait of its own, found there by two stacks a threshold apart, it is
// its callback's after all (Unknown here, the loop not on a locked
// thread; Blocked on one), counted so and reported again, at the wait.
// The test holds the one P itself while the loop comes back from its
// call, and looks (Driven) while it waits.
func TestWaitingForPThenHeld(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var got []Episode
	w := NewDriven(Options{Threshold: time.Millisecond, StackEvery: time.Nanosecond, Logger: quiet,
		OnEpisode: func(e Episode) { got = append(got, e) }})
	defer w.Stop()
	buf := make([]byte, 1<<20)
	for try := 1; ; try++ {
		got = got[:0]
		l := w.Loop("loop-" + strconv.Itoa(try))
		napping, holding, release := make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{})
		go func() {
			l.Enter()
			napping <- struct{}{}
			napInSyscall()
			holding <- struct{}{}
			holdOn(release)
			l.Exit()
		}()
		<-napping
		// Holding the P (this goroutine runs once the scheduler takes it
		// from the loop's system call), until the loop is back from its
		// call and waits for it, 5 ms at most (the scheduler preempts a
		// goroutine after 10).
		waiting := false
		for start := time.Now(); !waiting && time.Since(start) < 5*time.Millisecond; {
			_, _, waiting, _ = parse(buf[:runtime.Stack(buf, true)], l.gid.Load())
		}
		t0 := time.Now()
		if waiting {
			w.Look(t0)
			w.Look(t0.Add(2 * time.Millisecond)) // past the threshold: its stack is taken now
		}
		<-holding // the loop runs, and waits in holdOn
		w.Look(t0.Add(3 * time.Millisecond))
		w.Look(t0.Add(4 * time.Millisecond))
		close(release)
		for l.in.Load() {
			time.Sleep(time.Millisecond)
		}
		w.Look(t0.Add(5 * time.Millisecond))
		if !waiting || len(got) == 0 || got[0].Cause != WaitingForP {
			if try == 50 {
				t.Fatalf("the loop was never found waiting for a P in 50 tries: %+v", got)
			}
			continue
		}
		if len(got) != 3 || got[0].State != "runnable" || got[0].Frames != nil {
			t.Fatalf("reports %+v: want waiting for a P (runnable, no frame blamed), held after all, ended", got)
		}
		after := got[1]
		if after.Cause != Unknown || after.State != "chan receive" || !strings.HasSuffix(after.Culprit().Function, ".holdOn") || !after.Start.Equal(got[0].Start) {
			t.Errorf("second report %+v: want the same episode, unknown (no locked thread), in chan receive at holdOn", after)
		}
		if end := got[2]; !end.Ended || end.Cause != Unknown {
			t.Errorf("end %+v", end)
		}
		if c, s := l.Counts(), w.Stats(); c.Unknown != 1 || c.WaitingForP != 0 || s.WaitingForP != 0 {
			t.Errorf("counts %+v, stats %+v: want one episode, its callback's", c, s)
		}
		return
	}
}

// TestWaitingForPLetGoBeforeDecided: a loop on a locked thread that a late
// watcher first finds held past the threshold is decided a look later
// (its thread's counts need two reads), by when the loop may be let go;
// its stack is taken at the first look, and says it waited for a P (it
// was decided blocked, without a stack, when the stack came with the
// decision: the kit's offload measurement counted such a hold, 3.6 ms in
// /offload, as a block).
func TestWaitingForPLetGoBeforeDecided(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var got []Episode
	w := NewDriven(Options{Threshold: time.Millisecond, Logger: quiet,
		OnEpisode: func(e Episode) { got = append(got, e) }})
	defer w.Stop()
	buf := make([]byte, 1<<20)
	for try := 1; ; try++ {
		got = got[:0]
		l := w.Loop("loop-" + strconv.Itoa(try))
		napping, done, finish := make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{})
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			l.LockThread()
			l.EnterAt(time.Now().Add(-5 * time.Millisecond).UnixNano())
			napping <- struct{}{}
			napInSyscall()
			l.ExitAt(time.Now().UnixNano())
			done <- struct{}{}
			<-finish // its thread parked, not gone, when the watcher reads it
		}()
		<-napping
		waiting := false // this goroutine holds the one P while the loop comes back from its call
		for start := time.Now(); !waiting && time.Since(start) < 5*time.Millisecond; {
			_, _, waiting, _ = parse(buf[:runtime.Stack(buf, true)], l.gid.Load())
		}
		t0 := time.Now()
		if waiting {
			w.Look(t0) // found held past the threshold: its stack now, its cause next look
		}
		<-done // the loop runs, and lets go
		w.Look(t0.Add(time.Second))
		close(finish)
		// (Starved: its thread then waited for a CPU past the threshold, on
		// a busy machine: tried again.)
		if !waiting || len(got) == 0 || got[0].State == "" || got[0].Cause == Starved {
			if try == 50 {
				t.Fatalf("the loop was never found waiting for a P in 50 tries: %+v", got)
			}
			continue
		}
		if len(got) != 2 || got[0].Cause != WaitingForP || got[0].State != "runnable" || got[0].Frames != nil || !got[1].Ended || got[1].Cause != WaitingForP {
			t.Fatalf("reports %+v: want one episode waiting for a P (runnable, no frame blamed), then its end", got)
		}
		if c := l.Counts(); c.WaitingForP != 1 || c.Blocked != 0 {
			t.Errorf("counts %+v", c)
		}
		return
	}
}
