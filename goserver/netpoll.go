package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudwego/netpoll"

	"github.com/bystander-kit/bystander/internal/h1"
	"github.com/bystander-kit/bystander/internal/pace"
	"github.com/bystander-kit/bystander/internal/protocol"
	"github.com/bystander-kit/bystander/internal/serverflags"
)

// netpollEngine serves on cloudwego/netpoll as it comes: its pollers
// (event loops) watch the connections and hand each connection's readable
// input to OnRequest on a goroutine of its default pool (gopool: a new
// worker for every task waiting, up to 2^31), one at a time per
// connection. The requests are decoded by the kit's parser (internal/h1),
// as the loop server decodes them: netpoll is a transport, not an HTTP
// server.
//
// netpoll's own timeouts do not close a connection that sends nothing or
// sends a request a byte at a time: WithIdleTimeout, "sets the idle
// timeout of connections", sets TCP keep-alive (v0.7.2
// connection_impl.go:80-82, SetIdleTimeout calls SetKeepAlive), and
// WithReadTimeout bounds the blocking reads this engine does not make. The
// engine closes them itself, by the same rules as the kit's other servers.
//
// netpoll reads every connection's input as it comes, into a buffer of its
// own, whatever the handler does; and it calls the handler again, at
// once, for as long as input is left unread (connection_onevent.go:
// "onRequest must either eventually read all the input data or actively
// Close the connection, otherwise the goroutine will fall into a dead
// loop"). So the engine bounds both itself: an incomplete request waits
// for more input inside the handler, until its timeout (it spun a core,
// and on after its client had gone); a client that sends while the
// answers it does not read wait in a blocked write is closed past
// maxPendingInput (it grew the server by 190 MB a second), and a failed
// write closes the connection (the handler answered a closed client's
// backlog on, to 8 GB).
type netpollEngine struct {
	conns sync.Map // *npConn -> struct{}
	// nflushing counts the connections whose answers are being written
	// (npConn.flushing); a watcher, running while there are any, closes
	// one whose client sent over maxPendingInput meanwhile.
	nflushing atomic.Int64
	watching  atomic.Bool
}

// maxPendingInput bounds what a client may send while its answers wait for
// it to read them (the loop server's bound).
const maxPendingInput = 1 << 20

// watchEvery is how often the watcher looks at blocked writes.
const watchEvery = 10 * time.Millisecond

// npConn is a netpoll connection's state for the timeouts.
type npConn struct {
	c            netpoll.Connection
	lastActive   atomic.Int64 // unix ns of the last bytes read or answer written
	partialSince atomic.Int64 // unix ns the incomplete request buffered now began; 0: none
	headerDone   atomic.Bool  // that request's line and headers are all in
	owed         atomic.Bool  // a request is being answered: no timeout applies
	flushing     atomic.Bool  // its answers are being written (watched)
}

type npKey struct{}

