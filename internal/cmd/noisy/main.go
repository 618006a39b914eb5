// Command noisy is a noisy neighbour for the kit's tests and measurements:
// N processes that each run 2 ms and sleep 0.5 ms, forever, as a browser or
// an IDE does. Plain spinning loops barely disturb a latency-sensitive
// server (the scheduler favours threads that sleep); these do, because they
// sleep too and wake as often as the server's threads.
//
//	noisy [--procs N] [--for D]
//
// It ends its children and itself on SIGINT or SIGTERM, when its parent
// dies, or after --for (default: an hour, so no test leaves it behind).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

func main() {
	procs := flag.Int("procs", 1, "how many neighbours (processes)")
	dur := flag.Duration("for", time.Hour, "end after this long")
	child := flag.Bool("child", false, "be one neighbour (used by noisy itself)")
	flag.Parse()
	if *child {
		burn(*dur)
		return
	}
	if *procs < 1 || *procs > 256 || *dur <= 0 {
		fmt.Fprintln(os.Stderr, "noisy: --procs 1 to 256 and a positive --for")
		os.Exit(2)
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "noisy:", err)
		os.Exit(1)
	}
	var kids []*exec.Cmd
	for range *procs {
		c := exec.Command(self, "--child", "--for", dur.String())
		c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "noisy:", err)
			break
		}
		kids = append(kids, c)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-sig:
	case <-time.After(*dur):
	}
	for _, c := range kids {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
}

// burn runs 2 ms and sleeps 0.5 ms until d has passed, on one thread.
func burn(d time.Duration) {
	runtime.GOMAXPROCS(1)
	runtime.LockOSThread()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		t := time.Now()
		for time.Since(t) < 2*time.Millisecond {
		}
		time.Sleep(500 * time.Microsecond)
	}
}
