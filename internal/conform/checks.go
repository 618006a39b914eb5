package conform

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bystander-kit/bystander/internal/protocol"
)

// The protocol checks: each endpoint, keep-alive, malformed requests and
// how connections are dealt to loops.

// endpoint checks what every answer must have; false when it failed.
func (c *checker) endpoint(id, what string, a answer, needs ...string) bool {
	switch {
	case a.status != 200:
		c.add(id, what, Fail, fmt.Sprintf("status %d, want 200 (%s)", a.status, strings.TrimSpace(a.body)), true, needs...)
	case a.contentLength < 0:
		c.add(id, what, Fail, "no Content-Length: the protocol answers with a Content-Length body, never chunked", true, needs...)
	case a.int(protocol.HeaderHandlerStart) < 0:
		c.add(id, what, Missing, "no "+protocol.HeaderHandlerStart+" (unix ns when the handler ran)", true, needs...)
	case abs(time.Duration(a.int(protocol.HeaderHandlerStart)-a.sent.UnixNano())) > 10*time.Second:
		c.add(id, what, Fail, fmt.Sprintf("%s is %s from this clock: want unix nanoseconds", protocol.HeaderHandlerStart,
			time.Duration(a.int(protocol.HeaderHandlerStart)-a.sent.UnixNano()).Round(time.Millisecond)), true, needs...)
	default:
		return true
	}
	return false
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func (c *checker) slow(k *conn) {
	target := "/slow?block=" + checkBlock.String()
	what := "GET " + target + " takes at least 20 ms"
	a, err := k.get(target)
	if err != nil {
		c.add(CheckSlow, what, Fail, err.Error(), true, allPhases...)
		c.add(CheckBlockedNs, protocol.HeaderBlockedNs+" says how long /slow blocked", Skip, "/slow did not answer", false)
		return
	}
	if !c.endpoint(CheckSlow, what, a, allPhases...) {
		c.add(CheckBlockedNs, protocol.HeaderBlockedNs+" says how long /slow blocked", Skip, "/slow did not answer 200", false)
		return
	}
	if a.elapsed < checkBlock*95/100 {
		c.add(CheckSlow, what, Fail, fmt.Sprintf("answered in %s: it did not block (or ignored ?block=)", ms(a.elapsed)), true, allPhases...)
	} else {
		c.add(CheckSlow, what, Pass, fmt.Sprintf("answered in %s", ms(a.elapsed)), true, allPhases...)
	}
	c.blockedNs(CheckBlockedNs, "/slow", a)
}

// blockedNs checks X-Blocked-Ns: present, at least most of the block, and
// no longer than the request took. Without it the ceilings use the
// requested block and say so, so it is required by the protocol but no
// phase needs it.
func (c *checker) blockedNs(id, route string, a answer) {
	what := protocol.HeaderBlockedNs + " says how long " + route + " blocked"
	v := a.int(protocol.HeaderBlockedNs)
	switch {
	case v < 0:
		c.add(id, what, Missing, "no "+protocol.HeaderBlockedNs+": ceilings will use the requested block and say so", true)
	case time.Duration(v) < checkBlock*95/100:
		c.add(id, what, Fail, fmt.Sprintf("says %s for a %s block: want the measured block in nanoseconds", ms(time.Duration(v)), checkBlock), true)
	case time.Duration(v) > a.elapsed:
		c.add(id, what, Fail, fmt.Sprintf("says %s, longer than the whole request took (%s): want nanoseconds", ms(time.Duration(v)), ms(a.elapsed)), true)
	default:
		c.add(id, what, Pass, fmt.Sprintf("%s for a %s block", ms(time.Duration(v)), checkBlock), true)
	}
}

func (c *checker) async(k *conn) {
	target := "/async?delay=" + checkBlock.String()
	what := "GET " + target + " answers after the delay, saying when its continuation ran"
	a, err := k.get(target)
	if err != nil {
		c.add(CheckAsync, what, Fail, err.Error(), true, "stall", "trace")
		return
	}
	if !c.endpoint(CheckAsync, what, a, "stall", "trace") {
		return
	}
	cs, hs := a.int(protocol.HeaderContinuationStart), a.int(protocol.HeaderHandlerStart)
	switch {
	case a.elapsed < checkBlock*95/100:
		c.add(CheckAsync, what, Fail, fmt.Sprintf("answered in %s: the delay was not waited", ms(a.elapsed)), true, "stall", "trace")
	case cs < 0:
		c.add(CheckAsync, what, Missing, "no "+protocol.HeaderContinuationStart+": the trace cannot split the request", true, "trace")
	case time.Duration(cs-hs) < checkBlock*95/100:
		c.add(CheckAsync, what, Fail, fmt.Sprintf("the continuation began %s after the handler: want after the %s delay", ms(time.Duration(cs-hs)), checkBlock), true, "trace")
	default:
		c.add(CheckAsync, what, Pass, fmt.Sprintf("answered in %s, continuation %s after the handler", ms(a.elapsed), ms(time.Duration(cs-hs))), true, "stall", "trace")
	}
}

func (c *checker) offload(k *conn) {
	target := "/offload?block=" + checkBlock.String()
	what := "GET " + target + " answers after the block"
	a, err := k.get(target)
	if err != nil {
		c.add(CheckOffload, what, Fail, err.Error(), true, "offload")
		return
	}
	if !c.endpoint(CheckOffload, what, a, "offload") {
		return
	}
	if a.elapsed < checkBlock*95/100 {
		c.add(CheckOffload, what, Fail, fmt.Sprintf("answered in %s: it did not block", ms(a.elapsed)), true, "offload")
		return
	}
	if v := a.int(protocol.HeaderBlockedNs); v < 0 {
		c.add(CheckOffload, what, Missing, "no "+protocol.HeaderBlockedNs+" on /offload", true)
		return
	}
	c.add(CheckOffload, what, Pass, fmt.Sprintf("answered in %s", ms(a.elapsed)), true, "offload")
}

// keepAlive: five requests on one connection, none closing it.
func (c *checker) keepAlive() {
	what := "five GET /fast on one connection, kept open (HTTP/1.1 keep-alive)"
	k, err := c.dial()
	if err != nil {
		c.add(CheckKeepAlive, what, Fail, err.Error(), true, allPhases...)
		return
	}
	for i := 1; i <= 5; i++ {
		a, err := k.get("/fast")
		switch {
		case err != nil:
			c.add(CheckKeepAlive, what, Fail, fmt.Sprintf("request %d on the connection: %v", i, err), true, allPhases...)
			return
		case a.closed:
			c.add(CheckKeepAlive, what, Fail, fmt.Sprintf("the server closed the connection after answer %d: every request would pay a new connection", i), true, allPhases...)
			return
		}
	}
	c.add(CheckKeepAlive, what, Pass, "5 answers, connection open", true, allPhases...)
}

// errors: the protocol's error answers, each on a fresh connection.
func (c *checker) errors() {
	what := "errors answered as docs/protocol.md says (400, 404, 405, the connection kept or closed; 400 and close on a malformed request)"
	// After a 400, 404 or 405 the connection may be kept or closed: Tomcat
	// and httpd always close it after a 400, and a servlet cannot change it.
	cases := []struct {
		name, raw string
		status    int
		mustClose bool
	}{
		{"?block=abc", "GET /slow?block=abc HTTP/1.1\r\nHost: t\r\n\r\n", 400, false},
		{"unknown path", "GET /nowhere HTTP/1.1\r\nHost: t\r\n\r\n", 404, false},
		{"POST", "POST /fast HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n", 405, false},
		{"malformed request line", "GET\r\n\r\n", 400, true},
	}
	var bad, closed []string
	for _, tc := range cases {
		k, err := c.dial()
		if err != nil {
			bad = append(bad, tc.name+": "+err.Error())
			continue
		}
		a, err := k.raw(tc.raw)
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("%s: %v", tc.name, err))
		case a.status != tc.status:
			bad = append(bad, fmt.Sprintf("%s: status %d, want %d", tc.name, a.status, tc.status))
		case tc.mustClose && !a.closed && k.open():
			bad = append(bad, tc.name+": connection kept open, want closed")
		case !tc.mustClose && a.closed:
			closed = append(closed, strconv.Itoa(tc.status))
		}
	}
	if len(bad) > 0 {
		c.add(CheckErrors, what, Fail, strings.Join(bad, "; "), true)
		return
	}
	reason := "400 ?block=abc, 404, 405, 400 and close on a malformed line"
	if len(closed) > 0 {
		reason += "; the connection closed after " + strings.Join(closed, ", ") + " (allowed, as Tomcat and httpd do)"
	}
	c.add(CheckErrors, what, Pass, reason, true)
}

