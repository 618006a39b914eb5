package loopwatch

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// The few scheduler calls the tests make, with the standard library alone
// (loopwatch's module requires nothing).

// cpuSet is the kernel's CPU mask (1,024 CPUs).
type cpuSet [16]uint64

func (s *cpuSet) set(cpu int)        { s[cpu/64] |= 1 << (cpu % 64) }
func (s *cpuSet) isSet(cpu int) bool { return s[cpu/64]&(1<<(cpu%64)) != 0 }
func (s *cpuSet) count() int {
	n := 0
	for cpu := 0; cpu < len(s)*64; cpu++ {
		if s.isSet(cpu) {
			n++
		}
	}
	return n
}

func schedGetaffinity(pid int, s *cpuSet) error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, uintptr(pid), unsafe.Sizeof(*s), uintptr(unsafe.Pointer(s))); e != 0 {
		return e
	}
	return nil
}

func schedSetaffinity(pid int, s *cpuSet) error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, uintptr(pid), unsafe.Sizeof(*s), uintptr(unsafe.Pointer(s))); e != 0 {
		return e
	}
	return nil
}

// schedIdle puts the calling thread under SCHED_IDLE: it runs only when
// nothing else wants its CPU.
func schedIdle() error {
	var param struct{ priority int32 }
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, 0, 5 /* SCHED_IDLE */, uintptr(unsafe.Pointer(&param))); e != 0 {
		return e
	}
	return nil
}

// threadCPU is the calling thread's CPU time.
func threadCPU() (time.Duration, error) {
	var ts syscall.Timespec
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, 3 /* CLOCK_THREAD_CPUTIME_ID */, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0, e
	}
	return time.Duration(ts.Nano()), nil
}

// onLockedThread runs f as a loop callback on a goroutine locked to a
// thread of its own (which ends with it), after setup on that thread.
func onLockedThread(l *Loop, setup func() error, f func()) (done chan error) {
	done = make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		l.LockThread()
		if setup != nil {
			if err := setup(); err != nil {
				done <- err
				return
			}
		}
		l.EnterAt(time.Now().UnixNano()) // timed from here: a watcher short of a P may first see it late
		f()
		l.ExitAt(time.Now().UnixNano())
		done <- nil
	}()
	return done
}

// cannot says the machine cannot make the test's conditions: a skip on a
// developer's machine, a failure in CI (CI set), where the test must run.
func cannot(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// until is the first episode reported that ok accepts, or fails after
// 20 s.
func until(t *testing.T, got chan Episode, ok func(Episode) bool) Episode {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case e := <-got:
			if ok(e) {
				return e
			}
		case <-deadline:
			t.Fatal("no such episode reported within 20 s")
			return Episode{}
		}
	}
}

func sleepInCallback(d time.Duration) { time.Sleep(d) }

