// Command loopserver serves the kit's endpoint protocol (/fast /slow /async
// /offload) from a few event loops, the Netty shape: a blocking call on /slow
// holds its loop, and every connection that shares the loop waits with it.
//
//	loopserver --engine gnet --loops 4 --block 5ms --addr 127.0.0.1:8081
//
// It runs on gnet (default), evio or nbio, answers GET /stats on an admin
// listener apart from the loops, measures every loop's lag with a
// heartbeat (--lag-interval), and names each loop held past --block-warn,
// with the route that held it and where (loopwatch, on the loops' own
// threads).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/bystander-kit/bystander/internal/admin"
	"github.com/bystander-kit/bystander/internal/lag"
	"github.com/bystander-kit/bystander/internal/serverflags"
)

type options struct {
	serverflags.Common
	engine      string
	loops       int
	blockWarn   time.Duration
	stackEvery  time.Duration // the detector's least time between two stacks of a loop (0: lag's default, 1 s)
	lagInterval time.Duration
	lockThreads bool
	log         io.Writer
}

func main() { os.Exit(mainExit(os.Args[1:], os.Stdout, os.Stderr)) }

func mainExit(args []string, stdout, stderr io.Writer) int {
	return serverflags.Main(args, stderr, parseFlags, run, func(o options, addr, adminAddr net.Addr) {
		o.Announce(stdout, stderr, "loopserver", fmt.Sprintf("engine %s, %d loops", o.engine, o.loops), addr, adminAddr, "loop", o.loops)
	})
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	o := options{Common: serverflags.Defaults("127.0.0.1:8081", "127.0.0.1:9081"), log: stderr}
	err := serverflags.Parse("loopserver", "Serves /fast /slow /async /offload from event loops (docs/protocol.md).", &o.Common, args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&o.engine, "engine", "gnet", "event-loop library: gnet, evio or nbio")
		fs.IntVar(&o.loops, "loops", 4, "number of event loops")
		fs.DurationVar(&o.blockWarn, "block-warn", time.Millisecond, "blocked-loop detector (loopwatch): a request that holds its loop longer than this is a block, counted per loop and route on /stats and /metrics, with where it held (a stack a second per loop at most) and logged (a line a second per loop at most); a hold that was the loop's thread waiting for a CPU, or its goroutine back from a system call waiting for a Go P, is counted apart, not as a block; 0 disables")
		fs.DurationVar(&o.lagInterval, "lag-interval", time.Millisecond, "hand every loop a heartbeat this often and measure its lag (when it ran less when it was handed over; /stats and the /lag stream); 0 disables")
		fs.BoolVar(&o.lockThreads, "lock-threads", true, "lock each loop goroutine to its own OS thread, as Netty runs a loop per thread (--lock-threads=false: about 5% less CPU per /fast request, a little further from the /slow ceiling; docs/measurements.md)")
	})
	if err != nil {
		return o, err
	}
	return o, o.validate()
}

func (o *options) validate() error {
	switch {
	case engineOf[o.engine] == nil:
		return fmt.Errorf("loopserver: --engine %q: want gnet, evio or nbio", o.engine)
	case o.loops < 1 || o.loops > 256:
		return fmt.Errorf("loopserver: --loops %d: want 1 to 256", o.loops)
	case o.blockWarn < 0 || o.blockWarn > time.Hour:
		return fmt.Errorf("loopserver: --block-warn %s: want 0 (off) or a duration up to 1h", o.blockWarn)
	case o.lagInterval != 0 && (o.lagInterval < 100*time.Microsecond || o.lagInterval > time.Second):
		return fmt.Errorf("loopserver: --lag-interval %s: want 0 (off) or 100us to 1s", o.lagInterval)
	}
	return o.Common.Validate("loopserver")
}

// run serves until ctx is done. ready gets the bound addresses.
func run(ctx context.Context, o options, ready func(addr, admin net.Addr)) error {
	return runHooked(ctx, o, hooks{}, ready)
}

// runHooked is run with the tests' hooks.
func runHooked(ctx context.Context, o options, h hooks, ready func(addr, admin net.Addr)) error {
	if o.log == nil {
		o.log = io.Discard
	}
	// Bind the address once first: engines report a taken port in their own
	// words, and this gives one clear line instead.
	if err := serverflags.CheckFree("loopserver", o.Addr); err != nil {
		return err
	}
	if err := o.OpenDB(ctx, "loopserver"); err != nil {
		return err
	}
	defer o.CloseDB()
	eng := engineOf[o.engine]()
	s := newServer(o, eng.traits(), h)
	if h.started != nil {
		h.started(s)
	}
	defer s.pool.Close()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var adminAddr net.Addr = &net.TCPAddr{}
	adminDone := make(chan error, 1)
	if o.Admin != "" {
		ln, err := admin.Listen(o.Admin)
		if err != nil {
			return fmt.Errorf("loopserver: admin listener %s: %w", o.Admin, err)
		}
		adminAddr = ln.Addr()
		go func() {
			adminDone <- admin.Serve(ctx, ln, func() any { return s.stats() }, admin.Route{Pattern: "GET /lag", Handler: lag.Handler(s.mon)}, admin.Metrics(s.collectors()...))
		}()
	} else {
		adminDone <- nil
	}

	stopWatch := make(chan struct{})
	watching := make(chan struct{})
	defer func() { close(stopWatch); <-watching; s.mon.Stop() }()
	go func() { s.mon.Run(stopWatch); close(watching) }()
	go s.sweep(stopWatch)
	defer s.closeHearts()

	served := make(chan error, 1)
	go func() {
		served <- eng.serve(ctx, s, o.Addr, func(a net.Addr) {
			// The engine calls this from its own start: the hearts are
			// opened once it runs, and the server says it listens after.
			go func() {
				if err := s.openHearts(a); err != nil {
					fmt.Fprintf(o.log, "loopserver: %v; running without loop lag where missing\n", err)
				}
				if ready != nil {
					ready(a, adminAddr)
				}
			}()
		})
	}()
	var err error
	select {
	case err = <-served:
		s.stop() // it stopped by itself: its descriptors are closed
		if err == nil && ctx.Err() == nil {
			err = errors.New("the engine stopped by itself") // never exit 0 for that
		}
		cancel()
	case <-ctx.Done():
		s.stop()
		// Engines stop within a loop turn; a loop held by a long block is
		// not waited for past a second.
		select {
		case err = <-served:
		case <-time.After(900 * time.Millisecond):
			fmt.Fprintln(o.log, "loopserver: a loop is still blocked; stopping without it")
		}
	}
	if err != nil {
		return fmt.Errorf("loopserver: %s engine on %s: %w", o.engine, o.Addr, err)
	}
	return <-adminDone
}