func (e *netpollEngine) serve(ctx context.Context, s *server, ln net.Listener) error {
	o := s.opts
	opts := []netpoll.Option{
		netpoll.WithOnConnect(func(ctx context.Context, c netpoll.Connection) context.Context {
			nc := &npConn{c: c}
			nc.lastActive.Store(time.Now().UnixNano())
			e.conns.Store(nc, struct{}{})
			return context.WithValue(ctx, npKey{}, nc)
		}),
		netpoll.WithOnDisconnect(func(ctx context.Context, _ netpoll.Connection) {
			if nc, ok := ctx.Value(npKey{}).(*npConn); ok {
				e.conns.Delete(nc)
			}
		}),
	}
	evl, err := netpoll.NewEventLoop(func(ctx context.Context, c netpoll.Connection) error {
		nc, _ := ctx.Value(npKey{}).(*npConn)
		return e.request(ctx, s, c, nc)
	}, opts...)
	if err != nil {
		return err
	}
	stop := make(chan struct{})
	defer close(stop)
	go e.sweep(o, stop)
	served := make(chan error, 1)
	go func() { served <- evl.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_ = evl.Shutdown(sctx)
	select {
	case <-served:
	case <-time.After(time.Second):
	}
	return nil
}

// request answers the whole requests buffered on c, in order, on the
// goroutine netpoll runs it on; an incomplete one waits here for more
// input until its timeout (returning would have netpoll call again at
// once). Any failure closes the connection: netpoll's loop ends only on a
// close of ours or when all input is read.
func (e *netpollEngine) request(ctx context.Context, s *server, c netpoll.Connection, nc *npConn) error {
	if nc == nil {
		nc = &npConn{c: c}
	}
	for {
		left, err := e.answer(ctx, s, c, nc)
		if err != nil || left == 0 {
			return err
		}
		if err := e.waitMore(s, c, nc, left); err != nil {
			return c.Close()
		}
	}
}

// answer answers what is buffered; left is how many bytes of an incomplete
// request it left, to wait for more than.
func (e *netpollEngine) answer(ctx context.Context, s *server, c netpoll.Connection, nc *npConn) (left int, err error) {
	r := c.Reader()
	if r.Len() > maxPendingInput {
		// Sent while the answers before it waited unread: past the bound.
		return 0, c.Close()
	}
	n := 0
	buf, err := r.Peek(r.Len())
	if err != nil {
		return 0, c.Close()
	}
	nc.owed.Store(true)
	defer func() {
		nc.lastActive.Store(time.Now().UnixNano())
		nc.owed.Store(false)
	}()
	var out []byte
	closeNow := false
	for n < len(buf) && !closeNow {
		var req h1.Request
		used, err := h1.Parse(buf[n:], &req)
		if errors.Is(err, h1.ErrIncomplete) {
			break
		}
		if err != nil {
			s.refused.Add(1)
			out, closeNow, n = h1.AppendError(out, err.(*h1.Error)), true, len(buf)
			break
		}
		n += used
		start := time.Now()
		s.byRoute[protocol.RouteOf(req.Path)].Add(1)
		a := s.routes.Serve(ctx, req.Method, req.Path, req.Query, start, nil)
		if a.Gone {
			closeNow = true
			break
		}
		out = h1.AppendStatusLine(out, a.Status)
		for _, x := range a.Headers {
			out = h1.AppendHeaderInt(out, x.Name, x.Value)
		}
		out = h1.AppendBody(out, a.Body, &req, req.KeepAlive)
		closeNow = !req.KeepAlive
	}
	// What is left is an incomplete request: it times out from its first
	// byte, which came now when a request before it was answered.
	rest := buf[n:]
	switch {
	case len(rest) == 0:
		nc.partialSince.Store(0)
	case n > 0:
		nc.partialSince.Store(time.Now().UnixNano())
	default:
		nc.partialSince.CompareAndSwap(0, time.Now().UnixNano())
	}
	if len(rest) > 0 {
		nc.headerDone.Store(bytes.Contains(rest, []byte("\r\n\r\n")) || bytes.Contains(rest, []byte("\n\n")))
	}
	if err := r.Skip(n); err != nil {
		return 0, c.Close()
	}
	_ = r.Release()
	if len(out) > 0 {
		if err := e.write(c, nc, out); err != nil {
			return 0, c.Close()
		}
	}
	if closeNow {
		return 0, c.Close()
	}
	return len(rest), nil
}

// write sends out, watched while it waits for the client to read.
func (e *netpollEngine) write(c netpoll.Connection, nc *npConn, out []byte) error {
	w := c.Writer()
	if _, err := w.WriteBinary(out); err != nil {
		return err
	}
	nc.flushing.Store(true)
	if e.nflushing.Add(1) == 1 {
		e.watch()
	}
	err := w.Flush()
	nc.flushing.Store(false)
	e.nflushing.Add(-1)
	return err
}

// watch runs the watcher unless it runs: every watchEvery, while any
// write waits, it closes a connection whose client sent over
// maxPendingInput meanwhile. It ends when no write waits.
func (e *netpollEngine) watch() {
	if !e.watching.CompareAndSwap(false, true) {
		return
	}
	go func() {
		for {
			for e.nflushing.Load() > 0 {
				time.Sleep(watchEvery)
				e.conns.Range(func(k, _ any) bool {
					if nc := k.(*npConn); nc.flushing.Load() && nc.c.Reader().Len() > maxPendingInput {
						_ = nc.c.Close()
					}
					return true
				})
			}
			e.watching.Store(false)
			// A write that began as this one ended finds it running: look
			// again, and go on if so.
			if e.nflushing.Load() == 0 || !e.watching.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// waitMore waits for more input on a connection holding an incomplete
// request, until the request's timeout (header, or body once the headers
// are in; none when that timeout is 0).
func (e *netpollEngine) waitMore(s *server, c netpoll.Connection, nc *npConn, left int) error {
	o := s.opts
	limit := o.HeaderTimeout
	if nc.headerDone.Load() {
		limit = o.BodyTimeout
	}
	var wait time.Duration
	if limit > 0 {
		wait = limit - time.Duration(time.Now().UnixNano()-nc.partialSince.Load())
		if wait <= 0 {
			return errors.New("past its timeout")
		}
	}
	if err := c.SetReadTimeout(wait); err != nil {
		return err
	}
	defer func() { _ = c.SetReadTimeout(0) }()
	// More than what answer left: what came since it looked counts
	// (waiting for more than is buffered now could wait for bytes that
	// never come, with a whole request in).
	_, err := c.Reader().Peek(left + 1)
	return err
}

// sweep closes, every tick, the connections past a timeout: idle between
// requests, a request's line and headers, or its promised body; one being
// answered is left alone. It runs until stop closes.
func (e *netpollEngine) sweep(o options, stop <-chan struct{}) {
	every := o.SweepEvery()
	if every == 0 {
		return
	}
	pace.Every(stop, every, func(now time.Time) {
		e.conns.Range(func(k, _ any) bool {
			nc := k.(*npConn)
			if !nc.owed.Load() && o.Past(now.UnixNano(), nc.lastActive.Load(), nc.partialSince.Load(), nc.headerDone.Load()) != serverflags.NotPast {
				e.conns.Delete(nc)
				_ = nc.c.Close()
			}
			return true
		})
	})
}
