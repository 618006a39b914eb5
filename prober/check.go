package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/conform"
)

// runCheck is --mode check: the conformance table, the JSON with --out,
// and exit status 0 only when every required check passed.
func runCheck(ctx context.Context, o options, stdout, stderr io.Writer) int {
	t, err := client.ParseTarget(o.target, o.allowRemote)
	if err != nil {
		fmt.Fprintln(stderr, "prober:", err)
		return 2
	}
	rep := conform.Run(ctx, t.Addr, conform.Options{Loops: o.loops, Timeout: o.timeout})
	rep.Write(stdout)
	if o.out != "" {
		if err := os.WriteFile(o.out, rep.JSON(), 0o644); err != nil {
			fmt.Fprintln(stderr, "prober:", err)
			return 1
		}
		fmt.Fprintf(stdout, "prober: wrote %s\n", o.out)
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "prober: interrupted: the check is incomplete")
		return 130
	}
	if !rep.OK() {
		return 1
	}
	return 0
}
