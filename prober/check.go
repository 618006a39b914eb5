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
// and exit status 0 when every required check passed, 1 when one failed or
// is missing, 3 when none did but some could not be judged (the machine
// was too busy to tell).
func runCheck(ctx context.Context, o options, stdout, stderr io.Writer) int {
	t, err := client.ParseTarget(o.target, o.allowRemote)
	if err != nil {
		fmt.Fprintln(stderr, "prober:", err)
		return 2
	}
	// A server started in the background a moment ago is waited for; one
	// that still refuses is checked, and its checks say so.
	_ = client.AwaitListen(ctx, t.Addr, client.StartWait, func() {
		fmt.Fprintf(stdout, "waiting for %s to listen (up to %v: a server started a moment ago) ...\n", t.Addr, client.StartWait)
	})
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
	switch {
	case rep.Failed():
		return 1
	case rep.Unjudged():
		return 3
	}
	return 0
}
