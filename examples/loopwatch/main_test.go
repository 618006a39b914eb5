package main

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/loopwatch"
	"github.com/bystander-kit/bystander/loopwatch/loopwatchtest"
)

// recorder is a test whose failures are kept, to be looked at.
type recorder struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (r *recorder) Helper()                   {}
func (r *recorder) Cleanup(f func())          { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(f string, a ...any) { r.errs = append(r.errs, fmt.Sprintf(f, a...)) }
func (r *recorder) end() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// orders serves the example (fixed or not) under w and sends orders on one
// connection, 5 ms apart, until until says so or 10 s pass; every order is
// answered.
func orders(t *testing.T, fixed bool, w *loopwatch.Watcher, until func() bool) {
	t.Helper()
	ordersWith(t, Config{Fixed: fixed}, w, 5*time.Millisecond, until)
}

// ordersWith is orders with the example's cfg, and pause between an
// answer and the next order.
func ordersWith(t *testing.T, cfg Config, w *loopwatch.Watcher, pause time.Duration, until func() bool) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	served := make(chan error, 1)
	cfg.Addr = addr
	go func() { served <- Serve(ctx, cfg, w, func() { close(ready) }) }()
	defer func() {
		cancel()
		<-served
	}()
	select {
	case <-ready:
	case err := <-served:
		t.Fatal(err)
	}
	var c net.Conn
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, err = net.Dial("tcp", addr); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	for i, deadline := 0, time.Now().Add(10*time.Second); !until() && time.Now().Before(deadline); i++ {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "order %d\n", i)
		line, err := r.ReadString('\n')
		if err != nil || line != fmt.Sprintf("ok order %d\n", i) {
			t.Fatalf("order %d: %q %v", i, line, err)
		}
		time.Sleep(pause)
	}
}

// TestBlockingAuditFails: loopwatchtest fails the blocking version, and
// the failure names the innocent-looking helper.
func TestBlockingAuditFails(t *testing.T) {
	r := &recorder{}
	w := loopwatchtest.New(r, 20*time.Millisecond)
	start := time.Now() // five of the log's syncs: each holds an order's callback up to 100 ms
	orders(t, false, w, func() bool { return time.Since(start) > 1500*time.Millisecond })
	r.end()
	named := false
	for _, e := range r.errs {
		named = named || strings.Contains(e, "(*auditLog).audit") && strings.Contains(e, "main.go:")
	}
	if !named {
		t.Fatalf("the test's failures %q do not name audit with its file:line", r.errs)
	}
}

// TestFixedAuditPasses: with the log written through a queue, no episode
// names audit over 2 s of orders. (A callback whose thread got no CPU on a
// busy machine can still be reported; it is not audit's doing.)
func TestFixedAuditPasses(t *testing.T) {
	var held []loopwatch.Episode
	w := loopwatch.New(loopwatch.Options{Threshold: 20 * time.Millisecond, Logger: quietLog(),
		OnEpisode: func(e loopwatch.Episode) { held = append(held, e) }})
	start := time.Now()
	orders(t, true, w, func() bool { return time.Since(start) > 2*time.Second })
	w.Stop()
	for _, e := range held {
		for _, f := range e.Frames {
			if strings.Contains(f.Function, "(*auditLog).audit") {
				t.Fatalf("the fixed version held its loop in audit: %s", loopwatchtest.Describe(e))
			}
		}
	}
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestAuditNamedAtEveryLength: at a 1 ms threshold, a sync of 2, 5, 20
// or 100 ms under the log's lock is reported while it holds a loop, as a
// wait on a mutex in audit, with its file and line.
func TestAuditNamedAtEveryLength(t *testing.T) {
	for _, d := range []time.Duration{2 * time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond, 100 * time.Millisecond} {
		t.Run(d.String(), func(t *testing.T) {
			var mu sync.Mutex
			var named *loopwatch.Episode
			var seen []string
			w := loopwatch.New(loopwatch.Options{Threshold: time.Millisecond, StackEvery: time.Nanosecond, Logger: quietLog(),
				OnEpisode: func(e loopwatch.Episode) {
					mu.Lock()
					defer mu.Unlock()
					c := e.Culprit()
					if named == nil && e.Cause == loopwatch.Blocked && strings.HasSuffix(c.Function, "(*auditLog).audit") &&
						strings.HasSuffix(c.File, "examples/loopwatch/main.go") && c.Line > 0 && e.State == "sync.Mutex.Lock" {
						named = &e
					}
					if len(seen) < 5 {
						seen = append(seen, loopwatchtest.Describe(e))
					}
				}})
			defer w.Stop()
			found := func() bool { mu.Lock(); defer mu.Unlock(); return named != nil }
			// An order now and then meets a sync: orders until one is named.
			// Sent back to back, an order is waiting for the lock from
			// about when a sync takes it: the loop is held for nearly
			// the whole sync, not a random part of it.
			ordersWith(t, Config{Sync: d}, w, 0, found)
			if !found() {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("no episode named audit waiting on its lock within 10 s; the first seen: %q", seen)
			}
		})
	}
}
