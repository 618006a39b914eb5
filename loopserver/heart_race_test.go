package main

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/serverflags"
)

// TestStopWhileOpeningHearts: a server stopped while it is still opening
// its loops' heartbeat connections (openHearts runs beside the engine)
// closes every heart it opened and races with nothing (run under -race:
// the list of hearts was appended to and read from two goroutines), and
// leaves no descriptor behind.
func TestStopWhileOpeningHearts(t *testing.T) {
	fds := func() int {
		es, _ := os.ReadDir("/proc/self/fd")
		return len(es)
	}
	for _, engine := range []string{"gnet", "evio"} {
		t.Run(engine, func(t *testing.T) {
			before := fds()
			for i := range 20 {
				o := options{Common: serverflags.Defaults("127.0.0.1:0", ""), engine: engine, loops: 16, blockWarn: time.Millisecond,
					lagInterval: time.Millisecond, lockThreads: true}
				o.OffloadWorkers = 4
				if err := o.validate(); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				h := hooks{started: func(*server) {
					// Stop a little after the engine starts: the hearts are
					// being opened one after another meanwhile.
					go func() { time.Sleep(time.Duration(i%5) * 200 * time.Microsecond); cancel() }()
				}}
				done := make(chan error, 1)
				go func() { done <- runHooked(ctx, o, h, func(net.Addr, net.Addr) {}) }()
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("the server did not stop within 10 s")
				}
				cancel()
			}
			// The engines' and the runtime's own descriptors come and go;
			// 16 hearts a server, 20 servers, would show. An engine that
			// took longer to stop than the server waits for it (a busy
			// machine) closes its own a little later: wait for that.
			deadline := time.Now().Add(10 * time.Second)
			for fds() > before+8 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if after := fds(); after > before+8 {
				t.Errorf("%d descriptors open before, %d after 20 servers stopped while opening their hearts", before, after)
			}
		})
	}
}
