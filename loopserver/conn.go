package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bystander-kit/bystander/internal/accept"
	"github.com/bystander-kit/bystander/internal/pace"
	"github.com/bystander-kit/bystander/internal/protocol"
	"github.com/bystander-kit/bystander/internal/serverflags"
)

// A connection's life on a loop: opened, capped, timed out, closed.

// conn is one client connection's state. All fields but ready and blockedNs
// are touched only on the owning loop.
type conn struct {
	loop    *loop
	link    link // the engine's connection
	closed  bool
	pending bool // a continuation is outstanding: later requests wait buffered
	retry   bool // a later look at the buffered requests is armed
	heart   bool // the server's own connection carrying its loop's heartbeat

	// The outstanding request, for its continuation.
	route        protocol.Route
	handlerStart int64
	keepAlive    bool
	minor        int
	head         bool
	ready        atomic.Bool            // the continuation is due: an orphan may be answered
	blockedNs    atomic.Int64           // measured by the offload worker
	blockErr     atomic.Pointer[string] // the offloaded call's failure (--block-mode postgres), as the answer's body

	// What the timeout sweeper reads from its own goroutine.
	lastActive   atomic.Int64 // unix ns of the last bytes read or answer written
	partialSince atomic.Int64 // unix ns the incomplete request buffered now began; 0: none
	headerDone   atomic.Bool  // that request's line and headers are all in
	owed         atomic.Bool  // an answer is under way: no timeout applies
	expired      atomic.Bool  // the sweeper asked the loop to close it

	// A connection the engine closed while it was owed an answer (the
	// client half-closed: HTTP/1.1 lets it wait for the answer) keeps the
	// socket through a duplicate descriptor until the answer is written:
	// dupFD while pending (an engine may close the descriptor before its
	// close callback), orphan (descriptor + 1) once the engine has let go.
	dupFD  int
	orphan atomic.Int64
}

// setPending marks whether a continuation is outstanding.
func (c *conn) setPending(p bool) {
	c.pending = p
	c.owed.Store(p)
}

// note records, on the loop, that c was active now and what is left
// buffered after its whole requests: an incomplete request times out
// from its first byte.
func (c *conn) note(rest []byte) {
	now := time.Now().UnixNano()
	c.lastActive.Store(now)
	if len(rest) == 0 {
		c.partialSince.Store(0)
		return
	}
	if c.partialSince.Load() == 0 {
		c.partialSince.Store(now)
	}
	c.headerDone.Store(bytes.Contains(rest, []byte("\r\n\r\n")) || bytes.Contains(rest, []byte("\n\n")))
}

// connCap is the most client connections the server holds: the
// descriptor limit (Go raises the soft limit to the hard one at start)
// less a reserve for the listeners, the pollers, the admin listener and
// its connections, and the logs.
func connCap() (nofile, maxConns int64) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 || rl.Cur > 1<<40 {
		return 0, 1 << 40
	}
	nofile = int64(rl.Cur)
	return nofile, max(nofile-max(64, nofile/10), 1)
}

// opened registers a new connection on the calling loop, or returns nil
// when the server holds as many as its cap: the engine then closes it at
// once, and the refusals are logged once a second.
func (s *server) opened(remote net.Addr, l link) *conn {
	return s.openedOn(remote, l, nil)
}

// openedOn is opened on loop l, or on the calling loop when l is nil.
func (s *server) openedOn(remote net.Addr, lk link, l *loop) *conn {
	if c := s.openedHeart(remote, lk, l); c != nil {
		return c
	}
	if s.open.Add(1) > s.maxConns {
		s.open.Add(-1)
		s.refuse()
		return nil
	}
	if l == nil {
		l = s.loops.register()
	}
	l.connsOpen.Add(1)
	l.connsTotal.Add(1)
	c := &conn{loop: l, link: lk}
	c.lastActive.Store(time.Now().UnixNano())
	s.conns.Store(c, struct{}{})
	return c
}

// refuse counts a connection turned away at the cap, and says so once a
// second.
func (s *server) refuse() {
	n := s.refused.Add(1)
	now := time.Now().UnixNano()
	if last := s.lastRefusalLog.Load(); now-last > int64(time.Second) && s.lastRefusalLog.CompareAndSwap(last, now) {
		fmt.Fprintf(s.log, "loopserver: %d connections open, the cap under the descriptor limit of %d: closing new ones at once (%d so far)\n",
			s.maxConns, s.nofile, n)
	}
}

// sweep closes, every tick, the connections past a timeout: idle between
// requests, a request's line and headers, or its promised body. A
// connection owed an answer is left alone. It runs until stop closes.
func (s *server) sweep(stop <-chan struct{}) {
	if every := s.opts.SweepEvery(); every > 0 {
		pace.Every(stop, every, func(now time.Time) { s.expireAt(now.UnixNano()) })
	}
}

// expireAt asks the loops to close the connections past a timeout at now.
func (s *server) expireAt(now int64) {
	counts := map[serverflags.Timeout]*atomic.Int64{serverflags.IdlePast: &s.idleTO, serverflags.HeaderPast: &s.headerTO, serverflags.BodyPast: &s.bodyTO}
	s.conns.Range(func(k, _ any) bool {
		c := k.(*conn)
		if c.owed.Load() || c.expired.Load() {
			return true
		}
		if past := s.opts.Past(now, c.lastActive.Load(), c.partialSince.Load(), c.headerDone.Load()); past != serverflags.NotPast {
			counts[past].Add(1)
			c.expired.Store(true)
			s.expire(c)
		}
		return true
	})
}

// acceptLoop takes the connections on ln and hands each to take until ln
// closes, for an engine whose own acceptor cannot be trusted with a full
// descriptor table (gnet, nbio). Past the cap (full) a client's connection
// is closed at once, the server's own hearts excepted; out of descriptors
// it waits, 5 ms doubling to 1 s, and tries again, as net/http does.
func (s *server) acceptLoop(ln net.Listener, full func() bool, take func(net.Conn)) error {
	ln = accept.Patient(ln, s.log, "loopserver") // out of descriptors: wait, and try again
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.stopping.Load() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("accept: %w", err)
		}
		if full() && !s.isHeart(c.RemoteAddr()) {
			c.Close()
			s.refuse()
			continue
		}
		take(c)
	}
}
