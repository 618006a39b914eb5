package main

import (
	"syscall"
	"testing"

	"github.com/bystander-kit/bystander/internal/wiretest"
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

// TestNbioWakeBeforeHeart: a job queued for a loop whose heart is not yet
// there to wake it (the monitor's first beat can come between the heart's
// open and its registration) is run at the next wake that can be made; the
// mailbox stayed marked "woken" and the loop got no job again, so a loop
// went without heartbeats for the server's life.
func TestNbioWakeBeforeHeart(t *testing.T) {
	s := newServer(options{loops: 1, log: &wiretest.Buffer{}})
	s.hearts.ports, s.hearts.byLoop = map[int]chan *loop{}, map[int]int{}
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
