package experiment

import (
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
