package offload

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// The pool runs at most its workers at once, queues up to its queue, and
// refuses past that without blocking.
func TestBounds(t *testing.T) {
	p := New(2, 3)
	release := make(chan struct{})
	var running, peak atomic.Int32
	var wg sync.WaitGroup
	job := func() {
		defer wg.Done()
		n := running.Add(1)
		for {
			old := peak.Load()
			if n <= old || peak.CompareAndSwap(old, n) {
				break
			}
		}
		<-release
		running.Add(-1)
	}
	accepted := 0
	for range 10 {
		wg.Add(1)
		if err := p.Submit(job); err != nil {
			wg.Done()
			if !errors.Is(err, ErrFull) {
				t.Fatal(err)
			}
			continue
		}
		accepted++
	}
	// 2 taken by workers (maybe not yet), 3 queued: at least 3, at most 5.
	if accepted < 3 || accepted > 5 {
		t.Fatalf("accepted %d of 10 with 2 workers and a queue of 3", accepted)
	}
	close(release)
	wg.Wait()
	if peak.Load() > 2 {
		t.Fatalf("%d jobs ran at once on 2 workers", peak.Load())
	}
	p.Close()
	p.Wait()
	if err := p.Submit(func() {}); !errors.Is(err, ErrClosed) {
		t.Fatalf("submit after close: %v", err)
	}
}
