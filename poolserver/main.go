// Command poolserver serves the kit's endpoint protocol (/fast /slow /async
// /offload) from a fixed pool of worker slots, the Tomcat shape: every
// request holds one of --slots slots while it runs, waiters get slots in
// arrival order, and a blocking call on /slow holds its slot, not everyone's.
//
//	poolserver --slots 200 --block 5ms --addr 127.0.0.1:8082
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/bystander-kit/bystander/internal/cli"
	"github.com/bystander-kit/bystander/internal/serverflags"
)

type options struct {
	serverflags.Common
	slots int
	log   io.Writer
}

func main() { os.Exit(mainExit(os.Args[1:], os.Stdout, os.Stderr)) }

func mainExit(args []string, stdout, stderr io.Writer) int {
	return cli.Main(args, stderr, parseFlags, func(ctx context.Context, o options) int {
		err := run(ctx, o, func(addr, adminAddr net.Addr) {
			pool := fmt.Sprintf("%d slots", o.slots)
			if o.slots == 0 {
				pool = "no pool (unbounded)"
			}
			o.Announce(stdout, stderr, "poolserver", pool, addr, adminAddr, "pool", o.slots)
		})
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		return 0
	})
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	o := options{Common: serverflags.Defaults("127.0.0.1:8082", "127.0.0.1:9082"), log: stderr}
	fs := flag.NewFlagSet("poolserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.Register(fs)
	fs.IntVar(&o.slots, "slots", 200, "worker slots: requests that may run at once (0: no pool, to measure its overhead)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: poolserver [flags]\n\nServes /fast /slow /async /offload from a FIFO pool of worker slots (docs/protocol.md).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args, stderr); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("poolserver: unexpected argument %q (flags only; see --help)", fs.Arg(0))
	}
	return o, o.validate()
}

func (o *options) validate() error {
	if o.slots < 0 || o.slots > 1<<20 {
		return fmt.Errorf("poolserver: --slots %d: want 1 to 1048576 (or 0 for no pool)", o.slots)
	}
	return o.Common.Validate("poolserver")
}
