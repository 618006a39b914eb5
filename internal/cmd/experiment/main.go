// Command experiment is the orchestrator run.sh hands over to: it reads
// run.sh's flags (flags.go) into the experiment's Options and runs the
// whole bystander experiment (see internal/experiment and ./run.sh --help).
package main

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/bystander-kit/bystander/internal/cli"
	"github.com/bystander-kit/bystander/internal/experiment"
)

func main() {
	parse := func(args []string, stderr io.Writer) (experiment.Options, error) {
		return parseFlags(args, stderr, time.Now())
	}
	os.Exit(cli.Main(os.Args[1:], os.Stderr, parse, func(ctx context.Context, o experiment.Options) int {
		return experiment.Exit(experiment.Run(ctx, o, os.Stdout, os.Stderr), os.Stderr)
	}))
}
