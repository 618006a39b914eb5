package main

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bystander-kit/bystander/internal/lag"
	"golang.org/x/sys/unix"
)

// The loops' heartbeats ride on connections the server opens to itself,
// one per loop, before it says it is listening: every engine deals the
// first n connections one to each loop (gnet and nbio round-robin, evio
// least connections), and none offers another way onto a chosen loop
// (gnet's EventLoop.Execute needs a connection's loop, evio has only a
// connection's Wake, nbio none). A heart never sends; its loop only gets
// the beats (and, on nbio, the jobs handed to it).

// hearts is the state of opening them: the local port of each heart being
// dialled, so the engine's open callback knows it from a client's.
type hearts struct {
	pending atomic.Int32 // hearts dialled and not yet opened
	mu      sync.Mutex   // guards ports, fds and closed
	ports   map[int]chan *conn
	fds     []int // the client ends, closed when the server stops
	closed  bool  // the server stopped: a heart dialled now is closed at once
	// byLoop is each loop's heart's client end, by loop index: writing a
	// byte to it wakes the loop (nbio's continuations ride on it).
	byLoop map[int]int
}

// wake writes a byte to loop index's heart, which wakes that loop; false
// when it has none (or the server stopped).
func (s *server) wake(index int) bool {
	s.hearts.mu.Lock()
	defer s.hearts.mu.Unlock()
	fd, ok := s.hearts.byLoop[index]
	if !ok || s.hearts.closed {
		return false
	}
	_, err := unix.Write(fd, []byte{1})
	return err == nil
}

// openHearts opens one heart per loop on the listener at addr, one after
// another, each once the last is open. It returns an error when a loop got
// none (the server then runs without heartbeats on that loop). Without
// heartbeats (--lag-interval 0) it opens none, unless the engine's jobs
// ride on them.
func (s *server) openHearts(addr net.Addr) error {
	if s.opts.lagInterval <= 0 && !s.traits.jobsRideHearts {
		return nil
	}
	to, ok := addr.(*net.TCPAddr)
	if !ok {
		return fmt.Errorf("heartbeat: listener address %v is not TCP", addr)
	}
	// A heart dealt to a loop that has one already (nbio deals by
	// descriptor number, which a descriptor opened meanwhile moves) is
	// closed and another dialled, a few times at most.
	for i, tries := 0, 0; i < s.opts.loops; tries++ {
		if tries == 4*s.opts.loops {
			return fmt.Errorf("heartbeat: %d connections dialled, %d of %d loops got one", tries, i, s.opts.loops)
		}
		fd, ch, err := s.dialHeart(to)
		if err != nil {
			return fmt.Errorf("heartbeat: connection %d of %d: %w", i+1, s.opts.loops, err)
		}
		// openHearts runs beside the engine: the server may have stopped,
		// and closed the hearts so far, meanwhile.
		s.hearts.mu.Lock()
		closed := s.hearts.closed
		if !closed {
			s.hearts.fds = append(s.hearts.fds, fd)
		}
		s.hearts.mu.Unlock()
		if closed {
			unix.Close(fd)
			return nil // stopping: no heartbeat is missing from a server that is gone
		}
		select {
		case c := <-ch:
			s.hearts.mu.Lock()
			took := c.loop.heart.Load() == c
			switch {
			case s.hearts.closed: // closeHearts closed fd with the rest
			case took:
				s.hearts.byLoop[c.loop.index] = fd
			default: // its loop has one: let it go (fd was appended last)
				s.hearts.fds = s.hearts.fds[:len(s.hearts.fds)-1]
				unix.Close(fd)
			}
			s.hearts.mu.Unlock()
			if took {
				i++
			}
		case <-time.After(5 * time.Second):
			return fmt.Errorf("heartbeat: connection %d of %d was not opened by the engine within 5s", i+1, s.opts.loops)
		}
	}
	s.bindAll()
	return nil
}

