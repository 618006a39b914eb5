// Command loadgen drives one endpoint with keep-alive connections and says
// what it got: throughput after a warm-up, latency percentiles, errors by
// kind, requests per event loop, the mean measured block and its own cost.
//
//	loadgen --target http://127.0.0.1:8081/slow --conc 64 --duration 8s --warmup 1s --out slow.json
//
// Closed model by default: each connection sends its next request when the
// previous answer arrives. The connections are driven as wrk drives them,
// from one goroutine through an epoll set (client.Poller; --threads for
// more), a write and a read per request. --rate R switches to an open model at R req/s
// spread over the connections, with latency measured from each request's
// intended send time as wrk2 does, and the uncorrected figure beside it.
//
// --load REQUEST sends a user's own requests instead of GET of the target's
// path: 'METHOD PATH' or @FILE in vegeta's HTTP targets format, several
// sent round robin (internal/request); --target is then the server's base
// URL:
//
//	loadgen --target http://127.0.0.1:8080 --load 'POST /login' --conc 4
//	loadgen --target http://127.0.0.1:8080 --load @targets.txt
//
// --switch-to URL --switch-at D sends every connection's requests to a second
// target of the same server from D into the window on (run.sh's slip phase:
// the same endpoint with a slower ?block=); --tick D counts the answers in
// steps of D too, with the block the server said in each.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/bystander-kit/bystander/internal/cli"
	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/live"
	"github.com/bystander-kit/bystander/internal/request"
	"github.com/bystander-kit/bystander/internal/results"
)

// Bounds on how long a run may be: every load loop stops by itself.
const (
	maxDuration = time.Hour
	maxWarmup   = 10 * time.Minute
	maxConc     = client.MaxConns
)

type options struct {
	target      string
	load        string
	spec        *request.Spec // --load, parsed and read once; nil without
	conc        int
	threads     int
	duration    time.Duration
	warmup      time.Duration
	timeout     time.Duration
	rate        float64
	out         string
	allowRemote bool
	quiet       bool
	startAt     cli.StartAt
	switchTo    string
	switchAt    time.Duration
	switchWhen  string
	tick        time.Duration
	liveOut     string
	live        *live.Writer
	args        []string
}

func main() { os.Exit(mainExit(os.Args[1:], os.Stdout, os.Stderr)) }

