// Package protocol is the endpoint protocol every server measured by this kit
// speaks (docs/protocol.md): the four routes, their query parameters and
// limits, and the timing headers a client reads back.
package protocol

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Route is one of the protocol's endpoints.
type Route int

// The routes. Unknown answers 404.
const (
	Unknown Route = iota
	Fast          // GET /fast: a small constant answer
	Slow          // GET /slow: the blocking call on the thread that serves it
	Async         // GET /async: a delay scheduled without blocking, answered by a continuation
	Offload       // GET /offload: the blocking call on an offload pool, answered through the owner
)

var routeNames = [...]string{"unknown", "/fast", "/slow", "/async", "/offload"}

// String is the route's path ("unknown" for Unknown).
func (r Route) String() string {
	if r < 0 || int(r) >= len(routeNames) {
		return "unknown"
	}
	return routeNames[r]
}

// Routes lists the known routes in protocol order.
var Routes = []Route{Fast, Slow, Async, Offload}

// RouteOf maps a request path to its route.
func RouteOf(path []byte) Route {
	switch string(path) {
	case "/fast":
		return Fast
	case "/slow":
		return Slow
	case "/async":
		return Async
	case "/offload":
		return Offload
	}
	return Unknown
}

// Response header names.
const (
	HeaderLoop              = "X-Loop"               // 0-based loop that owns the connection (loop servers)
	HeaderHandlerStart      = "X-Handler-Start"      // unix ns when the handler first ran
	HeaderContinuationStart = "X-Continuation-Start" // unix ns when the continuation ran (/async, /offload)
	HeaderContinuationLoop  = "X-Continuation-Loop"  // loop that ran the continuation (loop servers)
	HeaderBlockedNs         = "X-Blocked-Ns"         // how long the blocking call took (/slow, /offload)
	HeaderQueuedNs          = "X-Queued-Ns"          // ns waiting for a worker slot (pool server)
)

// Bodies of the successful answers, one line each.
const (
	BodyFast    = "fast\n"
	BodySlow    = "slow\n"
	BodyAsync   = "async\n"
	BodyOffload = "offload\n"
)

// Body is the constant body a route answers 200 with.
func (r Route) Body() string {
	switch r {
	case Fast:
		return BodyFast
	case Slow:
		return BodySlow
	case Async:
		return BodyAsync
	case Offload:
		return BodyOffload
	}
	return "not found\n"
}

// Reasons for the statuses that are not about a bad query.
const (
	ReasonNotFound  = "not found: this server serves /fast /slow /async /offload\n"
	ReasonMethod    = "method not allowed: use GET or HEAD\n"
	ReasonQueueFull = "offload queue full\n"
)

// ReasonDatabase is the body of a 503 whose blocking call (--block-mode
// postgres) failed: the error on one line, at most 200 bytes.
func ReasonDatabase(err error) string {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if len(msg) > 200 {
		msg = strings.ToValidUTF8(msg[:200], "")
	}
	return msg + "\n"
}

// DefaultMaxBlock bounds ?block= and ?delay= unless a server is told otherwise.
const DefaultMaxBlock = 10 * time.Second

// Params are a request's query parameters after validation.
type Params struct {
	Block    Block         // ?block=, or the server's default
	Delay    time.Duration // ?delay=, or the server's default
	HasBlock bool
	HasDelay bool
}

// ParseQuery reads block= and delay= from a raw query string. Both must be Go
// durations between 0 and max inclusive; other keys are ignored. The error is
// one line, fit to be the body of a 400.
func ParseQuery(raw []byte, max time.Duration) (Params, error) {
	var p Params
	for len(raw) > 0 {
		var kv []byte
		if i := bytes.IndexByte(raw, '&'); i >= 0 {
			kv, raw = raw[:i], raw[i+1:]
		} else {
			kv, raw = raw, nil
		}
		eq := bytes.IndexByte(kv, '=')
		if eq < 0 {
			continue
		}
		key, val := kv[:eq], kv[eq+1:]
		var dst *time.Duration
		switch string(key) {
		case "block":
			dst, p.HasBlock = (*time.Duration)(&p.Block), true
		case "delay":
			dst, p.HasDelay = &p.Delay, true
		default:
			continue
		}
		d, err := parseDuration(val)
		if err != nil {
			return p, fmt.Errorf("bad %s=%q: want a Go duration such as 5ms", key, val)
		}
		if d < 0 {
			return p, fmt.Errorf("bad %s=%s: negative", key, val)
		}
		if d > max {
			return p, fmt.Errorf("bad %s=%s: above the server's --max-block %s", key, val, max)
		}
		*dst = d
	}
	return p, nil
}

func parseDuration(b []byte) (time.Duration, error) {
	s := string(b)
	if strings.IndexByte(s, '%') >= 0 || strings.IndexByte(s, '+') >= 0 {
		u, err := url.QueryUnescape(s)
		if err != nil {
			return 0, err
		}
		s = u
	}
	return time.ParseDuration(s)
}
