package loopwatchnbio_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/loopwatch"
	"github.com/bystander-kit/bystander/loopwatch/internal/wraptest"
	"github.com/bystander-kit/bystander/loopwatch/loopwatchnbio"
	"github.com/lesismal/nbio"
)

// lookupInventory is the blocking call a handler makes: it waits until
// the test lets it go.
func lookupInventory(release <-chan struct{}) { <-release }

// greet is slow work done as a connection opens.
func greet() { time.Sleep(30 * time.Millisecond) }

// shop is a user's nbio server, written without loopwatch: a line "ping
// ID" is answered "pong"; "block ID" waits in lookupInventory first. It
// notes each client's poller (nbio's rule: c.Hash() % NPoller), by the ID
// it gives, for the test to compare. (Not by its address: nbio writes it
// on the accepting goroutine, and hands the connection to its poller in
// a way the race detector does not see.)
type shop struct {
	mu       sync.Mutex
	release  chan struct{}
	pollerOf map[string]int // by client ID
	slowOpen atomic.Bool
}

func serve(t *testing.T, w *loopwatch.Watcher, pollers int) (*shop, string) {
	t.Helper()
	s := &shop{release: make(chan struct{}), pollerOf: map[string]int{}}
	g := loopwatchnbio.NewEngine(nbio.Config{Network: "tcp", Addrs: []string{"127.0.0.1:0"}, NPoller: pollers, LockPoller: true}, w)
	g.OnOpen(func(c *nbio.Conn) {
		if s.slowOpen.Load() {
			greet()
		}
	})
	g.OnData(func(c *nbio.Conn, data []byte) {
		// (One line a read here: the test sends one line at a time.)
		line, id, _ := strings.Cut(strings.TrimSpace(string(data)), " ")
		s.mu.Lock()
		s.pollerOf[id] = c.Hash() % pollers
		release := s.release
		s.mu.Unlock()
		if line == "block" {
			lookupInventory(release)
		}
		_, _ = c.Write([]byte("pong\n"))
	})
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Stop)
	return s, g.Addrs[0]
}

// client is one connection to the server, each line it sends tagged with
// its ID (the shop notes its poller by it).
type client struct{ *wraptest.Client }

func dial(t *testing.T, addr string) *client {
	t.Helper()
	return &client{wraptest.Dial(t, addr)}
}

func (k *client) send(line string) { k.Send(line + " " + k.ID) }

func (k *client) ask(t *testing.T, line string) {
	t.Helper()
	k.send(line)
	k.Answer(t)
}

// TestBlockingCallNamedOnItsPoller: an nbio server of 4 pollers on locked
// threads, adopting loopwatch by its engine alone, has a blocking call in
// its handler named with its file and line, on the Loop of the poller
// that owns the connection that made it, and on no other; a connection on
// another poller is answered meanwhile.
func TestBlockingCallNamedOnItsPoller(t *testing.T) {
	var eps wraptest.Episodes
	w := wraptest.Watcher(&eps)
	defer w.Stop()
	s, addr := serve(t, w, 4)
	var conns []*client
	for i := 0; i < 12; i++ {
		k := dial(t, addr)
		k.ask(t, "ping")
		conns = append(conns, k)
	}
	pollerOf := func(k *client) int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.pollerOf[k.ID]
	}
	n := 0
	for _, a := range conns[:2] {
		var other *client
		for _, k := range conns {
			if pollerOf(k) != pollerOf(a) {
				other = k
			}
		}
		if other == nil {
			t.Fatal("12 connections on one poller")
		}
		release := make(chan struct{})
		s.mu.Lock()
		s.release = release
		s.mu.Unlock()
		a.send("block")
		e := eps.Held(t, &n)
		other.ask(t, "ping") // its poller is not held
		close(release)
		a.Answer(t)
		c := e.Culprit()
		want := fmt.Sprintf("nbio-poller-%d", pollerOf(a))
		if e.Loop != want || !strings.HasSuffix(c.Function, ".lookupInventory") || !strings.HasSuffix(c.File, "loopwatchnbio_test.go") ||
			c.Line == 0 || e.State != "chan receive" || e.Cause != loopwatch.Blocked {
			t.Fatalf("episode %+v: want %s blocked, in chan receive at lookupInventory (loopwatchnbio_test.go:N)", e, want)
		}
	}
	for _, e := range eps.All() {
		named := strings.HasSuffix(e.Culprit().Function, ".lookupInventory")
		if !named && len(e.Frames) > 0 && (e.Cause == loopwatch.Blocked || e.Cause == loopwatch.Unknown) {
			t.Errorf("a loop was blamed elsewhere: %+v", e)
		}
	}
}

// TestOpenOnTheAcceptor: OnOpen, which nbio runs on the goroutine that
// accepted the connection, is watched on that listener's Loop.
func TestOpenOnTheAcceptor(t *testing.T) {
	var eps wraptest.Episodes
	w := wraptest.Watcher(&eps)
	defer w.Stop()
	s, addr := serve(t, w, 2)
	s.slowOpen.Store(true)
	k := dial(t, addr)
	n := 0
	e := eps.Held(t, &n)
	k.ask(t, "ping")
	if e.Loop != "nbio-acceptor-0" || !strings.HasSuffix(e.Culprit().Function, ".greet") {
		t.Fatalf("episode %+v: want nbio-acceptor-0 held at greet", e)
	}
}