func mainExit(args []string, stdout, stderr io.Writer) int {
	return cli.Main(args, stderr, parseFlags, func(ctx context.Context, o options) int {
		lw, err := live.Create(o.liveOut)
		if err != nil {
			fmt.Fprintln(stderr, "loadgen: --live-out:", err)
			return 1
		}
		defer lw.Close()
		o.live = lw
		res, err := run(ctx, o, progressTo(stderr, o.quiet))
		if res == nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		summary(stdout, o, res)
		if l := res.LateLine(); l != "" {
			fmt.Fprintln(stderr, l)
		}
		code := results.WriteExit(o.out, res, stdout, stderr)
		if err != nil { // no answer: what was measured is written, and said
			fmt.Fprintln(stderr, err)
			return max(code, 1)
		}
		return code
	})
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	o := options{args: args}
	fs := cli.Flags("loadgen", "Usage: loadgen --target URL [flags]\n       loadgen --target http://HOST:PORT --load REQUEST [flags]\n\n"+
		"Drives one endpoint, or your own requests (--load), with keep-alive connections (closed model, or open with --rate).")
	fs.StringVar(&o.target, "target", "http://127.0.0.1:8081/slow", "URL to load (loopback only unless --allow-remote); with --load, the server's base URL (http://host:port)")
	fs.StringVar(&o.load, "load", "", "send this instead of GET of --target's path: 'METHOD PATH' (such as 'POST /login'), or @FILE in vegeta's HTTP targets format\n"+
		"(METHOD URL lines, header lines, @body lines; several requests are sent round robin); https:// is refused")
	fs.IntVar(&o.conc, "conc", 16, "keep-alive connections, each with one request in flight")
	fs.IntVar(&o.threads, "threads", 1, "goroutines driving the connections, each its share through its own epoll set (1 to 64)")
	fs.DurationVar(&o.duration, "duration", 8*time.Second, "measured time, after the warm-up (at most 1h)")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "time before measuring starts (at most 10m)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "per-request timeout")
	fs.Float64Var(&o.rate, "rate", 0, "open model: requests per second over all connections (0: closed model)")
	fs.StringVar(&o.out, "out", "", "write the result as JSON (schema "+results.Schema+") to this file")
	fs.BoolVar(&o.allowRemote, "allow-remote", false, "allow a target that is not a loopback address")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress line on stderr")
	fs.StringVar(&o.liveOut, "live-out", "", "append, 4 times a second, the requests answered so far as a JSON line to this file (for run.sh --stage)")
	fs.StringVar(&o.switchTo, "switch-to", "", "from --switch-at on, send the requests to this URL instead (the same server: another path or ?block=)")
	fs.DurationVar(&o.switchAt, "switch-at", 0, "with --switch-to: when, into the measured window, each connection's next request goes there")
	fs.StringVar(&o.switchWhen, "switch-when", "", "with --switch-to: switch as soon as this file exists (run.sh --stage makes it at the presenter's key), --switch-at into the window at the latest")
	fs.DurationVar(&o.tick, "tick", 0, "also count answers, and the block the server said, in steps of this (10ms or more; 0: per second only)")
	fs.Var(&o.startAt, "start-at", "start the run's clock (warm-up first) at this RFC 3339 time, within a minute of now, to share a window with another tool (default: once connected)")
	if err := cli.ParseOnly(fs, args, stderr); err != nil {
		return o, err
	}
	switch {
	case o.conc < 1 || o.conc > maxConc:
		return o, fmt.Errorf("loadgen: --conc %d: want 1 to %d", o.conc, maxConc)
	case o.threads < 1 || o.threads > 64:
		return o, fmt.Errorf("loadgen: --threads %d: want 1 to 64", o.threads)
	case o.duration <= 0 || o.duration > maxDuration:
		return o, fmt.Errorf("loadgen: --duration %s: want more than 0 and at most %s", o.duration, maxDuration)
	case o.warmup < 0 || o.warmup > maxWarmup:
		return o, fmt.Errorf("loadgen: --warmup %s: want 0 to %s", o.warmup, maxWarmup)
	case o.timeout <= 0:
		return o, fmt.Errorf("loadgen: --timeout %s: want a positive duration", o.timeout)
	case o.rate < 0 || o.rate > 1e7:
		return o, fmt.Errorf("loadgen: --rate %g: want 0 (closed model) to 1e7", o.rate)
	}
	t, err := client.ParseTarget(o.target, o.allowRemote)
	if err != nil {
		return o, fmt.Errorf("loadgen: --target: %w", err)
	}
	if o.load != "" {
		if t.RequestTarget != "/" {
			return o, fmt.Errorf("loadgen: --target %s with --load: give the server's base URL (http://%s); the requests say their paths", o.target, t.Addr)
		}
		if o.switchTo != "" {
			return o, fmt.Errorf("loadgen: --switch-to goes without --load (it switches a GET to another path)")
		}
		// Read and checked before anything is dialled: a bad line is one
		// error with its line number.
		if o.spec, err = request.Parse(o.load, t.Addr); err != nil {
			return o, fmt.Errorf("loadgen: --load: %w", err)
		}
	}
	if o.switchWhen != "" && o.switchTo == "" {
		return o, fmt.Errorf("loadgen: --switch-when goes with --switch-to and --switch-at (the latest moment)")
	}
	if o.switchWhen != "" {
		// The switch comes when the file is made: one there already (a
		// file, a directory, a FIFO, a link) would switch at the window's
		// first step.
		if _, err := os.Lstat(o.switchWhen); err == nil {
			return o, fmt.Errorf("loadgen: --switch-when %s is there already: it would switch at the first step; give a path not made yet (the switch comes when it is)", o.switchWhen)
		} else if !errors.Is(err, os.ErrNotExist) {
			return o, fmt.Errorf("loadgen: --switch-when: %v", err)
		}
	}
	if o.switchTo != "" || o.switchAt != 0 {
		to, err := client.ParseTarget(o.switchTo, o.allowRemote)
		switch {
		case o.switchTo == "":
			return o, fmt.Errorf("loadgen: --switch-at goes with --switch-to")
		case err != nil:
			return o, fmt.Errorf("loadgen: --switch-to: %w", err)
		case to.Addr != t.Addr:
			return o, fmt.Errorf("loadgen: --switch-to %s: want the --target's server (%s): the connections stay open", to.Addr, t.Addr)
		case o.switchAt <= 0 || o.switchAt >= o.duration:
			return o, fmt.Errorf("loadgen: --switch-at %s: want a moment inside the measured window (more than 0, less than --duration %s)", o.switchAt, o.duration)
		}
	}
	if o.tick != 0 && (o.tick < 10*time.Millisecond || o.tick > o.duration || o.duration/o.tick > results.MaxSeriesPoints) {
		return o, fmt.Errorf("loadgen: --tick %s: want 10ms or more, at most --duration, and at most %d steps in it", o.tick, results.MaxSeriesPoints)
	}
	if o.out != "" {
		if err := results.CheckWritable(o.out); err != nil {
			return o, fmt.Errorf("loadgen: --out: %w", err)
		}
	}
	return o, nil
}

