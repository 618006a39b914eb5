// Package cli is how every command of the kit starts: the flags are parsed
// once, --help exits 0, a bad flag is one line on stderr and exit status 2,
// and the work runs under a context that SIGINT and SIGTERM cancel, so each
// command can stop cleanly and say what it had done.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Main parses args with parse, then runs run and returns its exit status.
func Main[O any](args []string, stderr io.Writer, parse func([]string, io.Writer) (O, error), run func(context.Context, O) int) int {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, o)
}
