// Package loopwatchnbio is an nbio engine whose callbacks on its pollers
// and its listeners are watched by loopwatch: a blocking call in your
// handler is named, with its file and line, on the poller it held, and
// you mark nothing.
//
//	go get github.com/bystander-kit/bystander/loopwatch/loopwatchnbio
//
//	w := loopwatch.New(loopwatch.Options{Threshold: 5 * time.Millisecond})
//	defer w.Stop()
//	g := loopwatchnbio.NewEngine(nbio.Config{Network: "tcp", Addrs: []string{":9000"}, NPoller: 4}, w)
//	g.OnData(func(c *nbio.Conn, data []byte) { ... }) // as with nbio.Engine
//	err := g.Start()
//
// Engine embeds *nbio.Engine: everything of nbio's is there, and the
// handlers set through Engine's own OnOpen, OnData, OnDataPtr and OnRead
// are watched. What is watched, and on which Loop:
//   - OnData, OnDataPtr and OnRead: on the Loop of the poller that owns
//     the connection, "nbio-poller-<i>" for poller i = c.Hash() % NPoller
//     (nbio's own rule), one Loop a poller, whatever their number. Not
//     with AsyncReadInPoller: nbio then reads on goroutines of a pool
//     (IOExecute), and these are not watched.
//   - OnOpen, for a connection a listener accepted: on that listener's
//     Loop, "nbio-acceptor-<i>" for Addrs[i] (nbio accepts on a goroutine a
//     listener, and opens the connection there). A connection you add
//     yourself (AddConn, Dial) opens on your goroutine: not watched.
//   - Not watched: what nbio runs on goroutines of its own, or of a pool
//     (OnClose, which it runs on a goroutine of its timer; Execute's and
//     AfterFunc's jobs; AsyncRead's reads; OnStop), and handlers set with
//     the embedded *nbio.Engine's own methods.
//
// With LockPoller (LockListener), each poller's (listener's) Loop is told
// its thread is locked (loopwatch.Loop.LockThread) when it first runs a
// callback: loopwatch then tells a blocking call from a thread that did
// not get a CPU.
package loopwatchnbio

import (
	"net"
	"strconv"
	"sync"

	"github.com/bystander-kit/bystander/loopwatch"
	"github.com/lesismal/nbio"
)

// Engine is an nbio engine whose poller and listener callbacks w watches.
type Engine struct {
	*nbio.Engine
	w *loopwatch.Watcher

	// Made by Start, before any poller or listener runs; read, not
	// written, after.
	pollers   []*watched
	acceptors []*watched // one a listener, Addrs[i]'s
}

// watched is one poller's or listener's Loop, told of a locked thread on
// its first callback (on its goroutine).
type watched struct {
	l      *loopwatch.Loop
	locked bool
	once   sync.Once
}

func (x *watched) enter() *loopwatch.Loop {
	if x.locked {
		x.once.Do(x.l.LockThread) // nbio locked this goroutine already: it stays as it was
	}
	x.l.Enter()
	return x.l
}

// NewEngine is nbio.NewEngine(conf), watched by w.
func NewEngine(conf nbio.Config, w *loopwatch.Watcher) *Engine {
	return &Engine{Engine: nbio.NewEngine(conf), w: w}
}

// Start makes a Loop for each poller and each listener, then starts the
// engine (nbio.Engine.Start).
func (g *Engine) Start() error {
	g.pollers = make([]*watched, g.NPoller)
	for i := range g.pollers {
		g.pollers[i] = &watched{l: g.w.Loop("nbio-poller-" + strconv.Itoa(i)), locked: g.LockPoller}
	}
	g.acceptors = make([]*watched, len(g.Addrs))
	for i := range g.acceptors {
		g.acceptors[i] = &watched{l: g.w.Loop("nbio-acceptor-" + strconv.Itoa(i)), locked: g.LockListener}
	}
	return g.Engine.Start()
}

// acceptor is the Loop of the listener that accepted c (nil: none did).
// Start has resolved each listener's address in Addrs before its
// goroutine began.
func (g *Engine) acceptor(c *nbio.Conn) *watched {
	if len(g.acceptors) != len(g.Addrs) || c.LocalAddr() == nil {
		return nil
	}
	local := c.LocalAddr()
	for _, exact := range []bool{true, false} {
		for i, a := range g.Addrs {
			if listens(a, local, exact) {
				return g.acceptors[i]
			}
		}
	}
	return nil
}

// listens says whether a listener at addr (as nbio resolved it) accepts
// connections whose local address is local: the same address, or (exact
// false) the same port on a listener of every address.
func listens(addr string, local net.Addr, exact bool) bool {
	if local.String() == addr {
		return true
	}
	host, port, err := net.SplitHostPort(addr)
	_, lport, lerr := net.SplitHostPort(local.String())
	if exact || err != nil || lerr != nil || port != lport {
		return false
	}
	ip := net.ParseIP(host)
	return host == "" || ip != nil && ip.IsUnspecified()
}

// poller is the Loop of the poller that owns c (nil: not watched).
func (g *Engine) poller(c *nbio.Conn) *watched {
	if g.AsyncReadInPoller || len(g.pollers) == 0 {
		return nil
	}
	return g.pollers[c.Hash()%len(g.pollers)]
}

// OnData sets h, watched on the Loop of the connection's poller.
func (g *Engine) OnData(h func(c *nbio.Conn, data []byte)) {
	g.Engine.OnData(func(c *nbio.Conn, data []byte) {
		if p := g.poller(c); p != nil {
			defer p.enter().Exit()
		}
		h(c, data)
	})
}

// OnDataPtr sets h, watched on the Loop of the connection's poller.
func (g *Engine) OnDataPtr(h func(c *nbio.Conn, pdata *[]byte)) {
	g.Engine.OnDataPtr(func(c *nbio.Conn, pdata *[]byte) {
		if p := g.poller(c); p != nil {
			defer p.enter().Exit()
		}
		h(c, pdata)
	})
}

// OnRead sets h, watched on the Loop of the connection's poller.
func (g *Engine) OnRead(h func(c *nbio.Conn)) {
	g.Engine.OnRead(func(c *nbio.Conn) {
		if p := g.poller(c); p != nil {
			defer p.enter().Exit()
		}
		h(c)
	})
}

// OnOpen sets h, watched on the Loop of the listener that accepted the
// connection.
func (g *Engine) OnOpen(h func(c *nbio.Conn)) {
	g.Engine.OnOpen(func(c *nbio.Conn) {
		if a := g.acceptor(c); a != nil {
			defer a.enter().Exit()
		}
		h(c)
	})
}
