// Package block is the blocking call whose cost the kit measures: it holds the
// calling goroutine for a duration in one of four ways and reports how long
// it really held it, so a report can compute ceilings from the measured block.
// The fourth is a real database call, SELECT pg_sleep(d) on a connection of
// the server's pool (DB).
package block

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Mode is how a call blocks.
type Mode int

// The modes.
const (
	// Sleep parks the goroutine with time.Sleep: the Go scheduler may run
	// other goroutines on the thread, but the caller waits.
	Sleep Mode = iota
	// Syscall holds the OS thread in nanosleep(2), as a JDBC read or
	// Thread.sleep holds a Java thread.
	Syscall
	// Spin burns CPU until the time is up.
	Spin
	// Postgres asks a PostgreSQL server for SELECT pg_sleep(d) on a
	// connection of the server's pool (DB), as a handler calling its
	// database does: the caller waits in Go's netpoller for the answer,
	// and for a free connection first when all are taken.
	Postgres
)

var modeNames = [...]string{"sleep", "syscall", "spin", "postgres"}

func (m Mode) String() string {
	if m < 0 || int(m) >= len(modeNames) {
		return fmt.Sprintf("Mode(%d)", int(m))
	}
	return modeNames[m]
}

// ParseMode reads "sleep", "syscall", "spin" or "postgres".
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if s == n {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("block: unknown mode %q (want sleep, syscall, spin or postgres)", s)
}

// Set implements flag.Value.
func (m *Mode) Set(s string) error {
	v, err := ParseMode(s)
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// For blocks the caller for d in mode m and returns the time it really took.
// A zero or negative d returns at once. Postgres needs a database: For
// sleeps in its place (Call.For makes the database call).
func For(m Mode, d time.Duration) time.Duration {
	start := time.Now()
	if d <= 0 {
		return time.Since(start)
	}
	switch m {
	case Syscall:
		nanosleep(d)
	case Spin:
		for time.Since(start) < d {
		}
	default:
		time.Sleep(d)
	}
	return time.Since(start)
}

// nanosleep sleeps in the kernel, resuming after a signal with what is left.
func nanosleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for {
		var rem unix.Timespec
		err := unix.Nanosleep(&ts, &rem)
		if !errors.Is(err, unix.EINTR) {
			return
		}
		ts = rem
	}
}
