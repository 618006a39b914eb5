// Package routes answers the endpoint protocol (internal/protocol) for a
// server in which every request has a goroutine of its own while it runs:
// the pool server (net/http behind its slots), net/http alone, fasthttp and
// netpoll. The goroutine makes the blocking call of /slow itself, and
// waits, parked, for /async's timer and /offload's pool. The event-loop
// server answers the same routes its own way (loopserver), from the loop,
// with continuations.
package routes

import (
	"context"
	"time"

	"github.com/bystander-kit/bystander/internal/block"
	"github.com/bystander-kit/bystander/internal/offload"
	"github.com/bystander-kit/bystander/internal/protocol"
)

// Server is what a server was told: the blocks, the delay, their bound,
// the blocking call (how it blocks, and its database), and the offload
// pool of /offload.
type Server struct {
	Block           protocol.Block
	Delay, MaxBlock time.Duration
	Call            block.Call
	Pool            *offload.Pool
}

// Header is a timing header: its name and its integer value.
type Header struct {
	Name  string
	Value int64
}

// Answer is what a server writes back: the status, the headers, the body.
type Answer struct {
	Status  int
	Headers []Header
	Body    string
	// Gone: the client went away while the request waited; write nothing.
	Gone bool
}

// Slot is the pool server's worker slot, given back while a request
// waits (for /async's timer or /offload's pool) and taken again, queueing
// like any other work, to write the answer. Without a pool it is nil.
type Slot interface {
	Release()
	Acquire(ctx context.Context) error
}

// Serve answers one request: its method, path and raw query, start the
// moment its handler began. ctx ends when the client goes away. A caller
// that came holding a slot holds it again when the answer is not Gone.
func (s *Server) Serve(ctx context.Context, method, path, query []byte, start time.Time, slot Slot) Answer {
	a := Answer{Headers: []Header{{protocol.HeaderHandlerStart, start.UnixNano()}}}
	route := protocol.RouteOf(path)
	m := string(method)
	switch {
	case m != "GET" && m != "HEAD":
		return a.with(405, protocol.ReasonMethod)
	case route == protocol.Unknown:
		return a.with(404, protocol.ReasonNotFound)
	}
	p, err := protocol.ParseQuery(query, s.MaxBlock)
	if err != nil {
		return a.with(400, err.Error()+"\n")
	}
	blockFor := s.Block
	if p.HasBlock {
		blockFor = p.Block
	}
	switch route {
	case protocol.Fast:
		return a.with(200, protocol.BodyFast)
	case protocol.Slow:
		blocked, err := s.Call.For(blockFor.D())
		if err != nil {
			return a.with(503, protocol.ReasonDatabase(err))
		}
		a.Headers = append(a.Headers, Header{protocol.HeaderBlockedNs, int64(blocked)})
		return a.with(200, protocol.BodySlow)
	}

	var wait <-chan time.Time
	var blocked chan error
	var blockedNs int64
	if route == protocol.Async {
		d := s.Delay
		if p.HasDelay {
			d = p.Delay
		}
		t := time.NewTimer(d)
		defer t.Stop()
		wait = t.C
	} else {
		blocked = make(chan error, 1)
		call := s.Call
		if err := s.Pool.Submit(func() {
			d, err := call.For(blockFor.D())
			blockedNs = int64(d) // read after the send below
			blocked <- err
		}); err != nil {
			return a.with(503, protocol.ReasonQueueFull)
		}
	}
	if slot != nil {
		slot.Release()
	}
	var blockErr error
	select {
	case <-wait:
	case blockErr = <-blocked:
	case <-ctx.Done():
		return Answer{Gone: true}
	}
	if slot != nil {
		if err := slot.Acquire(ctx); err != nil {
			return Answer{Gone: true}
		}
	}
	a.Headers = append(a.Headers, Header{protocol.HeaderContinuationStart, time.Now().UnixNano()})
	if blockErr != nil {
		return a.with(503, protocol.ReasonDatabase(blockErr))
	}
	if route == protocol.Offload {
		a.Headers = append(a.Headers, Header{protocol.HeaderBlockedNs, blockedNs})
	}
	return a.with(200, route.Body())
}

func (a Answer) with(status int, body string) Answer {
	a.Status, a.Body = status, body
	return a
}
