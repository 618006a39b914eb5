package loopwatch

import (
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// callInSyscall is a system call of the callback's own that lasts d (a
// nanosleep, as a JDBC read holds its thread).
func callInSyscall(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	syscall.Syscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// TestParkedWithoutStackNotJudged: a loop on a locked thread whose thread
// Go parked for the whole hold (its goroutine waiting on a timer, a
// channel, a lock, the network, or for a P: the thread's counts cannot
// tell which) is not judged blocked without a stack: Unknown, counted so.
// One whose thread was found in a system call of its own is blocked
// without a stack. (Beside 4 noisy neighbours the kit's offload
// measurement counted such stackless holds as blocks, 1.5 to 6 ms in
// /offload, where nothing blocks: the loop's goroutine had waited for a
// P and was let go before its stack was taken.)
func TestParkedWithoutStackNotJudged(t *testing.T) {
	got := make(chan Episode, 16)
	w := New(Options{Threshold: 10 * time.Millisecond, StackEvery: -1, OnEpisode: func(e Episode) { got <- e }, Logger: quiet})
	defer w.Stop()
	for _, c := range []struct {
		name string
		call func()
		want Cause
	}{
		{"sleep", func() { sleepInCallback(200 * time.Millisecond) }, Unknown},
		{"syscall", func() { callInSyscall(200 * time.Millisecond) }, Blocked},
	} {
		l := w.Loop(c.name)
		done := onLockedThread(l, nil, c.call)
		// A busy machine may starve the thread first: starved, then
		// decided again.
		e := until(t, got, func(e Episode) bool { return e.Loop == c.name && !e.Ended && e.Cause != Starved })
		if e.Cause != c.want || e.State != "" || e.Frames != nil {
			t.Errorf("%s: %+v: want %s, no stack", c.name, e, c.want)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		end := until(t, got, func(e Episode) bool { return e.Loop == c.name && e.Ended })
		if n := l.Counts(); end.Cause != c.want || n.Blocked+n.Unknown != 1 || (c.want == Unknown) != (n.Unknown == 1) {
			t.Errorf("%s: end %+v, counts %+v: want one episode, %s", c.name, end, n, c.want)
		}
	}
}

// TestRunnableOnParkedThreadNotBlocked: a loop on a locked thread whose
// goroutine, woken from a wait of its callback's, waits for the one P is
// found "runnable" in its own code, its thread parked by Go all along:
// the hold may be its wait or the scheduler's, and no frame is blamed
// for it: Unknown, not Blocked. (The kit's offload measurement blamed
// such a hold, 16 ms and 98 ms, on offload.(*Pool).Submit, which never
// waits.) The test holds the one P while the loop waits for it, and
// looks (Driven) meanwhile.
func TestRunnableOnParkedThreadNotBlocked(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var got []Episode
	w := NewDriven(Options{Threshold: time.Millisecond, StackEvery: time.Nanosecond, Logger: quiet,
		OnEpisode: func(e Episode) { got = append(got, e) }})
	defer w.Stop()
	buf := make([]byte, 1<<20)
	for try := 1; ; try++ {
		got = got[:0]
		l := w.Loop("loop-" + strconv.Itoa(try))
		waiting, release, done := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			l.LockThread()
			l.Enter()
			waiting <- struct{}{}
			holdOn(release)
			l.Exit()
		}()
		<-waiting
		for state := ""; state != "chan receive"; {
			state, _, _, _ = parse(buf[:runtime.Stack(buf, true)], l.gid.Load())
			runtime.Gosched()
		}
		t0 := time.Now()
		w.Look(t0)                             // seen: timed from here
		w.Look(t0.Add(500 * time.Microsecond)) // seen again: its thread read from here
		// Woken, it waits for the P this goroutine holds (for a few
		// milliseconds: the scheduler preempts a goroutine after 10).
		close(release)
		w.Look(t0.Add(2 * time.Millisecond)) // past the threshold: decided, its stack taken
		<-done
		w.Look(t0.Add(3 * time.Millisecond))
		if len(got) == 0 || got[0].State != "runnable" {
			if try == 50 {
				t.Fatalf("the loop was never found waiting for the P in 50 tries: %+v", got)
			}
			continue
		}
		if e := got[0]; e.Cause != Unknown || !strings.HasSuffix(e.Culprit().Function, ".holdOn") {
			t.Errorf("%+v: want unknown (not judged), runnable at holdOn", e)
		}
		if c := l.Counts(); c.Blocked != 0 || c.Unknown != 1 {
			t.Errorf("counts %+v: want one episode, not judged", c)
		}
		return
	}
}
