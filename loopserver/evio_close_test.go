package main

import (
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/evio"

	"github.com/bystander-kit/bystander/internal/wiretest"
)

// TestEvioClosesEachDescriptorOnce: evio v1.0.8 closed its listener's
// descriptor twice when it stopped (close(fd), then the *os.File holding
// the same number); in between, another goroutine of the process could be
// handed that number (an accept, a pipe, the kit's Dup of a pending
// /async connection) and the second close destroyed it under its owner:
// then evio's own poll panicked with "bad file descriptor" in CI. Here
// evio servers start and stop while holders keep taking the lowest free
// descriptors and checking that each is still theirs (the kit carries a
// patched copy of evio: third_party/evio).
func TestEvioClosesEachDescriptorOnce(t *testing.T) {
	var stolen atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Take the lowest free numbers, as an accept or a Dup would,
				// and check they are still ours a moment later.
				var p [2]int
				if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
					continue
				}
				var st [2]syscall.Stat_t
				_ = syscall.Fstat(p[0], &st[0])
				_ = syscall.Fstat(p[1], &st[1])
				lost := false
				for range 50 {
					for i, fd := range p {
						var now syscall.Stat_t
						if err := syscall.Fstat(fd, &now); err != nil || now.Ino != st[i].Ino || now.Dev != st[i].Dev {
							lost = true
						}
					}
				}
				if lost {
					stolen.Add(1)
					continue // not ours any more: closing it would close someone else's
				}
				syscall.Close(p[0])
				syscall.Close(p[1])
			}
		}()
	}
	for range 300 {
		var ev evio.Events
		ev.Tick = func() (time.Duration, evio.Action) { return 0, evio.Shutdown }
		done := make(chan error, 1)
		go func() { done <- evio.Serve(ev, "tcp://"+wiretest.FreeAddr(t)) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Log("an evio server did not stop within 5 s (its lost wake); going on")
		}
	}
	close(stop)
	wg.Wait()
	if n := stolen.Load(); n > 0 {
		t.Fatalf("%d descriptors were closed under their owner while evio servers stopped", n)
	}
}
