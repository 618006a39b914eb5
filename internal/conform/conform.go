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
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/bystander-kit/bystander/internal/proc"
	"github.com/bystander-kit/bystander/internal/protocol"
)

// Schema names the JSON form of a Report.
const Schema = "bystander.check/v1"

// The results of one check.
const (
	Pass    = "PASS"
	Fail    = "FAIL"    // the server answers, but not as the protocol says
	Missing = "MISSING" // a header or endpoint the protocol names is absent
	Skip    = "SKIP"    // the check does not apply to this server (said why)
	// Busy: a timing check whose samples were neither what the protocol
	// asks nor what breaks it, every time: on a machine this busy the
	// check cannot tell. Not a failure; said with the figures.
	Busy = "BUSY"
)

// BusyText starts the reason of a check that could not be judged.
const BusyText = "machine too busy to judge"

// The checks, in the order they run.
const (
	CheckFast           = "fast"
	CheckSlow           = "slow-blocks"
	CheckBlockedNs      = "x-blocked-ns"
	CheckAsync          = "async"
	CheckOffload        = "offload"
	CheckKeepAlive      = "keep-alive"
	CheckErrors         = "errors"
	CheckLoops          = "x-loop"
	CheckSlowHoldsLoop  = "slow-holds-loop"
	CheckAsyncFreesLoop = "async-frees-loop"
	CheckContinuation   = "continuation-loop"
	CheckOffloadFrees   = "offload-frees-loop"
)

// Result is one check.
type Result struct {
	ID       string `json:"id"`
	What     string `json:"what"`
	Status   string `json:"status"`
	Reason   string `json:"reason"`
	Required bool   `json:"required"` // a FAIL or MISSING here fails the check as a whole
	// Needs are the run.sh phases that cannot run on the server unless
	// this check passes.
	Needs []string `json:"needs,omitempty"`
}

// Report is every check of one server.
type Report struct {
	Schema string   `json:"schema"`
	Target string   `json:"target"`
	Loops  int      `json:"loops"` // distinct X-Loop values seen; 0: no X-Loop
	Checks []Result `json:"checks"`
}

// OK says whether no required check failed or is missing: each passed,
// does not apply, or could not be judged on a machine too busy.
func (r *Report) OK() bool { return !r.Failed() }

// Failed says whether a required check failed or is missing.
func (r *Report) Failed() bool {
	for _, c := range r.Checks {
		if c.Required && (c.Status == Fail || c.Status == Missing) {
			return true
		}
	}
	return false
}

// Unjudged says whether some check could not be judged (Busy).
func (r *Report) Unjudged() bool {
	for _, c := range r.Checks {
		if c.Status == Busy {
			return true
		}
	}
	return false
}

// NotPassed are the checks that neither passed nor were skipped, as
// "id STATUS: reason" lines, required or not.
func (r *Report) NotPassed() []string {
	var out []string
	for _, c := range r.Checks {
		if c.Status != Pass && c.Status != Skip {
			line := fmt.Sprintf("%s %s: %s", c.ID, c.Status, c.Reason)
			if !c.Required && c.Status != Busy {
				line += " (optional)"
			}
			out = append(out, line)
		}
	}
	return out
}

// Get returns the check with id.
func (r *Report) Get(id string) Result {
	for _, c := range r.Checks {
		if c.ID == id {
			return c
		}
	}
	return Result{ID: id, Status: Skip, Reason: "not run"}
}

// Blocking says why phase cannot run on the server, or "" when no check
// it needs failed or is missing (one too busy to judge does not block it).
func (r *Report) Blocking(phase string) string {
	var why []string
	for _, c := range r.Checks {
		if slices.Contains(c.Needs, phase) && (c.Status == Fail || c.Status == Missing) {
			why = append(why, fmt.Sprintf("%s %s: %s", c.ID, c.Status, c.Reason))
		}
	}
	return strings.Join(why, "; ")
}

// Write prints the report as a table.
func (r *Report) Write(w io.Writer) {
	fmt.Fprintf(w, "check of %s\n", r.Target)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "check\tresult\twhy")
	for _, c := range r.Checks {
		st := c.Status
		if !c.Required && st != Pass && st != Skip {
			st += " (optional)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.ID, st, c.Reason)
	}
	tw.Flush()
	switch {
	case r.Failed():
		fmt.Fprintln(w, "FAILED: the server does not speak the protocol (docs/protocol.md) where marked")
	case r.Unjudged():
		fmt.Fprintln(w, "no required check failed, but some could not be judged ("+BusyText+"): run the check again on a quieter machine")
	default:
		fmt.Fprintln(w, "every required check passed")
	}
}