// bindAll has every loop run once before the server says it listens: a
// loop that learns its goroutine only at its first data (nbio) opens its
// thread's files for the detector then, and a descriptor opened while
// clients connect would move the next ones to other loops (nbio deals a
// connection by its descriptor's number). Each unbound loop's heart is
// woken; it waits a second at most.
func (s *server) bindAll() {
	deadline := time.Now().Add(time.Second)
	for {
		unbound := 0
		for _, l := range s.loops.all() {
			if l.gid.Load() == 0 {
				unbound++
				s.wake(l.index)
			}
		}
		if unbound == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// dialHeart binds a loopback socket first, so that its port is known (and
// registered) before the engine can see the connection, then connects.
func (s *server) dialHeart(to *net.TCPAddr) (int, chan *conn, error) {
	family, local, remote := unix.AF_INET, unix.Sockaddr(&unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}), unix.Sockaddr(&unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: to.Port})
	if to.IP.To4() == nil && !to.IP.IsUnspecified() {
		family, local, remote = unix.AF_INET6, &unix.SockaddrInet6{Addr: [16]byte{15: 1}}, &unix.SockaddrInet6{Addr: [16]byte{15: 1}, Port: to.Port}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, nil, err
	}
	fail := func(err error) (int, chan *conn, error) { unix.Close(fd); return -1, nil, err }
	if err := unix.Bind(fd, local); err != nil {
		return fail(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return fail(err)
	}
	port := 0
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		port = a.Port
	case *unix.SockaddrInet6:
		port = a.Port
	}
	ch := make(chan *conn, 1)
	s.hearts.mu.Lock()
	s.hearts.ports[port] = ch
	s.hearts.mu.Unlock()
	s.hearts.pending.Add(1)
	if err := unix.Connect(fd, remote); err != nil {
		s.hearts.mu.Lock()
		delete(s.hearts.ports, port)
		s.hearts.mu.Unlock()
		s.hearts.pending.Add(-1)
		return fail(err)
	}
	return fd, ch, nil
}

// isHeart says whether remote is a heart being dialled.
func (s *server) isHeart(remote net.Addr) bool {
	a, ok := remote.(*net.TCPAddr)
	if !ok || s.hearts.pending.Load() == 0 {
		return false
	}
	s.hearts.mu.Lock()
	defer s.hearts.mu.Unlock()
	return s.hearts.ports[a.Port] != nil
}

// openedHeart returns the heart that remote is, registered on loop l (nil:
// the calling loop), or nil when remote is a client.
func (s *server) openedHeart(remote net.Addr, lk link, l *loop) *conn {
	if s.hearts.pending.Load() == 0 {
		return nil
	}
	a, ok := remote.(*net.TCPAddr)
	if !ok || !a.IP.IsLoopback() {
		return nil
	}
	s.hearts.mu.Lock()
	ch := s.hearts.ports[a.Port]
	delete(s.hearts.ports, a.Port)
	s.hearts.mu.Unlock()
	if ch == nil {
		return nil
	}
	s.hearts.pending.Add(-1)
	if l == nil {
		l = s.loops.register()
	}
	c := &conn{loop: l, heart: true, link: lk}
	l.heart.CompareAndSwap(nil, c) // not when l has one: openHearts then lets it go
	ch <- c
	return c
}

// closedHeart: the engine closed a heart (only the server's stop should).
func (s *server) closedHeart(c *conn) {
	c.closed = true
	if c.loop.heart.CompareAndSwap(c, nil) && !s.stopping.Load() {
		fmt.Fprintf(s.log, "loopserver: loop %d lost its heartbeat connection: its lag is no longer measured\n", c.loop.index)
	}
}

// closeHearts closes the hearts' client ends, and any opened after.
func (s *server) closeHearts() {
	s.hearts.mu.Lock()
	defer s.hearts.mu.Unlock()
	for _, fd := range s.hearts.fds {
		unix.Close(fd)
	}
	s.hearts.fds, s.hearts.closed = nil, true
}

// poke hands l its heartbeat through its heart (again: the one it was
// handed is still waiting); false when it has none.
func (s *server) poke(l *lag.Loop, again bool) bool {
	loops := s.loops.all()
	if l.Index >= len(loops) {
		return false
	}
	h := loops[l.Index].heart.Load()
	if h == nil {
		return false
	}
	s.beat(h, again)
	return true
}

// beatNow is the heartbeat, on heart's loop.
func (s *server) beatNow(heart *conn) {
	heart.loop.lag.Beat(time.Now().UnixNano(), s.opts.lagInterval)
}
