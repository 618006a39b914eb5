package proc

import (
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestOfMatchesSelf(t *testing.T) {
	// Spin until this process has used 200 ms of CPU (not of the clock: on
	// a busy machine 200 ms of the clock may be far less CPU).
	cpu0, giveUp := Self().CPUNs(), time.Now().Add(30*time.Second)
	for Self().CPUNs()-cpu0 < int64(200*time.Millisecond) && time.Now().Before(giveUp) {
	}
	self := Self()
	of, threads, err := Of(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if threads < 1 || of.VolCtxSw+of.InvolCtxSw <= 0 || of.MaxRSSBytes <= 0 {
		t.Fatalf("Of: %+v threads %d", of, threads)
	}
	// Both count the same CPU: /proc in 10 ms ticks, getrusage finer.
	if d := self.CPUNs() - of.CPUNs(); d < -int64(50*time.Millisecond) || d > int64(50*time.Millisecond) {
		t.Fatalf("getrusage %d ns, /proc %d ns", self.CPUNs(), of.CPUNs())
	}
	if of.CPUNs() < int64(150*time.Millisecond) {
		t.Fatalf("200 ms of spinning counted as %d ns", of.CPUNs())
	}
	if _, _, err := Of(1 << 30); err == nil {
		t.Fatal("no error for a missing process")
	}
}

func TestMachineBusy(t *testing.T) {
	a, err := ReadMachine()
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(end) {
	}
	b, _ := ReadMachine()
	busy := b.BusySince(a)
	// One spinning goroutine on a machine of n CPUs: at least most of 1/n.
	if busy <= 0 || busy > 1 {
		t.Fatalf("busy %v", busy)
	}
}

// spin runs n threads that spin for d, each locked to its own OS thread,
// and returns once they have spun; release lets them end (a goroutine that
// ends locked ends its thread with it).
func spin(n int, d time.Duration) (release func()) {
	var spun sync.WaitGroup
	rel := make(chan struct{})
	stop := time.Now().Add(d)
	for range n {
		spun.Add(1)
		go func() {
			runtime.LockOSThread()
			for time.Now().Before(stop) {
			}
			spun.Done()
			<-rel
		}()
	}
	spun.Wait()
	return func() { close(rel) }
}

func read(t *testing.T) Usage {
	t.Helper()
	u, _, err := Of(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestRunqWait: threads that want more CPU than the machine has wait in
// its run queue, and Of counts that wait over all of them. The threads
// live until the second reading: a thread that ends takes its counts with
// it, which once made this test read less than before.
func TestRunqWait(t *testing.T) {
	n := 3 * runtime.NumCPU()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	before := read(t)
	defer spin(n, 300*time.Millisecond)()
	after := read(t)
	// n threads on NumCPU cores for 300 ms: about 200 ms of waiting each.
	if _, _, w := after.Since(before); time.Duration(w) < 100*time.Millisecond {
		t.Fatalf("%d spinning threads on %d cores waited %s in the run queue in all", n, runtime.NumCPU(), time.Duration(w))
	}
}

// TestSinceThreadsThatEnd: run-queue waits are counted thread by thread.
// When threads that waited long before the window end in it, while new
// ones wait as long within it, the process waited as long in the window:
// the difference of the sums over the threads alive at each reading says
// about nothing (or falls) there, and a floor at 0 hid the window's whole
// wait (0 s and 12 ms where about 1.2 s was waited, before Since).
func TestSinceThreadsThatEnd(t *testing.T) {
	n := 3 * runtime.NumCPU()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	old := spin(n, 300*time.Millisecond) // waits before the window
	before := read(t)
	old()                                 // those threads end
	defer spin(n, 300*time.Millisecond)() // new ones wait within it
	after := read(t)
	if _, _, w := after.Since(before); time.Duration(w) < 100*time.Millisecond {
		t.Fatalf("%d threads spinning on %d cores in the window waited %s in the run queue in all (the sums: %s then %s)",
			n, runtime.NumCPU(), time.Duration(w), time.Duration(before.RunqWaitNs), time.Duration(after.RunqWaitNs))
	}
}

// TestListens: a process listens at an address when one of its
// descriptors is the listening socket bound there (/proc/net/tcp and
// /proc/PID/fd); another process, or another port, does not.
func TestListens(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		addr := "127.0.0.1:0"
		if network == "tcp6" {
			addr = "[::1]:0"
		}
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Skipf("%s: %v", network, err)
		}
		defer ln.Close()
		at := ln.Addr().String()
		if ok, err := Listens(os.Getpid(), at); !ok || err != nil {
			t.Errorf("%s: this process listens at %s: %v %v", network, at, ok, err)
		}
		other := exec.Command("sleep", "5")
		if err := other.Start(); err != nil {
			t.Fatal(err)
		}
		ok, err := Listens(other.Process.Pid, at)
		other.Process.Kill()
		other.Wait()
		if ok || err != nil {
			t.Errorf("%s: a sleep listens at %s: %v %v", network, at, ok, err)
		}
		_, port, _ := net.SplitHostPort(at)
		if p, _ := strconv.Atoi(port); p > 1 {
			if ok, _ := Listens(os.Getpid(), net.JoinHostPort("127.0.0.1", strconv.Itoa(p-1))); ok {
				t.Errorf("listens on the port below %s too", at)
			}
		}
	}
	// Listening on every address counts for a loopback one.
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if ok, err := Listens(os.Getpid(), "127.0.0.1:"+port); !ok || err != nil {
		t.Errorf("a wildcard listener at port %s: %v %v", port, ok, err)
	}
}

// TestThreadsSince: each thread's run-queue waits between two readings,
// with its name: threads named by prctl show under their names, and one
// that woke 200 times with as many waits or more.
func TestThreadsSince(t *testing.T) {
	named := make(chan struct{})
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // the thread ends with the goroutine: never reused
		name := []byte("bystander-test\x00")
		if err := unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0, 0, 0); err != nil {
			t.Error(err)
		}
		close(named)
		<-done
	}()
	<-named
	before, _, err := Of(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	wake := make(chan struct{})
	go func() {
		runtime.LockOSThread() // kept until done: a thread that ends takes its counts with it
		name := []byte("bystander-wake\x00")
		_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0, 0, 0)
		for range 200 {
			time.Sleep(200 * time.Microsecond)
		}
		close(wake)
		<-done
	}()
	<-wake
	after, _, err := Of(os.Getpid())
	close(done)
	if err != nil {
		t.Fatal(err)
	}
	var sawIdle, sawWake bool
	for _, th := range after.ThreadsSince(before) {
		switch th.Name {
		case "bystander-test":
			sawIdle = true
		case "bystander-wake":
			sawWake = true
			if th.RunqWaits < 200 {
				t.Errorf("a thread that woke 200 times: %d waits", th.RunqWaits)
			}
		}
	}
	if !sawIdle {
		t.Error("a thread named by prctl is not listed under its name")
	}
	if !sawWake {
		t.Error("the thread that woke 200 times is not listed under its name")
	}
}