// JSON is the report as written by --out.
func (r *Report) JSON() []byte {
	b, _ := json.MarshalIndent(r, "", "  ")
	return append(b, '\n')
}

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

// A timing check takes up to maxSamples samples. Each says the server
// behaves as the protocol asks (good), as it must not (bad), or neither
// (unclear: what a busy machine's scheduling could also have made). One
// good sample passes, since a busy machine cannot fake one; two bad ones
// and no good one fail, since one could be the machine; otherwise the
// check could not be judged and says so with every sample's figure.
const maxSamples = 3

type verdict int

const (
	unclear verdict = iota
	good
	bad
)

// judge runs sample until it decides, and adds the check. A sample
// returns its verdict, its figure in words, and an error when a request
// failed (which fails the check: the server did not answer).
func (c *checker) judge(id, what, rule string, needs []string, sample func() (verdict, string, error)) {
	m0, _ := proc.ReadMachine()
	var figs []string
	bads := 0
	for range maxSamples {
		if c.ctx.Err() != nil {
			break
		}
		v, fig, err := sample()
		if err != nil {
			c.add(id, what, Fail, err.Error(), true, needs...)
			return
		}
		figs = append(figs, fig)
		switch v {
		case good:
			c.add(id, what, Pass, fig, true, needs...)
			return
		case bad:
			bads++
			if bads >= 2 {
				c.add(id, what, Fail, strings.Join(figs, "; "), true, needs...)
				return
			}
		}
	}
	m1, _ := proc.ReadMachine()
	c.add(id, what, Busy, fmt.Sprintf("%s: %d samples, %s (%s); the machine was %.0f%% busy meanwhile",
		BusyText, len(figs), strings.Join(figs, "; "), rule, 100*m1.BusySince(m0)), true, needs...)
}

// accepted is how long after its send a request's handler began, from
// the server's own X-Handler-Start on the machine's one clock: how long the
// server left it waiting. A busy machine adds milliseconds to it; a held
// loop adds whole calls.
func (a answer) accepted() time.Duration {
	hs := a.int(protocol.HeaderHandlerStart)
	if hs <= 0 {
		return a.elapsed
	}
	return max(0, time.Duration(hs-a.sent.UnixNano()))
}

// handlersApart is how far apart two answers' handlers began, from the
// server's own X-Handler-Start: a loop held by the first begins the second
// a whole call later; a server that got no CPU begins both late, together.
// Without X-Handler-Start (a check of its own fails then) it is not known:
// apartText says so, and held judges by the sends alone, as it used to.
func handlersApart(a, b answer) time.Duration {
	x, y := a.int(protocol.HeaderHandlerStart), b.int(protocol.HeaderHandlerStart)
	if x <= 0 || y <= 0 {
		return -1
	}
	return time.Duration(max(x-y, y-x))
}

// held says two handlers lie at least d apart (or that it is not known).
func held(apart, d time.Duration) bool { return apart < 0 || apart >= d }

func apartText(apart time.Duration) string {
	if apart < 0 {
		return "?"
	}
	return ms(apart)
}

func (c *checker) slowHoldsLoop() {
	what := fmt.Sprintf("4 concurrent GET /slow?block=%s on one loop are handled one after another (the call holds its loop)", loopBlock)
	l, ks := c.shared(4)
	if ks == nil {
		c.add(CheckSlowHoldsLoop, what, Skip, fmt.Sprintf("could not place 4 connections on one loop in %d tries", maxConns), false)
		return
	}
	t := "/slow?block=" + loopBlock.String()
	// Held, the last of the four is handled three calls after it was sent;
	// side by side, at once. Judged from the server's own timestamps, so
	// neither a late send nor a server that writes its answers together
	// (evio does, at the end of a loop turn) looks like either.
	rule := fmt.Sprintf("held when the last handler began %s or more after its send, side by side under %s", 2*loopBlock, loopBlock/4)
	c.judge(CheckSlowHoldsLoop, what, rule, []string{"sweep", "stall", "trace"}, func() (verdict, string, error) {
		as, errs := together(ks, []string{t, t, t, t}, nil)
		if err := errors.Join(errs...); err != nil {
			return bad, "", err
		}
		last := time.Duration(0)
		for _, a := range as {
			last = max(last, a.accepted())
		}
		fig := fmt.Sprintf("on loop %d the last handler began %s after its send", l, ms(last))
		switch {
		case last >= 2*loopBlock:
			return good, fig, nil
		case last < loopBlock/4:
			return bad, fig + ": they ran side by side, so /slow does not block its loop", nil
		}
		return unclear, fig, nil
	})
}

