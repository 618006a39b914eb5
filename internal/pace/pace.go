// Package pace waits until a moment with sub-millisecond accuracy. Go's
// timers wake through epoll with millisecond timeouts, so time.Sleep alone
// lands up to a millisecond late; Until sleeps until just before the moment
// and yields the rest, for a moment met once (the load generator's start of
// its measured window). What waits often (a probe every few milliseconds)
// waits in the kernel instead: client.Poller's epoll_pwait2.
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
