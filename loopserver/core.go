package main

import (
	"syscall"
	"time"
)

// The connection core: one flow for every engine. A request is parsed,
// routed and answered on its connection's loop; one whose answer comes
// later (/async, /offload) holds the connection, whose later requests wait
// buffered until the continuation has answered on the same loop; answers
// wait while the client does not read them (back-pressure); an idle or
// half-sent connection is expired on its loop; a connection closed while an
// answer is owed keeps its socket through a duplicate descriptor until the
// answer is written. An engine (engine.go) supplies a link per connection
// and declares its traits, and calls traffic when bytes arrive and
// closedConn when it has closed a connection.

// link is one connection as its engine carries it: the way onto its loop,
// its buffered input, its writes and what waits unsent. Each engine's link
// is its own type, holding the engine's connection typed. Every method but
// run is called on the connection's loop.
type link interface {
	// run runs f on the connection's loop, soon, from any goroutine; f
	// returning true closes it. A job for a connection the engine has
	// closed may be dropped. The core calls it only while the server is
	// not stopping.
	run(f func() (closeNow bool))
	// input is what is buffered unread; discard drops its first n bytes
	// (n > 0). An engine that lends its read buffer to a callback (evio,
	// nbio) keeps what is left in an inbox, which its link embeds.
	input() []byte
	discard(n int)
	// write sends out, or queues it behind what is unsent; an error says
	// the engine has let the socket go.
	write(out []byte) error
	// unsent is how many bytes wait to be sent.
	unsent() int
	// fd is the connection's descriptor, or -1.
	fd() int
	// The workarounds, called only when the engine's traits declare them
	// (a link without them embeds plain).
	workarounds
}

// workarounds are what an engine's traits may ask of its links.
type workarounds interface {
	// rewake wakes the loop again for the jobs already queued
	// (traits.losesWakes).
	rewake()
	// hold takes the descriptor out of the engine's epoll set while the
	// core keeps a duplicate of it; release puts it back if the engine
	// still has it (traits.keepsClosedFDs). Both run on the loop.
	hold()
	release()
}

// plain is a link that needs no workaround.
type plain struct{}

func (plain) rewake()  {}
func (plain) hold()    {}
func (plain) release() {}

// traits are what an engine declares of itself for the core to read.
type traits struct {
	// losesWakes: a job handed to run may not wake its loop (evio's poll
	// loses a wake queued while it reads its eventfd): the lag monitor
	// repeats the wake of a beat still waiting (link.rewake).
	losesWakes bool
	// keepsClosedFDs: a descriptor the engine closes stays in its epoll
	// set (nbio never deletes one): while the core keeps a duplicate
	// (keepFD), the socket lives on, and so does its entry, reporting the
	// socket's events under the closed descriptor's number, which the next
	// connection takes (nbio then closed that connection on the kept
	// socket's end of input). link.hold and link.release bracket it.
	keepsClosedFDs bool
	// jobsRideHearts: the engine offers no way onto a loop but the loop's
	// heart (nbio), which is opened even without heartbeats.
	jobsRideHearts bool
}

// traffic answers what c has buffered, on its loop, once bytes arrived. It
// reports whether the engine must close c.
func (s *server) traffic(c *conn) (closeNow bool) {
	if c.heart {
		return true // a heart never sends
	}
	if c.closed {
		return false
	}
	if c.pending || c.link.unsent() > maxPendingOutput {
		// Later requests wait: behind the continuation, or until the
		// client reads what it was sent. No engine stops reading, so a
		// client that goes on sending meanwhile is closed past a bound.
		if len(c.link.input()) > maxPendingInput {
			return true
		}
		c.lastActive.Store(time.Now().UnixNano())
		if !c.pending {
			s.later(c)
		}
		return false
	}
	return s.pump(c, c.loop.scratch[:0])
}

// pump answers what is buffered on c after out, up to maxPendingOutput
// bytes of answers, writes them in one go and reports whether c must
// close. Requests left buffered are looked at again once an answer under
// way is done, or in a millisecond when the answers are not being read.
func (s *server) pump(c *conn, out []byte) (closeNow bool) {
	in := c.link.input()
	n, out, closeNow := s.drain(c, in, out, maxPendingOutput)
	c.note(in[n:])
	if n > 0 {
		c.link.discard(n)
	}
	if c.pending {
		s.keepFD(c)
	}
	if len(out) > 0 && !s.send(c, out) {
		closeNow = true
	}
	c.loop.scratch = out[:0]
	if !c.pending {
		s.dropFD(c)
	}
	if !closeNow && !c.pending && n < len(in) && (len(out) >= maxPendingOutput || c.link.unsent() > maxPendingOutput) {
		s.later(c)
	}
	return closeNow
}

// send writes out on c; when the engine has let the socket go already (nbio
// closes on the end of input before it says so), through the duplicate
// descriptor kept while an answer is owed. False: c must close.
func (s *server) send(c *conn, out []byte) bool {
	if err := c.link.write(out); err != nil {
		if c.dupFD > 0 {
			writeFD(c.dupFD, out)
		}
		return false
	}
	return true
}