func (c *checker) asyncFreesLoop() {
	what := fmt.Sprintf("2 concurrent GET /async?delay=%s on one loop are both handled at once (waiting frees the loop)", asyncDelay)
	l, ks := c.shared(2)
	if ks == nil {
		c.add(CheckAsyncFreesLoop, what, Skip, "could not place 2 connections on one loop", false)
		return
	}
	t := "/async?delay=" + asyncDelay.String()
	// A loop held while waiting handles the second request a whole delay
	// after the first began; a free one at once. A busy machine makes both
	// a little late; a starved one makes both late alike (its thread waited
	// for a CPU before it read either), never one a delay after the other.
	rule := fmt.Sprintf("free when both handlers began within %s of their sends, held when one began %s or more after its send and after the other's handler",
		asyncDelay/4, asyncDelay*3/4)
	c.judge(CheckAsyncFreesLoop, what, rule, []string{"stall", "trace"}, func() (verdict, string, error) {
		as, errs := together(ks, []string{t, t}, nil)
		if err := errors.Join(errs...); err != nil {
			return bad, "", err
		}
		last := max(as[0].accepted(), as[1].accepted())
		apart := handlersApart(as[0], as[1])
		fig := fmt.Sprintf("on loop %d the later handler began %s after its send, %s after the other's (answers after %s and %s)", l, ms(last), apartText(apart), ms(as[0].elapsed), ms(as[1].elapsed))
		switch {
		case last < asyncDelay/4:
			return good, fig, nil
		case last >= asyncDelay*3/4 && held(apart, asyncDelay*3/4):
			return bad, fig + ": /async holds the loop while it waits", nil
		}
		return unclear, fig, nil
	})
}

func (c *checker) continuation() {
	what := "X-Continuation-Loop equals X-Loop on /async and /offload (the continuation runs on the connection's loop)"
	_, ks := c.shared(1)
	var bad []string
	for _, t := range []string{"/async?delay=1ms", "/offload?block=1ms"} {
		a, err := ks[0].get(t)
		if err != nil {
			c.add(CheckContinuation, what, Fail, fmt.Sprintf("%s: %v", t, err), true, "trace")
			return
		}
		cl, l := a.int(protocol.HeaderContinuationLoop), a.int(protocol.HeaderLoop)
		switch {
		case cl < 0:
			c.add(CheckContinuation, what, Missing, "no X-Continuation-Loop on "+t, true)
			return
		case cl != l:
			bad = append(bad, fmt.Sprintf("%s: X-Loop %d, X-Continuation-Loop %d", t, l, cl))
		}
	}
	if len(bad) > 0 {
		c.add(CheckContinuation, what, Fail, strings.Join(bad, "; ")+": the answer is written from another loop than the connection's", true, "trace")
		return
	}
	c.add(CheckContinuation, what, Pass, "equal on both", true, "trace")
}

