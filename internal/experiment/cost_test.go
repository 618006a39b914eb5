package experiment

import (
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/proc"
)

// TestUseNeverNegative: a thread that ends between two readings takes its
// context switches and run-queue wait with it; the delta is then 0, not a
// negative count that a strict reader refuses (TestStage once wrote -19).
func TestUseNeverNegative(t *testing.T) {
	at := time.Now()
	a := sample{at: at, prober: &reading{u: proc.Usage{UserNs: 1e6, VolCtxSw: 100, InvolCtxSw: 50, RunqWaitNs: 9e6}, threads: 9}}
	b := sample{at: at.Add(time.Second), prober: &reading{u: proc.Usage{UserNs: 3e6, VolCtxSw: 90, InvolCtxSw: 31, RunqWaitNs: 1e6}, threads: 7}}
	u := useOf(a, b, 2)
	p := u.Prober
	if p.CPUNs != 2e6 || p.VolCtxSw != 0 || p.InvolCtxSw != 0 || p.RunqWaitNs != 0 || p.Threads != 7 || u.Server != nil || u.WindowNs != int64(time.Second) {
		t.Fatalf("%+v %+v", u, p)
	}
}

// spin runs n threads that spin until stop, each locked to its own OS
// thread, and returns once they have spun; release lets them end (a
// goroutine that ends locked ends its thread with it).
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

// TestUseThreadsThatEnd: run-queue waits are counted thread by thread. A
// process whose threads that waited long before the window end in it, while
// new ones wait as long within it, waited as long in the window: the sum
// over the threads alive at each reading says about nothing (or falls)
// there, and a floor at 0 hid the window's whole wait.
func TestUseThreadsThatEnd(t *testing.T) {
	n := 3 * runtime.NumCPU()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	old := spin(n, 300*time.Millisecond) // wait before the window
	s0 := sample{at: time.Now(), server: readProc(os.Getpid())}
	old()                                  // those threads end
	young := spin(n, 300*time.Millisecond) // new ones wait within it
	defer young()
	s1 := sample{at: time.Now(), server: readProc(os.Getpid())}
	u := useOf(s0, s1, runtime.NumCPU())
	// n threads on NumCPU cores for 300 ms: about 200 ms of waiting each.
	if w := time.Duration(u.Server.RunqWaitNs); w < 100*time.Millisecond {
		t.Fatalf("%d threads spinning on %d cores in the window waited %s in the run queue in all (the sums: %s then %s)",
			n, runtime.NumCPU(), w, time.Duration(s0.server.u.RunqWaitNs), time.Duration(s1.server.u.RunqWaitNs))
	}
}
