// Command loopwatch-example is a small gnet server with a blocking call
// hidden in an innocent-looking helper, and the fix beside it: the story of
// the kit in one program, with loopwatch pointing at the line.
//
// Each line a client sends is an order; the server answers "ok <line>".
// Before it answers, it writes the order to an audit log: audit() looks
// harmless, but it takes the log's lock, which the log's flusher holds
// while the disk syncs (here a slow disk: --sync, 100 ms, every three
// times that). On an event
// loop that wait holds every connection of the loop. With --fixed, orders go
// to the log through a queue and the loop never waits.
//
//	go run ./examples/loopwatch --addr 127.0.0.1:9300            # then: nc 127.0.0.1 9300
//	go run ./examples/loopwatch --addr 127.0.0.1:9300 --fixed
//
// Its test (main_test.go) fails on the blocking version, naming audit, and
// passes on the fixed one: loopwatchtest at work. The server adopts
// loopwatch in one line, loopwatchgnet.Run: its handler marks nothing.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/bystander-kit/bystander/loopwatch"
	"github.com/bystander-kit/bystander/loopwatch/loopwatchgnet"
)

func main() {
	fs := flag.NewFlagSet("loopwatch-example", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:9300", "where to listen")
	fixed := fs.Bool("fixed", false, "write the audit log through a queue, off the loop")
	threshold := fs.Duration("threshold", 10*time.Millisecond, "report a callback that holds its loop this long")
	syncFor := fs.Duration("sync", 100*time.Millisecond, "how long the slow disk's sync holds the log's lock (every three times as long)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if *syncFor <= 0 || *syncFor > time.Minute {
		fmt.Fprintf(os.Stderr, "loopwatch-example: --sync %s: want a duration up to 1m\n", *syncFor)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	w := loopwatch.New(loopwatch.Options{Threshold: *threshold, Logger: slog.Default()})
	defer w.Stop()
	fmt.Printf("loopwatch-example: listening on %s (fixed: %v)\n", *addr, *fixed)
	if err := Serve(ctx, Config{Addr: *addr, Fixed: *fixed, Sync: *syncFor}, w, nil); err != nil {
		fmt.Fprintf(os.Stderr, "loopwatch-example: %v\n", err)
		os.Exit(1)
	}
}

// Config is what Serve serves.
type Config struct {
	Addr  string
	Fixed bool          // write the audit log through a queue
	Sync  time.Duration // the slow disk's sync, under the log's lock (100 ms when 0)
}

// Serve serves orders on cfg.Addr until ctx is done; ready, if not nil, is
// called once it listens.
func Serve(ctx context.Context, cfg Config, w *loopwatch.Watcher, ready func()) error {
	addr, fixed := cfg.Addr, cfg.Fixed
	if cfg.Sync <= 0 {
		cfg.Sync = 100 * time.Millisecond
	}
	log := newAuditLog(ctx, cfg.Sync)
	s := &server{log: log, fixed: fixed, ready: ready}
	if fixed {
		s.queue = make(chan []byte, 10000)
		go func() {
			for order := range s.queue {
				log.audit(order)
			}
		}()
		defer close(s.queue)
	}
	errc := make(chan error, 1)
	// loopwatchgnet watches every connection callback on its event loop:
	// the handler marks nothing. Each loop on a locked thread of its own:
	// loopwatch can then tell a loop whose thread did not get a CPU from a
	// blocking call.
	go func() {
		errc <- loopwatchgnet.Run(s, w, "tcp://"+addr, gnet.WithNumEventLoop(2), gnet.WithReuseAddr(true), gnet.WithLockOSThread(true))
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if e := s.engine(); e != nil {
		_ = e.Stop(sctx)
	}
	return <-errc
}

type server struct {
	gnet.BuiltinEventEngine
	log   *auditLog
	fixed bool
	queue chan []byte
	ready func()

	mu  sync.Mutex // guards eng
	eng *gnet.Engine
}

func (s *server) OnBoot(e gnet.Engine) gnet.Action {
	s.mu.Lock()
	s.eng = &e
	s.mu.Unlock()
	if s.ready != nil {
		s.ready()
	}
	return gnet.None
}

func (s *server) engine() *gnet.Engine {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.eng
}

// OnTraffic answers each whole line, after auditing it.
func (s *server) OnTraffic(c gnet.Conn) gnet.Action {
	buf, _ := c.Peek(-1)
	n := 0
	var out []byte
	for {
		i := bytes.IndexByte(buf[n:], '\n')
		if i < 0 {
			break
		}
		order := buf[n : n+i]
		n += i + 1
		if s.fixed {
			select {
			case s.queue <- bytes.Clone(order):
			default: // the log is behind: this order goes unaudited, the loop waits for nothing
			}
		} else {
			s.log.audit(order) // looks harmless
		}
		out = append(append(append(out, "ok "...), order...), '\n')
	}
	if n > 0 {
		_, _ = c.Discard(n)
		_, _ = c.Write(out)
	}
	return gnet.None
}

// auditLog is an append-only log on a slow disk: its flusher holds the
// lock while the disk syncs.
type auditLog struct {
	mu      sync.Mutex
	pending [][]byte
}

func newAuditLog(ctx context.Context, sync time.Duration) *auditLog {
	a := &auditLog{}
	go func() {
		t := time.NewTicker(3 * sync)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				a.mu.Lock()
				a.pending = a.pending[:0]
				time.Sleep(sync) // the sync of a slow disk, under the lock
				a.mu.Unlock()
			}
		}
	}()
	return a
}

// audit records an order.
func (a *auditLog) audit(order []byte) {
	a.mu.Lock()
	a.pending = append(a.pending, order)
	a.mu.Unlock()
}
