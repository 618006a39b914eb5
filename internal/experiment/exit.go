package experiment

import (
	"errors"
	"fmt"
	"io"
)

// ErrFailed: a measurement failed; what was measured is kept and shown,
// and the tables say what failed.
var ErrFailed = errors.New("run.sh: a measurement failed (the tables say which)")

// exitError is an error that asks for an exit status of its own.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func (e *exitError) Unwrap() error { return e.err }

// refused is a run that could not start (a flag, a missing program, a
// refused target): status 2.
func refused(err error) error { return &exitError{code: 2, err: err} }

// errInterrupted: the run was interrupted; what it measured is written up.
var errInterrupted = &exitError{code: 130, err: errors.New("run.sh: interrupted")}

// Exit is the status for Run's error (0, 1 when a measurement failed, 2
// when the run could not start, 130 when interrupted), and writes to
// stderr what the terminal has not been told (the tables tell of failed
// measurements, the progress lines of an interruption).
func Exit(err error, stderr io.Writer) int {
	var e *exitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrFailed):
		return 1
	case err == errInterrupted:
		return 130
	case errors.As(err, &e):
		fmt.Fprintln(stderr, err)
		return e.code
	}
	fmt.Fprintln(stderr, err)
	return 1
}
