package client

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"
)

// StartWait is how long a target that refuses connections is waited for
// before it is refused: a server started in the background a moment before
// (a walk-through's `server & ./run.sh ...`; a JVM listens a second or two
// after it starts).
const StartWait = 10 * time.Second

// AwaitListen dials addr until it accepts a connection (closed at once) or
// within has passed. Only a refused dial is retried, every 50 ms, and
// waiting is called once when the first is refused; any other error, or the
// last refusal, is returned.
func AwaitListen(ctx context.Context, addr string, within time.Duration, waiting func()) error {
	deadline := time.Now().Add(within)
	var d net.Dialer
	for first := true; ; first = false {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := d.DialContext(dctx, "tcp", addr)
		cancel()
		if err == nil {
			c.Close()
			return nil
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) {
			return err
		}
		if first {
			waiting()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
