// Command poolserver serves the kit's endpoint protocol (/fast /slow /async
// /offload) from a fixed pool of worker slots, the Tomcat shape: every
// request holds one of --slots slots while it runs, waiters get slots in
// arrival order, and a blocking call on /slow holds its slot, not everyone's.
//
//	poolserver --slots 200 --block 5ms --addr 127.0.0.1:8082
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/bystander-kit/bystander/internal/serverflags"
)

type options struct {
	serverflags.Common
	slots int
	log   io.Writer
}

func main() { os.Exit(mainExit(os.Args[1:], os.Stdout, os.Stderr)) }

func mainExit(args []string, stdout, stderr io.Writer) int {
	return serverflags.Main(args, stderr, parseFlags, run, func(o options, addr, adminAddr net.Addr) {
		pool := fmt.Sprintf("%d slots", o.slots)
		if o.slots == 0 {
			pool = "no pool (unbounded)"
		}
		o.Announce(stdout, stderr, "poolserver", pool, addr, adminAddr, "pool", o.slots)
	})
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	o := options{Common: serverflags.Defaults("127.0.0.1:8082", "127.0.0.1:9082"), log: stderr}
	err := serverflags.Parse("poolserver", "Serves /fast /slow /async /offload from a FIFO pool of worker slots (docs/protocol.md).", &o.Common, args, stderr, func(fs *flag.FlagSet) {
		fs.IntVar(&o.slots, "slots", 200, "worker slots: requests that may run at once (0: no pool, to measure its overhead)")
	})
	if err != nil {
		return o, err
	}
	return o, o.validate()
}

func (o *options) validate() error {
	if o.slots < 0 || o.slots > 1<<20 {
		return fmt.Errorf("poolserver: --slots %d: want 1 to 1048576 (or 0 for no pool)", o.slots)
	}
	return o.Common.Validate("poolserver")
}
