package loopwatchgnet_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/loopwatch"
	"github.com/bystander-kit/bystander/loopwatch/internal/wraptest"
	"github.com/bystander-kit/bystander/loopwatch/loopwatchgnet"
	"github.com/panjf2000/gnet/v2"
)

// lookupInventory is the blocking call a handler makes: it waits until
// the test lets it go.
func lookupInventory(release <-chan struct{}) { <-release }

// shop is a user's gnet handler, written without loopwatch: a line
// "ping" is answered "pong"; "block" waits in lookupInventory first. It
// notes each connection's event loop, by the client's address, for the
// test to compare.
type shop struct {
	gnet.BuiltinEventEngine
	release chan struct{}
	mu      sync.Mutex
	eng     gnet.Engine
	booted  chan struct{}
	loopOf  map[string]gnet.EventLoop
}

func (s *shop) OnBoot(e gnet.Engine) gnet.Action {
	s.mu.Lock()
	s.eng = e
	s.mu.Unlock()
	time.Sleep(30 * time.Millisecond) // slow, but not on a loop: not watched
	close(s.booted)
	return gnet.None
}

func (s *shop) OnTraffic(c gnet.Conn) gnet.Action {
	buf, _ := c.Peek(-1)
	i := strings.IndexByte(string(buf), '\n')
	if i < 0 {
		return gnet.None
	}
	line := string(buf[:i])
	_, _ = c.Discard(i + 1)
	s.mu.Lock()
	s.loopOf[c.RemoteAddr().String()] = c.EventLoop()
	release := s.release
	s.mu.Unlock()
	if line == "block" {
		lookupInventory(release)
	}
	_, _ = c.Write([]byte("pong\n"))
	return gnet.None
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestBlockingCallNamedOnItsLoop: a gnet server of 4 event loops on
// locked threads, adopting loopwatch by Run alone, has a blocking call in
// its handler named with its file and line, on the loop of the connection
// that made it and on no other: a second connection's block on the same
// event loop is named on the same Loop, a third's on another loop on
// another Loop, and no other loop is reported held. A connection on
// another loop is answered while the first is held.
func TestBlockingCallNamedOnItsLoop(t *testing.T) {
	var eps wraptest.Episodes
	w := wraptest.Watcher(&eps)
	defer w.Stop()
	s := &shop{booted: make(chan struct{}), loopOf: map[string]gnet.EventLoop{}, release: make(chan struct{})}
	addr := freeAddr(t)
	served := make(chan error, 1)
	go func() {
		served <- loopwatchgnet.Run(s, w, "tcp://"+addr, gnet.WithNumEventLoop(4), gnet.WithReuseAddr(true), gnet.WithLockOSThread(true))
	}()
	select {
	case <-s.booted:
	case err := <-served:
		t.Fatal(err)
	}
	defer func() {
		s.mu.Lock()
		eng := s.eng
		s.mu.Unlock()
		_ = eng.Stop(context.Background())
		<-served
	}()
	// 12 connections, each asked once: the event loop of each is known.
	var conns []*wraptest.Client
	for i := 0; i < 12; i++ {
		k := wraptest.Dial(t, addr)
		k.Send("ping")
		k.Answer(t)
		conns = append(conns, k)
	}
	loopOf := func(k *wraptest.Client) gnet.EventLoop {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.loopOf[k.LocalAddr()]
	}
	a := conns[0]
	var same, other *wraptest.Client
	for _, k := range conns[1:] {
		if loopOf(k) == loopOf(a) && same == nil {
			same = k
		}
		if loopOf(k) != loopOf(a) && other == nil {
			other = k
		}
	}
	if same == nil || other == nil {
		t.Fatalf("12 connections on %d event loops: want two on one, and one on another", len(conns))
	}
	n := 0
	block := func(k *wraptest.Client, meanwhile func()) loopwatch.Episode {
		t.Helper()
		release := make(chan struct{})
		s.mu.Lock()
		s.release = release
		s.mu.Unlock()
		k.Send("block")
		e := eps.Held(t, &n)
		if meanwhile != nil {
			meanwhile()
		}
		close(release)
		k.Answer(t)
		c := e.Culprit()
		if !strings.HasSuffix(c.Function, ".lookupInventory") || !strings.HasSuffix(c.File, "loopwatchgnet_test.go") || c.Line == 0 ||
			e.State != "chan receive" || e.Cause != loopwatch.Blocked {
			t.Fatalf("episode %+v: want blocked, in chan receive at lookupInventory (loopwatchgnet_test.go:N)", e)
		}
		return e
	}
	first := block(a, func() { // a connection on another loop is served meanwhile
		other.Send("ping")
		other.Answer(t)
	})
	if again := block(same, nil); again.Loop != first.Loop {
		t.Errorf("a block on the same event loop was named on %s, the first on %s", again.Loop, first.Loop)
	}
	elsewhere := block(other, nil)
	if elsewhere.Loop == first.Loop {
		t.Errorf("a block on another event loop was named on %s too", elsewhere.Loop)
	}
	// Every report that names lookupInventory is on the loop of the
	// connection blocked then; and nothing else was blamed with a stack
	// (a hold let go before its stack has none: not blamed).
	for _, e := range eps.All() {
		named := strings.HasSuffix(e.Culprit().Function, ".lookupInventory")
		switch {
		case named && e.Loop != first.Loop && e.Loop != elsewhere.Loop:
			t.Errorf("the blocking call named on %s, not a blocked connection's loop: %+v", e.Loop, e)
		case !named && len(e.Frames) > 0 && (e.Cause == loopwatch.Blocked || e.Cause == loopwatch.Unknown):
			t.Errorf("a loop was blamed elsewhere: %+v", e)
		case strings.Contains(fmt.Sprint(e.Frames), "OnBoot"):
			t.Errorf("OnBoot was watched: %+v", e)
		}
	}
}

// tickWork is slow work done in OnTick.
func tickWork() { time.Sleep(30 * time.Millisecond) }

type ticking struct {
	shop
	ticks atomic.Int64
}

func (s *ticking) OnTick() (time.Duration, gnet.Action) {
	if s.ticks.Add(1) >= 2 { // the first tick comes as the engine starts
		tickWork()
	}
	return 10 * time.Millisecond, gnet.None
}

// TestTickOnALoopOfItsOwn: OnTick, which gnet runs on a ticker goroutine,
// is watched on a Loop of its own ("gnet-tick"); OnBoot, 30 ms long, is
// not watched at all.
func TestTickOnALoopOfItsOwn(t *testing.T) {
	var eps wraptest.Episodes
	w := wraptest.Watcher(&eps)
	defer w.Stop()
	s := &ticking{shop: shop{booted: make(chan struct{}), loopOf: map[string]gnet.EventLoop{}, release: make(chan struct{})}}
	addr := freeAddr(t)
	served := make(chan error, 1)
	go func() {
		served <- loopwatchgnet.Run(s, w, "tcp://"+addr, gnet.WithNumEventLoop(2), gnet.WithReuseAddr(true), gnet.WithTicker(true))
	}()
	select {
	case <-s.booted:
	case err := <-served:
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); s.ticks.Load() < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d ticks in 10 s", s.ticks.Load())
		}
	}
	n := 0
	e := eps.Held(t, &n)
	s.mu.Lock()
	eng := s.eng
	s.mu.Unlock()
	_ = eng.Stop(context.Background())
	<-served
	if e.Loop != "gnet-tick" || !strings.HasSuffix(e.Culprit().Function, ".tickWork") {
		t.Fatalf("episode %+v: want gnet-tick held at tickWork", e)
	}
	for _, e := range eps.All() {
		if strings.Contains(fmt.Sprint(e.Frames), "OnBoot") {
			t.Errorf("OnBoot was watched: %+v", e)
		}
	}
}