// later looks at c's buffered requests again in a millisecond, on its loop,
// for as long as its answers are not being read: engines call back only
// when bytes arrive, and a client waiting for its answers sends none.
func (s *server) later(c *conn) {
	if c.retry {
		return
	}
	c.retry = true
	time.AfterFunc(time.Millisecond, func() {
		s.onLoop(c, func() bool {
			c.retry = false
			switch {
			case c.pending:
				return false
			case c.link.unsent() > maxPendingOutput:
				s.later(c)
				return false
			}
			return s.pump(c, c.loop.scratch[:0])
		})
	})
}

// resume runs the continuation of c's outstanding request on its loop; it
// is called from the goroutine that finished the work (a timer, an
// offload worker).
func (s *server) resume(c *conn) {
	c.ready.Store(true)
	if s.answerOrphan(c) { // closed meanwhile: answered here
		return
	}
	s.onLoop(c, func() bool {
		if !c.pending {
			return false
		}
		out, closeNow := s.finish(c, c.loop.scratch[:0])
		if closeNow {
			s.send(c, out)
			c.loop.scratch = out[:0]
			s.dropFD(c)
			return true
		}
		return s.pump(c, out)
	})
}

// expire closes c on its loop: the timeout sweeper asked.
func (s *server) expire(c *conn) {
	s.onLoop(c, func() bool {
		if c.owed.Load() { // an answer got under way meanwhile: it is not idle
			c.expired.Store(false)
			return false
		}
		return true
	})
}

// beat runs the heartbeat of heart's loop on that loop; again: the one
// handed over earlier is still waiting (only an engine that can lose a
// wake is asked again).
func (s *server) beat(heart *conn, again bool) {
	if again && s.traits.losesWakes {
		s.awake(heart.link.rewake)
		return
	}
	s.awake(func() {
		heart.link.run(func() bool {
			s.beatNow(heart)
			return false
		})
	})
}

// onLoop runs f on c's loop unless c has closed by then (its descriptor
// may serve another connection already); f returning true closes c.
func (s *server) onLoop(c *conn, f func() (closeNow bool)) {
	s.awake(func() {
		c.link.run(func() bool {
			if c.closed {
				return false
			}
			return f()
		})
	})
}

// keepFD keeps a duplicate of c's descriptor while it is owed an answer:
// an engine closes the descriptor on the end of input (some before they
// say so), and a client that half-closed after asking still waits for the
// answer.
func (s *server) keepFD(c *conn) {
	if c.dupFD > 0 {
		return
	}
	if fd := c.link.fd(); fd >= 0 {
		if dup, err := syscall.Dup(fd); err == nil {
			c.dupFD = dup
			if s.traits.keepsClosedFDs {
				c.link.hold()
			}
		}
	}
}

// dropFD lets the duplicate go once the answer went out the usual way.
func (s *server) dropFD(c *conn) {
	if c.dupFD > 0 {
		if s.traits.keepsClosedFDs {
			c.link.release()
		}
		syscall.Close(c.dupFD)
		c.dupFD = 0
	}
}

// closedConn is the engine's close of c, on c's loop: a late continuation
// writes nothing, and an answer still owed goes out through the duplicate.
func (s *server) closedConn(c *conn) {
	if c == nil || c.closed {
		return
	}
	if c.heart {
		s.closedHeart(c)
		return
	}
	c.closed = true
	c.loop.connsOpen.Add(-1)
	s.open.Add(-1)
	s.conns.Delete(c)
	if fd := c.dupFD; fd > 0 {
		c.dupFD = 0
		if c.pending {
			s.orphaned(c, fd)
		} else {
			syscall.Close(fd)
		}
	}
}

// inbox is the input of an engine that hands each read's bytes to a
// callback and reuses its buffer (evio, nbio): the bytes are decoded where
// they lie, and only what is left when the callback returns is copied. Its
// input and discard are the link's, for a link that embeds it.
type inbox struct {
	kept []byte // left from earlier reads
	lent []byte // the engine's buffer, during its callback
}

// take is a read's bytes, at the start of the engine's callback.
func (b *inbox) take(in []byte) {
	if len(b.kept) == 0 {
		b.lent = in
		return
	}
	b.kept = append(b.kept, in...)
}

func (b *inbox) input() []byte {
	if b.lent != nil {
		return b.lent
	}
	return b.kept
}

func (b *inbox) discard(n int) {
	if b.lent != nil {
		b.lent = b.lent[n:]
		return
	}
	b.kept = b.kept[:copy(b.kept, b.kept[n:])]
}

// keep copies what is left of the engine's buffer before its callback
// returns.
func (b *inbox) keep() {
	if b.lent != nil {
		b.kept = append(b.kept[:0], b.lent...)
		b.lent = nil
	}
}
