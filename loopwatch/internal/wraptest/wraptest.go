// Package wraptest is what the tests of loopwatch's wrappers for other
// event-loop libraries (loopwatchgnet, loopwatchnbio: modules of their own,
// which already require loopwatch) share: a watcher whose reports are
// collected, and a client of a line protocol answered "pong". It is
// internal: no part of loopwatch's API, and it requires nothing more.
package wraptest

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/loopwatch"
)

// Episodes collects a watcher's reports.
type Episodes struct {
	mu  sync.Mutex
	got []loopwatch.Episode
}

// Add is a watcher's OnEpisode.
func (e *Episodes) Add(ep loopwatch.Episode) { e.mu.Lock(); e.got = append(e.got, ep); e.mu.Unlock() }

// Held waits for the next report of a loop held (not ended) after the
// first *n reports, 10 s at most.
func (e *Episodes) Held(t testing.TB, n *int) loopwatch.Episode {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		e.mu.Lock()
		for ; *n < len(e.got); *n++ {
			if ep := e.got[*n]; !ep.Ended {
				e.mu.Unlock()
				*n++
				return ep
			}
		}
		e.mu.Unlock()
	}
	t.Fatal("no loop reported held within 10 s")
	return loopwatch.Episode{}
}

// Watcher is a watcher of a 5 ms threshold that takes a stack for every
// episode and reports each to eps, logging nothing.
func Watcher(eps *Episodes) *loopwatch.Watcher {
	return loopwatch.New(loopwatch.Options{Threshold: 5 * time.Millisecond, StackEvery: time.Nanosecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), OnEpisode: eps.Add})
}

// Client is one connection to the server; ID is its own, a number.
type Client struct {
	ID string
	c  net.Conn
	r  *bufio.Reader
}

var clients atomic.Int64

// Dial connects to addr, closed when t ends.
func Dial(t testing.TB, addr string) *Client {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &Client{ID: fmt.Sprint(clients.Add(1)), c: c, r: bufio.NewReader(c)}
}

// Send writes line and a newline.
func (k *Client) Send(line string) { fmt.Fprintf(k.c, "%s\n", line) }

// Answer reads the next answer, failing t unless it is "pong".
func (k *Client) Answer(t testing.TB) {
	t.Helper()
	_ = k.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if s, err := k.r.ReadString('\n'); err != nil || s != "pong\n" {
		t.Fatalf("answer %q, %v", s, err)
	}
}

// All is every report so far.
func (e *Episodes) All() []loopwatch.Episode {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]loopwatch.Episode(nil), e.got...)
}

// LocalAddr is the client's end of the connection, host:port.
func (k *Client) LocalAddr() string { return k.c.LocalAddr().String() }
