package main

import (
	"net"
	"syscall"
	"testing"

	"github.com/bystander-kit/bystander/internal/wiretest"
	"github.com/lesismal/nbio"
)

// TestNbioUnsentField: the engine reads nbio's unsent bytes from an
// unexported field of its connection (nbio v1.6.8 is pinned); if nbio
// moves it, this fails rather than the bound on waiting output silently
// doing nothing.
func TestNbioUnsentField(t *testing.T) {
	if nbioLeft == nil {
		t.Fatal("nbio.Conn has no int field left: the engine cannot tell how much output waits")
	}
}

// TestNbioEpollField: the engine takes a kept connection out of its
// poller's epoll set through nbio's unexported poller field (traits.keepsClosedFDs); if
// nbio moves it, this fails rather than closed descriptors' events
// silently closing new connections again (TestReusedDescriptor).
func TestNbioEpollField(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	g := nbio.NewEngine(nbio.Config{NPoller: 1})
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	defer g.Stop()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	nc, err := g.AddConn(c)
	if err != nil {
		t.Fatal(err)
	}
	ep := nbioEpfd(nc)
	if ep < 0 {
		t.Fatal("nbio.Conn has no poller with an int field epfd: kept connections cannot be taken out of its set")
	}
	if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_DEL, nc.Hash(), nil); err != nil {
		t.Fatalf("epfd %d is not the epoll set holding the connection: %v", ep, err)
	}
}

// TestNbioWakeBeforeHeart: a job queued for a loop whose heart is not yet
// there to wake it (the monitor's first beat can come between the heart's
// open and its registration) is run at the next wake that can be made; the
// mailbox stayed marked "woken" and the loop got no job again, so a loop
// went without heartbeats for the server's life.
func TestNbioWakeBeforeHeart(t *testing.T) {
	s := newServer(options{loops: 1, log: &wiretest.Buffer{}}, traits{}, hooks{})
	s.hearts.ports, s.hearts.byLoop = map[int]chan *conn{}, map[int]int{}
	e := &nbioEngine{s: s, boxes: make([]mailbox, 1)}
	ran := 0
	e.queue(0, func() { ran++ }) // no heart: the wake cannot be made
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(p[0])
	defer syscall.Close(p[1])
	s.hearts.byLoop[0] = p[1]
	e.queue(0, func() { ran++ })
	var b [8]byte
	if n, _ := syscall.Read(p[0], b[:]); n != 1 {
		t.Fatalf("the second job did not wake the loop (%d bytes on the heart)", n)
	}
	e.runQueue(s.loops.at(0))
	if ran != 2 {
		t.Fatalf("%d of 2 jobs ran", ran)
	}
}

// TestBoundBeforeReady: by the time the server says it listens, every loop
// has run (on nbio a loop learns its goroutine, and the detector opens its
// thread's files, at its first data): nothing opens a descriptor later,
// while clients are dealt to loops by their descriptor's number.
func TestBoundBeforeReady(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			var srv *server
			startHooked(t, eng, hooks{started: func(s *server) { srv = s }}, nil)
			for _, l := range srv.loops.all() {
				if l.gid.Load() == 0 {
					t.Errorf("loop %d has not run when the server said it listens", l.index)
				}
			}
			if n := len(srv.loops.all()); n != 4 {
				t.Errorf("%d loops", n)
			}
		})
	}
}
