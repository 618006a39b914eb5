package main

import (
	"context"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/evio"

	"github.com/bystander-kit/bystander/internal/serverflags"
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

// TestEvioStopsWhenStoppedAtStart: evio v1.0.8 waited for its first loop
// to stop on a sync.Cond with no condition (waitForShutdown): a loop that
// stopped before serve reached its Wait signalled nobody, and serve waited
// forever, holding every loop's epoll and eventfd descriptors and its
// listener. The loop server asks evio to stop from loop 0's ticker, so a
// server stopped while it starts (a failed run, Ctrl-C during a start) hit
// it whenever the ticker won the race: on a busy machine nearly every time.
// Here evio servers are stopped as they start, several at once; every one
// must let go of every descriptor it opened (the kit's patched copy of
// evio waits on a flag: third_party/evio).
func TestEvioStopsWhenStoppedAtStart(t *testing.T) {
	fds := func() int {
		es, _ := os.ReadDir("/proc/self/fd")
		return len(es)
	}
	// Beside noisy neighbours (processes that run 2 ms and sleep 0.5 ms):
	// a busy machine is where a starting server is preempted between its
	// loops' start and its wait, so the race shows there.
	wiretest.Noisy(t, wiretest.Build(t, "../internal/cmd/noisy"), 4, time.Minute)
	before := fds()
	var wg sync.WaitGroup
	var hung atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 { // 100 starts in all, each a chance for the race
				o := options{Common: serverflags.Defaults("127.0.0.1:0", ""), engine: "evio", loops: 16, blockWarn: time.Second,
					lagInterval: time.Millisecond, lockThreads: true}
				if err := o.validate(); err != nil {
					t.Error(err)
					return
				}
				log := &wiretest.Buffer{}
				o.log = log
				ctx, cancel := context.WithCancel(context.Background())
				h := hooks{started: func(*server) {
					// Stop as it starts, or a little after: the loops are
					// being started meanwhile.
					go func() { time.Sleep(time.Duration(i%5) * 200 * time.Microsecond); cancel() }()
				}}
				if err := runHooked(ctx, o, h, nil); err != nil {
					t.Error(err)
				}
				if strings.Contains(log.String(), "still blocked") {
					hung.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	// An engine that stopped closes what it opened; give a busy machine
	// time, but one that never stops never does.
	deadline := time.Now().Add(10 * time.Second)
	for fds() > before+8 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if after := fds(); after > before+8 {
		t.Errorf("%d descriptors open before, %d after 200 evio servers stopped as they started (%d not stopped within 0.9 s)", before, after, hung.Load())
	}
}