// loops learns the server's loops from X-Loop and runs the checks that
// need several connections on one loop.
func (c *checker) loops() {
	const what = "X-Loop names the event loop that owns each connection"
	c.byLoop = map[int][]*conn{}
	noLoop, opened := 0, 0
	// Open connections until some loop holds 4 (and at least 16, to see
	// the loops of a server that does not deal round-robin), or maxConns.
	for range maxConns {
		if c.ctx.Err() != nil {
			break
		}
		k, err := c.dial()
		if err != nil {
			c.add(CheckLoops, what, Fail, err.Error(), c.o.Loops > 0, "stall")
			return
		}
		opened++
		a, err := k.get("/fast")
		if err != nil {
			c.add(CheckLoops, what, Fail, err.Error(), c.o.Loops > 0, "stall")
			return
		}
		l := int(a.int(protocol.HeaderLoop))
		if l < 0 {
			noLoop++
			if noLoop >= 4 {
				break
			}
			continue
		}
		c.byLoop[l] = append(c.byLoop[l], k)
		if len(c.byLoop[l]) >= 4 && opened >= 16 {
			break
		}
	}
	loopChecks := []string{CheckSlowHoldsLoop, CheckAsyncFreesLoop, CheckContinuation, CheckOffloadFrees}
	if len(c.byLoop) == 0 {
		if c.o.Loops > 0 {
			c.add(CheckLoops, what, Missing, fmt.Sprintf("no X-Loop on %d answers, but the server was said to have %d loops: the stall phase cannot place connections", noLoop, c.o.Loops), true, "stall")
		} else {
			c.add(CheckLoops, what, Skip, "no X-Loop: taken as a server without event loops (a pool); the loop checks do not apply", false)
		}
		for _, id := range loopChecks {
			c.add(id, "needs event loops", Skip, "no event loops (no X-Loop)", false)
		}
		return
	}
	c.rep.Loops = len(c.byLoop)
	var seen []int
	for l := range c.byLoop {
		seen = append(seen, l)
	}
	slices.Sort(seen)
	noun := "loops"
	if len(seen) == 1 {
		noun = "loop"
	}
	reason := fmt.Sprintf("%d %s seen (%s) over %d connections", len(seen), noun, joinInts(seen), opened)
	switch {
	case noLoop > 0:
		c.add(CheckLoops, what, Fail, fmt.Sprintf("%d answers without X-Loop beside %s", noLoop, reason), true, "stall")
	case c.o.Loops > 0 && len(seen) != c.o.Loops:
		c.add(CheckLoops, what, Fail, fmt.Sprintf("said to have %d loops, but %s", c.o.Loops, reason), true, "stall")
	case seen[len(seen)-1] >= len(seen) && c.o.Loops == 0:
		c.add(CheckLoops, what, Pass, reason+" (numbered beyond what was seen: give loops=N if some loop got no connection)", true, "stall")
	default:
		c.add(CheckLoops, what, Pass, reason, true, "stall")
	}
	c.slowHoldsLoop()
	c.asyncFreesLoop()
	c.continuation()
	c.offloadFrees()
}

// shared returns n open connections on one loop, or nil.
func (c *checker) shared(n int) (int, []*conn) {
	for l := range c.byLoop {
		if len(c.byLoop[l]) >= n {
			return l, c.byLoop[l][:n]
		}
	}
	return -1, nil
}

// together sends target on every connection at once and returns each
// answer's time from the common start.
func together(ks []*conn, targets []string, offsets []time.Duration) ([]answer, []error) {
	as, errs := make([]answer, len(ks)), make([]error, len(ks))
	var wg sync.WaitGroup
	start := time.Now()
	for i, k := range ks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if offsets != nil {
				time.Sleep(time.Until(start.Add(offsets[i])))
			}
			as[i], errs[i] = k.get(targets[i])
			as[i].sinceStart = as[i].done.Sub(start)
		}()
	}
	wg.Wait()
	return as, errs
}
