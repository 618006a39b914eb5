// Package pace waits until a moment with sub-millisecond accuracy. Go's
// timers wake through epoll with millisecond timeouts, so time.Sleep alone
// lands up to a millisecond late; a prober that promises to send within 1 ms
// of the due time sleeps until just before it and yields the rest.
package pace

import (
	"context"
	"runtime"
	"time"
)

// Margin is how long before the moment Until stops sleeping and starts
// yielding the processor in a loop: long enough for a timer's lateness,
// short enough to cost under 2 % of a core at one wait per 50 ms.
const Margin = 1000 * time.Microsecond

// Until returns at t (or at once if t has passed), or when ctx is done,
// reporting whether t was reached.
func Until(ctx context.Context, t time.Time) bool {
	if d := time.Until(t) - Margin; d > 0 {
		timer := time.NewTimer(d)
		select {
		case <-ctx.Done():
			timer.Stop()
			return false
		case <-timer.C:
		}
	}
	for time.Now().Before(t) {
		if ctx.Err() != nil {
			return false
		}
		runtime.Gosched()
	}
	return true
}

// Sleep returns at t or a little after (a timer's lateness, up to about a
// millisecond), or when ctx is done, reporting whether t was reached. It
// costs nothing while it waits: for a caller that waits often (twelve
// connections each probed every 10 ms), Until's last millisecond of
// yielding would cost more than a core.
func Sleep(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// Every calls f with the time, every d, until stop is closed: the servers'
// housekeeping (timeout sweeps, occupancy samples), where a tick a little
// late does no harm.
func Every(stop <-chan struct{}, d time.Duration, f func(now time.Time)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			f(now)
		}
	}
}
