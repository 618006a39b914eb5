package conform

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/proc"
	"github.com/bystander-kit/bystander/internal/protocol"
)

// The timing checks: what a blocking call holds, judged over a few
// samples so that a busy machine cannot pass or fail a server.

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