func (c *checker) offloadFrees() {
	what := fmt.Sprintf("GET /fast on a loop is handled at once while /offload?block=%s runs from it (the call is off the loop)", holdBlock)
	l, ks := c.shared(2)
	if ks == nil {
		c.add(CheckOffloadFrees, what, Skip, "could not place 2 connections on one loop", false)
		return
	}
	// /fast is sent a sixth of the block after /offload: held, its handler
	// waits for the rest of the block, and begins a whole block after
	// /offload's; free, it runs at once. A starved server begins both late
	// alike, not a block apart.
	rule := fmt.Sprintf("free when /fast's handler began within %s of its send, held from %s after its send and %s after /offload's handler",
		holdBlock/4, holdBlock/2, holdBlock*3/4)
	c.judge(CheckOffloadFrees, what, rule, []string{"offload"}, func() (verdict, string, error) {
		as, errs := together(ks, []string{"/offload?block=" + holdBlock.String(), "/fast"}, []time.Duration{0, holdBlock / 6})
		if err := errors.Join(errs...); err != nil {
			return bad, "", err
		}
		wait := as[1].accepted()
		apart := handlersApart(as[0], as[1])
		fig := fmt.Sprintf("on loop %d /fast's handler began %s after its send and %s after /offload's, while /offload ran %s", l, ms(wait), apartText(apart), ms(as[0].elapsed))
		switch {
		case wait < holdBlock/4:
			return good, fig, nil
		case wait >= holdBlock/2 && held(apart, holdBlock*3/4):
			return bad, fig + ": /offload holds the loop", nil
		}
		return unclear, fig, nil
	})
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// What the check reads of one answer, which is a stranger's bytes: the
// protocol's answers are a few headers and a one-line body.
const (
	maxHeaderBytes = 16 << 10
	maxHeaderLines = 100
	maxBodyBytes   = 64 << 10
)

// errTooBig is what the capped reader says past its budget.
var errTooBig = errors.New("over what the check reads of one answer")

// capped reads at most n more bytes from r, then says errTooBig.
type capped struct {
	r io.Reader
	n int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.n <= 0 {
		return 0, errTooBig
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	n, err := c.r.Read(p)
	c.n -= int64(n)
	return n, err
}

// conn is one raw client connection.
type conn struct {
	c       *checker
	nc      net.Conn
	lim     *capped // between the connection and br: each answer's budget
	br      *bufio.Reader
	timeout time.Duration
	closed  bool
}

// answer is one response as read.
type answer struct {
	status        int
	header        http.Header
	body          string
	contentLength int64
	closed        bool // the server said it closes, or closed
	sent, done    time.Time
	elapsed       time.Duration // from the write to the end of the answer
	sinceStart    time.Duration // set by together
}

func (a answer) int(name string) int64 {
	v, err := strconv.ParseInt(a.header.Get(name), 10, 64)
	if err != nil {
		return -1
	}
	return v
}

func (c *checker) dial() (*conn, error) {
	d := net.Dialer{Timeout: c.o.Timeout}
	nc, err := d.DialContext(c.ctx, "tcp", c.addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", c.addr, err)
	}
	lim := &capped{r: nc}
	k := &conn{c: c, nc: nc, lim: lim, br: bufio.NewReader(lim), timeout: c.o.Timeout}
	c.conns = append(c.conns, k)
	return k, nil
}

func (c *checker) closeAll() {
	for _, k := range c.conns {
		k.nc.Close()
	}
}

func (k *conn) get(target string) (answer, error) {
	return k.raw("GET " + target + " HTTP/1.1\r\nHost: " + k.c.addr + "\r\nUser-Agent: bystander-check\r\n\r\n")
}

// open says whether the server has not closed the connection: a read
// finds neither data nor an end within a short wait.
func (k *conn) open() bool {
	if k.closed {
		return false
	}
	_ = k.nc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	k.lim.n = 1
	_, err := k.br.Peek(1)
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (k *conn) raw(req string) (answer, error) {
	a := answer{sent: time.Now()}
	if k.closed {
		return a, errors.New("the server closed the connection earlier")
	}
	_ = k.nc.SetDeadline(time.Now().Add(k.timeout))
	method, _, _ := strings.Cut(req, " ")
	if _, err := io.WriteString(k.nc, req); err != nil {
		return a, fmt.Errorf("sending: %w", err)
	}
	// The status line and headers get their budget (and the bufio's
	// read-ahead); the body its own once its length is known and allowed.
	k.lim.n = maxHeaderBytes + 4096
	resp, err := http.ReadResponse(k.br, &http.Request{Method: method})
	if err != nil {
		k.closed = true
		switch {
		case errors.Is(err, errTooBig):
			return a, fmt.Errorf("the status line and headers run over %d KiB, %s", maxHeaderBytes>>10, errTooBig)
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return a, errors.New("the server closed the connection without answering")
		}
		return a, fmt.Errorf("reading the answer: %w", err)
	}
	lines := 0
	for _, v := range resp.Header {
		lines += len(v)
	}
	switch {
	case lines > maxHeaderLines:
		k.closed = true
		return a, fmt.Errorf("%d header lines, over the %d the check reads (%s)", lines, maxHeaderLines, errTooBig)
	case resp.ContentLength > maxBodyBytes:
		k.closed = true // its body is not read
		return a, fmt.Errorf("a body of %d bytes, over the %d KiB the check reads: the protocol's bodies are one line", resp.ContentLength, maxBodyBytes>>10)
	}
	k.lim.n += maxBodyBytes
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes+1))
	if err == nil && len(b) > maxBodyBytes {
		err = fmt.Errorf("the body runs over %d KiB", maxBodyBytes>>10)
	}
	resp.Body.Close()
	a.done = time.Now()
	a.elapsed = a.done.Sub(a.sent)
	if err != nil {
		k.closed = true
		return a, fmt.Errorf("reading the body: %w", err)
	}
	a.status, a.header, a.body, a.contentLength = resp.StatusCode, resp.Header, string(b), resp.ContentLength
	if len(resp.TransferEncoding) > 0 {
		a.contentLength = -1
	}
	a.closed = resp.Close
	if a.closed {
		k.closed = true
	}
	return a, nil
}
