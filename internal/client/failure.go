package client

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// How a request failed, and how a tool paces and counts failures.

// Kind classifies a failed request.
type Kind string

// The kinds of failure.
const (
	Refused   Kind = "refused"   // nothing listens (connection refused)
	Reset     Kind = "reset"     // the peer reset the connection
	Timeout   Kind = "timeout"   // no answer within the deadline
	Closed    Kind = "closed"    // the server closed the connection before answering
	Malformed Kind = "malformed" // the answer is not HTTP/1.1 this client can read
	BadStatus Kind = "bad_status"
	Other     Kind = "other"
)

// Kinds lists every kind in a fixed order, for reports.
var Kinds = []Kind{Refused, Reset, Timeout, Closed, Malformed, BadStatus, Other}

// FirstPause is how long a connection that asks back to back waits after a
// failed answer before it asks again; each further failure in a row makes
// the pause four times longer, up to MaxPause, and an answer ends the run
// of failures (Backoff). A server that refuses, resets, closes, or answers
// what cannot be read is not spun on: 16 connections against one dialled
// 18,911 times in 3 s, leaving 12,000 sockets in TIME_WAIT; each connection
// now asks 5 times in its first second (after 0, 10, 50, 210 and 850 ms)
// and once a second after.
const (
	FirstPause = 10 * time.Millisecond
	MaxPause   = time.Second
)

// Pauses says whether a request that ended with err (r its answer, read
// whole or not) calls for a pause before the connection asks again: every
// failure does (refused, reset, closed, timeout, an answer that cannot be
// read), but a bad status on a connection the server keeps open. That one
// is an answer read whole on a connection that stays: asking again costs
// no dial and is paced by the server's answers as a 200 is; and a server
// that sheds load with a 503 (the offload queue full, a database that
// refuses) is answering the load, so a caller that paused after it would
// lower the load exactly when it is being measured.
func Pauses(r *Response, err error) bool {
	switch {
	case err == nil, errors.Is(err, ErrInterrupted):
		return false
	case KindOf(err) == BadStatus:
		return r == nil || r.Close
	}
	return true
}

// Backoff paces one connection that asks back to back (Pauses, FirstPause,
// MaxPause). The zero value has no pause. Not safe for concurrent use: the
// connection's driver owns it.
type Backoff struct {
	until time.Time
	pause time.Duration
}

// After books how the connection's request that ended at end went.
func (b *Backoff) After(r *Response, err error, end time.Time) {
	if errors.Is(err, ErrInterrupted) {
		return
	}
	if !Pauses(r, err) {
		b.pause, b.until = 0, time.Time{}
		return
	}
	b.pause = min(max(4*b.pause, FirstPause), MaxPause)
	b.until = end.Add(b.pause)
}

// Due is when a request due at due may leave: not before the pause ends.
func (b *Backoff) Due(due time.Time) time.Time {
	if b.until.After(due) {
		return b.until
	}
	return due
}

// Paused says whether the connection's last request failed and called
// for a pause (its next one asks again, maybe on a new connection).
func (b *Backoff) Paused() bool { return b.pause > 0 }

// RedialEvery spaces the requests that follow a failed answer over all of
// a tool's connections (Redials): at most 100 a second whatever --conc,
// where each connection's own Backoff alone let 64 connections dial 165
// times a second against a server that answers garbage.
const RedialEvery = 10 * time.Millisecond

// Redials is the one pace of a tool's requests after failed answers (a
// failed answer's next request often dials anew). Its zero value is ready;
// safe for concurrent use (a tool's pollers share one).
type Redials struct {
	mu   sync.Mutex
	next time.Time
}

// Due books a request after a failed answer, due at due, and says when it
// may leave: not before RedialEvery after the one booked before it.
func (r *Redials) Due(due time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next.After(due) {
		due = r.next
	}
	r.next = due.Add(RedialEvery)
	return due
}

// ErrNoAnswer is what a tool says, beside what it measured, when no
// request of its run was answered (Tally.NoAnswer).
var ErrNoAnswer = errors.New("no answer")

// Tally counts how a tool's requests ended, over its whole run, so that a
// run that got no answer says so and what it got instead. Not safe for
// concurrent use: keep one per goroutine and Merge them.
type Tally struct {
	answered int64
	failed   [8]int64 // by Kinds' order
	first    error
}

// Add books one request's end (ErrInterrupted is no end: not booked).
func (t *Tally) Add(err error) {
	switch {
	case err == nil:
		t.answered++
	case errors.Is(err, ErrInterrupted):
	default:
		k := KindOf(err)
		i := slices.Index(Kinds, k)
		if i < 0 {
			i = slices.Index(Kinds, Other)
		}
		t.failed[i]++
		if t.first == nil {
			t.first = err
		}
	}
}

// Merge adds o's counts to t's (t's first failure stays first).
func (t *Tally) Merge(o *Tally) {
	t.answered += o.answered
	for i, n := range o.failed {
		t.failed[i] += n
	}
	if t.first == nil {
		t.first = o.first
	}
}

// Answered is how many requests were answered (a 2xx or 3xx read whole).
func (t *Tally) Answered() int64 { return t.answered }

// NoAnswer is nil when some request was answered; otherwise an error
// (ErrNoAnswer) saying what the run of length took got instead, as "no
// answer in 3s: 18 malformed (first: ...)".
func (t *Tally) NoAnswer(took time.Duration) error {
	if t.answered > 0 {
		return nil
	}
	var parts []string
	for i, n := range t.failed {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, Kinds[i]))
		}
	}
	took = took.Round(100 * time.Millisecond)
	if len(parts) == 0 {
		return fmt.Errorf("%w in %s: no request ended", ErrNoAnswer, took)
	}
	return fmt.Errorf("%w in %s: %s (first: %v)", ErrNoAnswer, took, strings.Join(parts, ", "), t.first)
}

// Error is a failed request with its kind.
type Error struct {
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("client: %s: %v", e.Kind, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// KindOf classifies err (nil for no error).
func KindOf(err error) Kind {
	if err == nil {
		return ""
	}
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Kind
	}
	return classify(err)
}

func classify(err error) Kind {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return Refused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return Reset
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return Timeout
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return Closed
	}
	return Other
}
