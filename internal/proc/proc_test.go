package proc

import (
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
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

// TestRunqWait: threads that want more CPU than the machine has wait in
// its run queue, and Of counts that wait over all of them. The threads
// live until the second reading: a thread that ends takes its counts with
// it (a goroutine that ends locked ends its thread), which once made this
// test read less than before.
func TestRunqWait(t *testing.T) {
	n := 3 * runtime.NumCPU()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	before, _, err := Of(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	var spun sync.WaitGroup
	release := make(chan struct{})
	defer close(release)
	stop := time.Now().Add(300 * time.Millisecond)
	for range n {
		spun.Add(1)
		go func() {
			runtime.LockOSThread()
			for time.Now().Before(stop) {
			}
			spun.Done()
			<-release
		}()
	}
	spun.Wait()
	after, _, err := Of(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// n threads on NumCPU cores for 300 ms: about 200 ms of waiting each.
	if _, _, w := after.Since(before); time.Duration(w) < 100*time.Millisecond {
		t.Fatalf("%d spinning threads on %d cores waited %s in the run queue in all", n, runtime.NumCPU(), time.Duration(w))
	}
}
