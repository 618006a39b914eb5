package main

import (
	"syscall"
	"time"

	"github.com/bystander-kit/bystander/internal/h1"
	"github.com/bystander-kit/bystander/internal/protocol"
)

// The routes: decoding requests off a connection and answering them.

// drain answers the whole requests at the head of in, in order, appending
// the answers to out. It stops at an incomplete request, at a request whose
// answer is deferred to a continuation, at one after which the connection
// must close, or once out holds maxOut bytes. It returns the bytes consumed.
func (s *server) drain(c *conn, in, out []byte, maxOut int) (n int, _ []byte, closeNow bool) {
	var req h1.Request
	for !c.pending && n < len(in) && len(out) < maxOut {
		used, err := h1.Parse(in[n:], &req)
		if err == h1.ErrIncomplete {
			break
		}
		if err != nil {
			return len(in), h1.AppendError(out, err.(*h1.Error)), true
		}
		n += used
		out, closeNow = s.handle(c, &req, out)
		if closeNow {
			return n, out, true
		}
	}
	return n, out, false
}

// handle answers one request, or defers it to a continuation.
func (s *server) handle(c *conn, req *h1.Request, out []byte) ([]byte, bool) {
	start := time.Now().UnixNano()
	route := protocol.RouteOf(req.Path)
	l := c.loop
	l.requests.Add(1)
	l.enter(route, start)
	defer l.leave(start)

	switch {
	case !req.IsGet() && !req.IsHead():
		return s.reply(out, c, req, 405, protocol.ReasonMethod, start), !req.KeepAlive
	case route == protocol.Unknown:
		return s.reply(out, c, req, 404, protocol.ReasonNotFound, start), !req.KeepAlive
	}
	p, err := protocol.ParseQuery(req.Query, s.opts.MaxBlock)
	if err != nil {
		return s.reply(out, c, req, 400, err.Error()+"\n", start), !req.KeepAlive
	}
	switch route {
	case protocol.Fast:
		return s.reply(out, c, req, 200, protocol.BodyFast, start), !req.KeepAlive
	case protocol.Slow:
		d := s.opts.Block
		if p.HasBlock {
			d = p.Block
		}
		blocked, err := s.block(d.D())
		if err != nil {
			return s.reply(out, c, req, 503, protocol.ReasonDatabase(err), start), !req.KeepAlive
		}
		out = h1.AppendStatusLine(out, 200)
		out = s.timing(out, c, start)
		out = h1.AppendHeaderInt(out, protocol.HeaderBlockedNs, int64(blocked))
		return h1.AppendBody(out, protocol.BodySlow, req, req.KeepAlive), !req.KeepAlive
	}

	// /async and /offload answer later, from a continuation on this loop.
	c.setPending(true)
	c.ready.Store(false)
	c.blockedNs.Store(0)
	c.route, c.handlerStart = route, start
	c.keepAlive, c.minor, c.head = req.KeepAlive, req.Minor, req.IsHead()
	if route == protocol.Async {
		d := s.opts.Delay
		if p.HasDelay {
			d = p.Delay
		}
		time.AfterFunc(d, func() { s.resume(c) })
		return out, false
	}
	d := s.opts.Block
	if p.HasBlock {
		d = p.Block
	}
	call := s.opts.Call()
	if err := s.pool.Submit(func() {
		blocked, err := call.For(d.D())
		c.blockedNs.Store(int64(blocked))
		if err != nil {
			reason := protocol.ReasonDatabase(err)
			c.blockErr.Store(&reason)
		}
		s.resume(c)
	}); err != nil {
		c.setPending(false)
		return s.reply(out, c, req, 503, protocol.ReasonQueueFull, start), !req.KeepAlive
	}
	return out, false
}

// orphaned hands the duplicate descriptor fd of a connection the engine
// has closed while an answer was owed to whoever writes that answer: the
// continuation if it has not run yet, or the caller now if it is due.
func (s *server) orphaned(c *conn, fd int) {
	c.orphan.Store(int64(fd) + 1)
	if c.ready.Load() {
		s.answerOrphan(c)
	}
}

// answerOrphan writes the owed answer of a closed connection to its
// duplicate descriptor, if nobody has, and lets the socket go. It runs
// where the continuation does, or on the loop that closed the connection.
func (s *server) answerOrphan(c *conn) bool {
	fd := int(c.orphan.Swap(0)) - 1
	if fd < 0 {
		return false
	}
	defer syscall.Close(fd)
	c.keepAlive = false
	out, _ := s.finish(c, nil)
	writeFD(fd, out)
	return true
}

// writeFD writes out to the descriptor fd, a second at most.
func writeFD(fd int, out []byte) {
	deadline := time.Now().Add(time.Second)
	for len(out) > 0 && time.Now().Before(deadline) {
		n, err := syscall.Write(fd, out)
		if err == syscall.EAGAIN || err == syscall.EINTR {
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil || n <= 0 {
			return
		}
		out = out[n:]
	}
}

// finish writes the answer of c's outstanding request. It runs on the loop
// that took the continuation, and says which loop that was.
func (s *server) finish(c *conn, out []byte) ([]byte, bool) {
	now := time.Now().UnixNano()
	ran := -1
	if l := s.loops.lookup(); l != nil {
		ran = l.index
	}
	c.setPending(false)
	c.lastActive.Store(now)
	req := h1.Request{Minor: c.minor}
	if c.head {
		req.Method = []byte("HEAD")
	}
	status, body := 200, c.route.Body()
	if reason := c.blockErr.Swap(nil); reason != nil {
		status, body = 503, *reason
	}
	out = h1.AppendStatusLine(out, status)
	out = s.timing(out, c, c.handlerStart)
	out = h1.AppendHeaderInt(out, protocol.HeaderContinuationStart, now)
	out = h1.AppendHeaderInt(out, protocol.HeaderContinuationLoop, int64(ran))
	if c.route == protocol.Offload {
		out = h1.AppendHeaderInt(out, protocol.HeaderBlockedNs, c.blockedNs.Load())
	}
	return h1.AppendBody(out, body, &req, c.keepAlive), !c.keepAlive
}

func (s *server) timing(out []byte, c *conn, start int64) []byte {
	out = h1.AppendHeaderInt(out, protocol.HeaderLoop, int64(c.loop.index))
	return h1.AppendHeaderInt(out, protocol.HeaderHandlerStart, start)
}

func (s *server) reply(out []byte, c *conn, req *h1.Request, status int, body string, start int64) []byte {
	out = h1.AppendStatusLine(out, status)
	out = s.timing(out, c, start)
	return h1.AppendBody(out, body, req, req.KeepAlive)
}

// block is the blocking call of /slow: the server's, or the test's.
func (s *server) block(d time.Duration) (time.Duration, error) {
	if s.hooks.blockFor != nil {
		return s.hooks.blockFor(s.opts.BlockMode, d), nil
	}
	return s.opts.Call().For(d)
}
