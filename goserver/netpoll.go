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
type netpollEngine struct {
	conns sync.Map // *npConn -> struct{}
}

// npConn is a netpoll connection's state for the timeouts.
type npConn struct {
	c            netpoll.Connection
	lastActive   atomic.Int64 // unix ns of the last bytes read or answer written
	partialSince atomic.Int64 // unix ns the incomplete request buffered now began; 0: none
	headerDone   atomic.Bool  // that request's line and headers are all in
	owed         atomic.Bool  // a request is being answered: no timeout applies
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
		return s.netpoll(ctx, c, nc)
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

// netpoll answers the whole requests buffered on c, in order, on the
// goroutine netpoll runs it on; an incomplete one waits for more input.
func (s *server) netpoll(ctx context.Context, c netpoll.Connection, nc *npConn) error {
	r := c.Reader()
	n := 0
	buf, err := r.Peek(r.Len())
	if err != nil {
		return err
	}
	if nc != nil {
		nc.owed.Store(true)
		defer func() {
			nc.lastActive.Store(time.Now().UnixNano())
			nc.owed.Store(false)
		}()
	}
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
	if nc != nil { // what is left is an incomplete request: it times out from its first byte
		if rest := buf[n:]; len(rest) == 0 {
			nc.partialSince.Store(0)
		} else {
			nc.partialSince.CompareAndSwap(0, time.Now().UnixNano())
			nc.headerDone.Store(bytes.Contains(rest, []byte("\r\n\r\n")) || bytes.Contains(rest, []byte("\n\n")))
		}
	}
	if err := r.Skip(n); err != nil {
		return err
	}
	_ = r.Release()
	if len(out) > 0 {
		w := c.Writer()
		if _, err := w.WriteBinary(out); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if closeNow {
		return c.Close()
	}
	return nil
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
