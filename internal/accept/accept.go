// Package accept keeps a server accepting when the machine runs out of
// what a connection needs (descriptors, buffers, memory): Patient wraps a
// listener so that Accept waits and tries again, with a growing pause, and
// says so at most once a second, instead of failing. Libraries that give
// up on such an error (fasthttp's Serve returns on "too many open files",
// and the process exits) keep serving the connections they hold, and
// accept again as soon as some close.
package accept

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// MaxPause is the longest pause between two tries.
const MaxPause = time.Second

// Short says whether err is the machine running short of what a new
// connection needs, which passes when connections close.
func Short(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)
}

// Patient returns ln with an Accept that waits out Short errors: it pauses
// (5 ms, doubling to MaxPause) and tries again, writing a line to log (as
// name) at most once a second. Other errors, and a closed listener, are
// returned as they are.
func Patient(ln net.Listener, log io.Writer, name string) net.Listener {
	return &patient{Listener: ln, log: log, name: name}
}

type patient struct {
	net.Listener
	log  io.Writer
	name string
	mu   sync.Mutex // guards last
	last time.Time
}

func (p *patient) Accept() (net.Conn, error) {
	var pause time.Duration
	for {
		c, err := p.Listener.Accept()
		if err == nil || !Short(err) {
			return c, err
		}
		pause = min(max(2*pause, 5*time.Millisecond), MaxPause)
		p.mu.Lock()
		if time.Since(p.last) > time.Second {
			p.last = time.Now()
			fmt.Fprintf(p.log, "%s: accept: %v; trying again in %s\n", p.name, err, pause)
		}
		p.mu.Unlock()
		time.Sleep(pause)
	}
}
