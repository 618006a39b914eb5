// Command experiment is the orchestrator run.sh hands over to: it runs the
// whole bystander experiment (see internal/experiment and ./run.sh --help).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/bystander-kit/bystander/internal/experiment"
)

func main() {
	o, err := experiment.ParseFlags(os.Args[1:], os.Stderr, time.Now())
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(experiment.Run(ctx, o, os.Stdout, os.Stderr))
}