// TreeCPU counts a process and its children, and their CPU time.
func TestTreeCPU(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 5 & sleep 5 & i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var cpu int64
	var n int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var err error
		if cpu, n, err = TreeCPU(cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		if n == 3 && cpu > 0 {
			break
		}
	}
	if n != 3 || cpu <= 0 {
		t.Errorf("sh and its 2 sleeps: %d processes, %d ns CPU", n, cpu)
	}
	if _, _, err := TreeCPU(1 << 30); err == nil {
		t.Error("no error for a process that does not exist")
	}
}

// TestThreadCPU: each thread's time on a CPU between two readings: a
// thread that spun for 50 ms of its own CPU time shows that much, an idle
// one next to nothing.
func TestThreadCPU(t *testing.T) {
	before, _, err := Of(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // the thread ends with the goroutine: never reused
		name := []byte("bystander-spin\x00")
		if err := unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0, 0, 0); err != nil {
			t.Error(err)
		}
		var ts unix.Timespec
		for {
			if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil || ts.Nano() >= 50e6 {
				break
			}
		}
		close(done)
		select {} // held, named, until the process ends
	}()
	<-done
	after, _, err := Of(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, th := range after.ThreadsSince(before) {
		if th.Name == "bystander-spin" {
			seen = true
			if th.CPUNs < 45e6 {
				t.Errorf("a thread that spun 50ms of CPU: %s on a CPU", time.Duration(th.CPUNs))
			}
		}
	}
	if !seen {
		t.Error("the spinning thread is not listed")
	}
}

// TestRuntimeThread: a JVM's own threads are told from those that run its
// code, by their names as /proc gives them (15 characters).
func TestRuntimeThread(t *testing.T) {
	for name, want := range map[string]bool{"C2 CompilerThre": true, "C1 CompilerThre": true, "GC Thread#0": true, "G1 Conc#0": true, "VM Thread": true,
		"nioEventLoopGro": false, "http-nio-8080-e": false, "node": false, "java": false, "main": false} {
		if got := RuntimeThread(name); got != want {
			t.Errorf("%q: %v, want %v", name, got, want)
		}
	}
}