// progressTo returns a function printing one progress line per second on a
// terminal, or nil.
func progressTo(w io.Writer, quiet bool) func(elapsed, total time.Duration, requests int64) {
	f, ok := w.(*os.File)
	if quiet || !ok {
		return nil
	}
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return func(elapsed, total time.Duration, requests int64) {
		fmt.Fprintf(w, "\rloadgen: %4.1fs of %s, %d requests ", elapsed.Seconds(), total, requests)
		if elapsed >= total {
			fmt.Fprintln(w)
		}
	}
}

func summary(w io.Writer, o options, r *results.Result) {
	l := r.Load
	model := "closed"
	if o.rate > 0 {
		model = fmt.Sprintf("open at %g req/s", o.rate)
	}
	what := o.target
	if r.Params.Request != "" {
		what += " " + r.Params.Request
	}
	fmt.Fprintf(w, "loadgen: %s, %d conns, %s model: %.1f req/s over %.1fs after %s warm-up\n",
		what, o.conc, model, l.ThroughputPerS, float64(l.MeasuredNs)/1e9, o.warmup)
	fmt.Fprintf(w, "loadgen: latency p50 %s p90 %s p99 %s p99.9 %s max %s\n",
		us(l.Latency.P50Us), us(l.Latency.P90Us), us(l.Latency.P99Us), us(l.Latency.P999Us), us(l.Latency.MaxUs))
	if l.LatencyUncorrected != nil {
		fmt.Fprintf(w, "loadgen: uncorrected (from actual send) p50 %s p99 %s; %d requests behind schedule\n",
			us(l.LatencyUncorrected.P50Us), us(l.LatencyUncorrected.P99Us), l.BehindSchedule)
	}
	if o.switchTo != "" {
		fmt.Fprintf(w, "loadgen: from %s into the window on, each connection's requests went to %s\n", time.Duration(r.Params.SwitchAtNs), o.switchTo)
	}
	if len(l.Ticks) > 0 {
		fmt.Fprintf(w, "loadgen: answers in %d steps of %s (the result's load.ticks)\n", len(l.Ticks), o.tick)
	}
	fmt.Fprintf(w, "loadgen: errors %s; connections dialled %d\n", results.ErrorsLine(r.Errors), l.Dials)
	if len(l.RequestsPerLoop) > 0 {
		fmt.Fprintf(w, "loadgen: requests per loop %v\n", l.RequestsPerLoop)
	}
	if l.BlockedSamples > 0 {
		fmt.Fprintf(w, "loadgen: mean measured block %.3fms\n", l.MeanBlockedNs/1e6)
	}
	fmt.Fprintf(w, "loadgen: own CPU %.1f us per request\n", r.Generator.CPUUsPerRequest)
	if r.Partial {
		fmt.Fprintf(w, "loadgen: PARTIAL result: %s\n", r.PartialReason)
	}
}

func us(v float64) string { return time.Duration(v * float64(time.Microsecond)).String() }
