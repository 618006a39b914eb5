// Package conform checks that a server speaks the endpoint protocol
// (docs/protocol.md) well enough to be measured: every endpoint answers,
// the blocking call blocks and says how long, /slow holds its loop while
// /async and /offload do not, continuations come back to the connection's
// loop, errors are answered, and connections stay open. It is what
// `prober --mode check` prints and what run.sh runs on every --target
// before measuring it.
//
// It uses its own raw connections and net/http's response parser, so it
// reads a server the way any client would, without the kit's own decoder.
package conform

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Options tunes a check.
type Options struct {
	// Loops, when above 0, says the server has event loops: no X-Loop is
	// then a failure, not a server without loops.
	Loops int
	// Timeout bounds each request (default 5 s).
	Timeout time.Duration
}

// The durations the checks ask for: long enough that a blocked loop shows
// far above the noise of a busy machine, short enough to check in seconds.
const (
	checkBlock = 20 * time.Millisecond  // ?block= and ?delay= of the single checks
	loopBlock  = 100 * time.Millisecond // each of 4 /slow calls on one loop
	asyncDelay = 200 * time.Millisecond // each of 2 /async calls on one loop
	holdBlock  = 300 * time.Millisecond // the /offload call a /fast must not wait for
	maxConns   = 260                    // connections opened to find 4 on one loop (64 loops dealt round-robin)
)

// Run checks the server at base (http://host:port, no path).
func Run(ctx context.Context, addr string, o Options) *Report {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	c := &checker{ctx: ctx, addr: addr, o: o, rep: &Report{Schema: Schema, Target: "http://" + addr}}
	defer c.closeAll()
	c.run()
	return c.rep
}

type checker struct {
	ctx   context.Context
	addr  string
	o     Options
	rep   *Report
	conns []*conn
	// byLoop: open connections by the X-Loop they answered with.
	byLoop map[int][]*conn
}

var allPhases = []string{"sweep", "stall", "offload", "trace", "cliff"}

func (c *checker) add(id, what, status, reason string, required bool, needs ...string) Result {
	r := Result{ID: id, What: what, Status: status, Reason: reason, Required: required, Needs: needs}
	c.rep.Checks = append(c.rep.Checks, r)
	return r
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64) + " ms"
}

func (c *checker) run() {
	// Endpoints, one connection.
	k, err := c.dial()
	if err != nil {
		c.add(CheckFast, "GET /fast answers 200 with Content-Length and X-Handler-Start", Fail, err.Error(), true, allPhases...)
		return
	}
	a, err := k.get("/fast")
	switch {
	case err != nil:
		c.add(CheckFast, "GET /fast answers", Fail, err.Error(), true, allPhases...)
		return
	default:
		what := "GET /fast answers 200 with Content-Length and X-Handler-Start"
		if c.endpoint(CheckFast, what, a, allPhases...) {
			c.add(CheckFast, what, Pass, fmt.Sprintf("answered in %s", ms(a.elapsed)), true, allPhases...)
		}
	}
	c.slow(k)
	c.async(k)
	c.offload(k)
	c.keepAlive()
	c.errors()
	c.loops()
}