// TestLockedSleepBlocked: a callback that sleeps on a locked loop thread
// blocked its loop, and the thread's counts say it was off a CPU by its
// own doing.
func TestLockedSleepBlocked(t *testing.T) {
	got := make(chan Episode, 16)
	w := New(Options{Threshold: 10 * time.Millisecond, OnEpisode: func(e Episode) { got <- e }, Logger: quiet})
	defer w.Stop()
	l := w.Loop("loop-0")
	done := onLockedThread(l, nil, func() { sleepInCallback(300 * time.Millisecond) })
	e := until(t, got, func(e Episode) bool { return !e.Ended && e.Cause == Blocked })
	if e.Thread.Watched <= 0 || e.Thread.Own(e.Held) < 10*time.Millisecond {
		t.Errorf("thread %+v over a hold of %s: want watched, and the callback's own time past the threshold", e.Thread, e.Held)
	}
	if e.State != "sleep" || !strings.HasSuffix(e.Culprit().Function, ".sleepInCallback") {
		t.Errorf("held in %q at %s, want sleep at sleepInCallback", e.State, e.Culprit())
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	end := until(t, got, func(e Episode) bool { return e.Ended })
	if end.Cause != Blocked || w.Stats().Starved != 0 || l.Counts().Blocked != 1 {
		t.Errorf("end %+v, stats %+v, counts %+v", end, w.Stats(), l.Counts())
	}
}

// TestLockedStarved: a quick callback on a loop thread that gets almost
// no CPU (SCHED_IDLE, on the one CPU a spinning process holds) holds its
// loop past the threshold, and is Starved: not blamed on its frame, not
// counted as blocked, and not failed by loopwatchtest's rule.
func TestLockedStarved(t *testing.T) {
	var cpus cpuSet
	if err := schedGetaffinity(0, &cpus); err != nil || cpus.count() < 1 {
		cannot(t, "affinity: %v", err)
	}
	cpu := 0
	for !cpus.isSet(cpu) {
		cpu++
	}
	pin := func() error {
		var one cpuSet
		one.set(cpu)
		return schedSetaffinity(0, &one)
	}
	hog := exec.Command("sh", "-c", "while :; do :; done") // a process that takes the loop's CPU
	if err := hog.Start(); err != nil {
		cannot(t, "no shell to take a CPU: %v", err)
	}
	defer func() { hog.Process.Kill(); hog.Wait() }()
	var one cpuSet
	one.set(cpu)
	if err := schedSetaffinity(hog.Process.Pid, &one); err != nil {
		cannot(t, "cannot pin a process: %v", err)
	}
	// Until the shell spins (it starts, then loops): 50 ms of its CPU.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", hog.Process.Pid))
		var ran int64
		if err == nil {
			fmt.Sscan(string(b), &ran)
		}
		if ran >= int64(50*time.Millisecond) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the spinning process did not spin: %q %v", b, err)
		}
	}
	got := make(chan Episode, 16)
	w := New(Options{Threshold: 50 * time.Millisecond, OnEpisode: func(e Episode) { got <- e }, Logger: quiet})
	defer w.Stop()
	// The kernel does not always keep an idle-policy thread off a CPU at
	// once (a fresh thread may finish its slice): a callback that ends
	// unseen, under the threshold, is tried again on a new thread.
	var l *Loop
	for try := 1; ; try++ {
		l = w.Loop(fmt.Sprintf("loop-%d", try))
		done := onLockedThread(l, func() error {
			if err := pin(); err != nil {
				return err
			}
			if err := schedIdle(); err != nil {
				return err
			}
			// Off the CPU for a moment: it comes back behind the spinning
			// process, not with what is left of its slice.
			ts := syscall.NsecToTimespec(int64(time.Millisecond))
			return syscall.Nanosleep(&ts, nil)
		}, func() {
			// 20 ms of its own CPU time (a count of iterations would be ten
			// times as long under the race detector), had it a CPU: under
			// the 50 ms threshold.
			for {
				if d, err := threadCPU(); err != nil || d >= 20*time.Millisecond {
					return
				}
			}
		})
		var e Episode
		select {
		case e = <-got:
		case err := <-done:
			if err != nil {
				cannot(t, "cannot make a starved thread here: %v", err)
			}
			if try == 10 {
				cannot(t, "the kernel never kept an idle-policy thread off the CPU for 50 ms in 10 tries")
			}
			continue
		case <-time.After(20 * time.Second):
			t.Fatalf("no episode in 20 s: seq %d in %v", l.seq.Load(), l.in.Load())
		}
		if e.Cause != Starved || e.Frames != nil || e.Thread.Own(e.Held) >= 50*time.Millisecond {
			t.Fatalf("episode %+v: want starved, its thread waiting for a CPU, no frame blamed", e)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		break
	}
	if s := w.Stats(); s.Starved < 1 || l.Counts().Blocked != 0 {
		t.Errorf("stats %+v, counts %+v: want it counted starved, not blocked", s, l.Counts())
	}
}

// TestLockedSpinBlocked: a callback that spins past the threshold is
// blocked even on a machine so busy that its thread waited for a CPU: once
// its own time passes the threshold, a starved report is taken back.
func TestLockedSpinBlocked(t *testing.T) {
	got := make(chan Episode, 64)
	w := New(Options{Threshold: 10 * time.Millisecond, OnEpisode: func(e Episode) { got <- e }, Logger: quiet})
	defer w.Stop()
	l := w.Loop("loop-0")
	done := onLockedThread(l, nil, func() { spinFor(200 * time.Millisecond) })
	e := until(t, got, func(e Episode) bool { return !e.Ended && e.Cause == Blocked })
	if e.Thread.Own(e.Held) < 10*time.Millisecond || !strings.HasSuffix(e.Culprit().Function, ".spinFor") {
		t.Errorf("episode %+v", e)
	}
	<-done
	until(t, got, func(e Episode) bool { return e.Ended })
	if c := l.Counts(); c.Blocked != 1 || c.Starved != 0 || w.Stats().Starved != 0 {
		t.Errorf("counts %+v, stats %+v: want one blocked episode", c, w.Stats())
	}
}

// spinFor burns its thread's CPU until the thread has run d on a CPU (or
// 30 s have passed): a wall clock's 200 ms gave the spin under 10 ms of CPU
// at a load average of 23 on 2 cores, a hold the watcher rightly called
// Starved, so the test waited for a Blocked episode that never came.
func spinFor(d time.Duration) {
	own := func() time.Duration {
		var ru syscall.Rusage
		if syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru) != nil {
			return 0
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	from, start := own(), time.Now()
	for own()-from < d && time.Since(start) < 30*time.Second {
		for t := time.Now(); time.Since(t) < time.Millisecond; { // the stack finds the spin here, not in the system call
		}
	}
}
