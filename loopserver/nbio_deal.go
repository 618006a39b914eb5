package main

import (
	"fmt"
	"net"
	"syscall"
)

// As with gnet, the kit accepts the connections itself and hands them to
// nbio (Engine.AddConn): nbio's acceptor logs "Accept failed ... exit" on
// "too many open files" and stops accepting for good. It deals them
// round-robin, as gnet does, by holding the lowest free descriptors until
// the one nbio's duplicate will take is the next loop's: nbio's own
// dealing by descriptor number is round-robin only while no descriptor is
// opened or closed between two accepts.

// accept takes the connections and hands them to nbio until the listener
// closes (acceptLoop); a heart is dealt to the first loop that has none.
func (e *nbioEngine) accept() error {
	full := func() bool { return e.s.open.Load() >= e.s.maxConns }
	return e.s.acceptLoop(e.ln, full, func(c net.Conn) {
		// Dealt round-robin, as gnet deals them (and nbio itself, by
		// descriptor number, when nothing else opens or closes one in
		// between); a heart to the first loop that has none.
		heart := e.s.isHeart(c.RemoteAddr())
		want := e.nextLoop()
		if heart {
			want = e.heartless()
		}
		pads := e.padFor(c, want)
		nc, err := e.g.AddConn(c) // closes c, keeping a duplicate of its descriptor
		for _, fd := range pads {
			syscall.Close(fd)
		}
		if err != nil && !e.s.stopping.Load() {
			fmt.Fprintf(e.s.log, "loopserver: nbio could not take a connection: %v\n", err)
		}
		if err == nil && !heart {
			// Where it landed, which is want unless another descriptor
			// of the process was opened or closed between the padding
			// and nbio's duplicate: the next deals make up for it.
			got := nc.Hash() % e.s.opts.loops
			e.dealt[got]++
			e.next = (got + 1) % e.s.opts.loops
		}
	})
}

// nextLoop is the loop the next client is dealt to: round-robin from the
// last one dealt, skipping to the loop dealt the fewest, so that a
// connection that landed elsewhere than it was dealt (see accept) is made
// up for by the next ones, and any 4n connections after it still land
// evenly once it is.
func (e *nbioEngine) nextLoop() int {
	best := e.next
	for i := range e.s.opts.loops {
		l := (e.next + i) % e.s.opts.loops
		if e.dealt[l] < e.dealt[best] {
			best = l
		}
	}
	return best
}

// heartless is the first loop without a heart.
func (e *nbioEngine) heartless() int {
	for i := range e.s.opts.loops {
		if e.s.loops.at(i).heart.Load() == nil {
			return i
		}
	}
	return 0
}

// padFor holds the lowest free descriptors until the lowest free one is
// dealt to loop want (nbio duplicates c's descriptor to the lowest free
// one and deals it to poller fd % pollers); the caller closes them once
// nbio has taken c.
func (e *nbioEngine) padFor(c net.Conn, want int) []int {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	var pads []int
	_ = rc.Control(func(fd uintptr) {
		for range e.s.opts.loops {
			next, err := syscall.Dup(int(fd))
			if err != nil {
				return
			}
			if next%e.s.opts.loops == want {
				syscall.Close(next)
				return
			}
			pads = append(pads, next)
		}
	})
	return pads
}
