// Command prober measures what a bystander sees while something else loads
// a server. Three modes:
//
//	prober --mode interval --target http://127.0.0.1:8081/fast --interval 50ms --duration 8s --out fast.json
//	prober --mode perconn  --target http://127.0.0.1:8081/async --conns 12 --duration 5s --out conns.json
//	prober --mode trace    --target http://127.0.0.1:8081/async --duration 5s --out trace.json
//
// interval: probes due at t0 + warm-up + k x interval whatever happened
// before, each timed from its due time (corrected) and from its actual
// send; every due probe is counted (answered, failed, or censored when the
// window ended first), and the whole timeline is kept.
// perconn: opens the connections first, learns each one's loop and the
// unblocked baseline, says it is ready, then probes each connection on its
// own fixed schedule and says which stalled.
// trace: takes /async requests apart into accepted, continuation lateness
// and return, from the protocol's timing headers.
// --bystander REQUEST (interval and perconn) probes with a user's own
// requests instead of GET of the target's path: 'METHOD PATH' or @FILE in
// vegeta's HTTP targets format, several sent round robin on each
// connection (internal/request); --target is then the server's base URL:
//
//	prober --mode perconn --target http://127.0.0.1:8080 --bystander 'GET /health'
//
// check: checks that the server at --target (its base URL) speaks the
// protocol, as a table of PASS / FAIL / MISSING / SKIP / BUSY with a reason
// each; exits 0 when every required check passes, 1 when one fails or is
// missing, 3 when none does but a timing check could not be judged (BUSY:
// the machine was too busy to tell):
//
//	prober --mode check --target http://127.0.0.1:8081 [--loops 4] [--out check.json]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/cli"
	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/conform"
	"github.com/bystander-kit/bystander/internal/live"
	"github.com/bystander-kit/bystander/internal/request"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/stall"
)

const (
	maxDuration = time.Hour
	maxConns    = 1000
)

type options struct {
	mode        string
	target      string
	bystander   string
	spec        *request.Spec // --bystander, parsed and read once; nil without
	conns       int
	interval    time.Duration
	duration    time.Duration
	warmup      time.Duration
	timeout     time.Duration
	block       results.Block
	delay       time.Duration
	startAt     cli.StartAt
	readyFile   string
	out         string
	allowRemote bool
	loops       int
	liveOut     string
	live        *live.Writer
	args        []string
}

func main() { os.Exit(mainExit(os.Args[1:], os.Stdout, os.Stderr)) }

func mainExit(args []string, stdout, stderr io.Writer) int {
	return cli.Main(args, stderr, parseFlags, func(ctx context.Context, o options) int {
		if o.mode == "check" {
			return runCheck(ctx, o, stdout, stderr)
		}
		lw, err := live.Create(o.liveOut)
		if err != nil {
			fmt.Fprintln(stderr, "prober: --live-out:", err)
			return 1
		}
		defer lw.Close()
		o.live = lw
		res, err := run(ctx, o, stdout)
		if res == nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		summary(stdout, res)
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
	fs := cli.Flags("prober", "Usage: prober --mode interval|perconn|trace --target URL [flags]\n       prober --mode interval|perconn --target http://HOST:PORT --bystander REQUEST [flags]\n       prober --mode check --target http://HOST:PORT [--loops N] [--out FILE]\n\n"+
		"Measures what a bystander sees while a server is loaded; with --mode check, checks that a\nserver speaks the endpoint protocol (one not listening yet is waited for up to 10 s; exit status 0 when every required check passes, 1 when one\nfails or is missing, 3 when none does but the machine was too busy to judge a timing check).")
	o.register(fs)
	if err := cli.ParseOnly(fs, args, stderr); err != nil {
		return o, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, check := range []func(set map[string]bool) error{o.byMode, o.inRange, o.requests} {
		if err := check(set); err != nil {
			return o, err
		}
	}
	return o, nil
}

// register puts the prober's flags on fs.
func (o *options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.mode, "mode", "interval", "interval, perconn, trace, or check (does the server at --target speak the protocol?)")
	fs.StringVar(&o.target, "target", "http://127.0.0.1:8081/fast", "URL to probe (loopback only unless --allow-remote); check: the server's base URL, http://host:port")
	fs.StringVar(&o.bystander, "bystander", "", "interval and perconn: probe with this instead of GET of --target's path: 'METHOD PATH' (such as 'GET /health'),\n"+
		"or @FILE in vegeta's HTTP targets format (several requests are sent round robin); --target is then the server's base URL")
	fs.IntVar(&o.loops, "loops", 0, "check: the server has this many event loops (default: learned from X-Loop; none seen, a server without loops)")
	fs.IntVar(&o.conns, "conns", 0, "keep-alive connections (default: 1 for interval and trace, 12 for perconn)")
	fs.DurationVar(&o.interval, "interval", 0, "time between due probes on a connection (default: 50ms for interval, 10ms for perconn; 0, back-to-back, for trace)")
	fs.DurationVar(&o.duration, "duration", 8*time.Second, "how long to probe (at most 1h)")
	fs.DurationVar(&o.warmup, "warmup", 0, "time after the start before the window (added to --duration); interval mode sends nothing meanwhile")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "per-request timeout")
	fs.Var(&o.block, "block", "perconn: the `duration` of the blocking call that may hold the loops, when you know it: a connection then stalled at half of it or more (recorded in the result); "+
		"without it the verdict comes from the data: connections whose waits lie 3x or more above all the others' stalled, and waits that do not separate get no count")
	fs.Var(&o.startAt, "start-at", "start the run's clock (warm-up first) at this RFC 3339 time, within a minute of now, to share a window with loadgen (default: once connected)")
	fs.DurationVar(&o.delay, "delay", 0, "trace and perconn: the /async delay the target asks for, taken from what the server made each probe wait (default: ?delay= of the target, else 5ms)")
	fs.StringVar(&o.liveOut, "live-out", "", "interval and perconn: append each probe (connection, loop, latency from due) as a JSON line to this file as it comes back (for run.sh --stage)")
	fs.StringVar(&o.readyFile, "ready-file", "", "perconn: write this file once the connections are open and placed; interval: once they are open")
	fs.StringVar(&o.out, "out", "", "write the result as JSON (schema "+results.Schema+"; check: "+conform.Schema+") to this file")
	fs.BoolVar(&o.allowRemote, "allow-remote", false, "allow a target that is not a loopback address")
}

// byMode gives the flags the mode's defaults that were not set, and
// refuses what the mode cannot do.
func (o *options) byMode(set map[string]bool) error {
	switch o.mode {
	case "interval":
		if !set["interval"] {
			o.interval = 50 * time.Millisecond
		}
		if o.interval <= 0 {
			return fmt.Errorf("prober: --interval %s: interval mode needs a positive interval", o.interval)
		}
	case "perconn":
		if !set["interval"] {
			o.interval = 10 * time.Millisecond
		}
		if o.interval <= 0 {
			return fmt.Errorf("prober: --interval %s: perconn probes on a schedule (back-to-back probing samples only the moments a loop is free)", o.interval)
		}
	case "trace":
	case "check":
		if !set["target"] {
			o.target = "http://127.0.0.1:8081"
		}
		if u, err := url.Parse(o.target); err == nil && u.Path != "" && u.Path != "/" {
			return fmt.Errorf("prober: --mode check --target %q: give the server's base URL (http://host:port), the check picks the paths", o.target)
		}
		if o.loops < 0 || o.loops > 1024 {
			return fmt.Errorf("prober: --loops %d: want 0 (learn them) to 1024", o.loops)
		}
	default:
		return fmt.Errorf("prober: --mode %q: want interval, perconn, trace or check", o.mode)
	}
	if set["loops"] && o.mode != "check" {
		return fmt.Errorf("prober: --loops is for --mode check")
	}
	if !set["conns"] {
		o.conns = 1
		if o.mode == "perconn" {
			o.conns = 12
		}
	}
	return nil
}

// inRange refuses a value out of its range.
func (o *options) inRange(map[string]bool) error {
	switch {
	case o.conns < 1 || o.conns > maxConns:
		return fmt.Errorf("prober: --conns %d: want 1 to %d", o.conns, maxConns)
	case o.duration <= 0 || o.duration > maxDuration:
		return fmt.Errorf("prober: --duration %s: want more than 0 and at most %s", o.duration, maxDuration)
	case o.interval < 0:
		return fmt.Errorf("prober: --interval %s: want 0 or more", o.interval)
	case o.warmup < 0 || o.warmup > 10*time.Minute:
		return fmt.Errorf("prober: --warmup %s: want 0 to 10m", o.warmup)
	case o.timeout <= 0:
		return fmt.Errorf("prober: --timeout %s: want a positive duration", o.timeout)
	case o.block < 0:
		return fmt.Errorf("prober: --block %s: want 0 or more", o.block)
	case o.delay < 0:
		return fmt.Errorf("prober: --delay %s: want 0 or more", o.delay)
	}
	if o.readyFile != "" && o.mode == "trace" {
		return fmt.Errorf("prober: --ready-file is for --mode perconn and interval")
	}
	return nil
}

// requests reads the target and the bystander's requests, checks --out
// is writable, and gives trace and perconn the delay the target asks for.
func (o *options) requests(set map[string]bool) error {
	t, err := client.ParseTarget(o.target, o.allowRemote)
	if err != nil {
		return fmt.Errorf("prober: --target: %w", err)
	}
	if o.bystander != "" {
		switch {
		case o.mode == "trace" || o.mode == "check":
			return fmt.Errorf("prober: --bystander is for --mode interval and perconn: --mode %s asks for the protocol's own endpoints", o.mode)
		case t.RequestTarget != "/":
			return fmt.Errorf("prober: --target %s with --bystander: give the server's base URL (http://%s); the requests say their paths", o.target, t.Addr)
		}
		// Read and checked before anything is dialled.
		if o.spec, err = request.Parse(o.bystander, t.Addr); err != nil {
			return fmt.Errorf("prober: --bystander: %w", err)
		}
	}
	if o.out != "" {
		if err := results.CheckWritable(o.out); err != nil {
			return fmt.Errorf("prober: --out: %w", err)
		}
	}
	if (o.mode == "trace" || o.mode == "perconn") && !set["delay"] && o.spec == nil {
		o.delay = 5 * time.Millisecond
		if u, err := url.Parse(o.target); err == nil {
			if d, err := time.ParseDuration(u.Query().Get("delay")); err == nil {
				o.delay = d
			}
		}
	}
	return nil
}

func run(ctx context.Context, o options, stdout io.Writer) (*results.Result, error) {
	switch o.mode {
	case "perconn":
		return runPerConn(ctx, o, stdout)
	case "trace":
		return runTrace(ctx, o)
	}
	return runInterval(ctx, o)
}

func summary(w io.Writer, r *results.Result) {
	what := r.Params.Target
	if r.Params.Request != "" {
		what += " " + r.Params.Request
	}
	fmt.Fprintf(w, "prober: %s mode on %s, %d conns; errors %s\n", r.Mode, what, r.Params.Conns, results.ErrorsLine(r.Errors))
	switch {
	case r.Probe != nil:
		p := r.Probe
		var where []string
		for _, c := range p.Conns {
			where = append(where, fmt.Sprintf("conn %d on loop %d", c.Conn, c.Loop))
		}
		fmt.Fprintf(w, "prober: %d probes due in %s: %d answered, %d failed, %d censored (unanswered when the window ended); %d sent late; %s\n",
			p.Due, time.Duration(p.WindowNs), p.Completed, p.Failed, p.Censored, p.Late, strings.Join(where, ", "))
		fmt.Fprintf(w, "prober: corrected (from due time)   p50 %s p95 %s p99 %s max %s\n", us(p.Corrected.P50Us), us(p.Corrected.P95Us), us(p.Corrected.P99Us), us(p.Corrected.MaxUs))
		fmt.Fprintf(w, "prober: uncorrected (from send)     p50 %s p95 %s p99 %s max %s\n", us(p.Uncorrected.P50Us), us(p.Uncorrected.P95Us), us(p.Uncorrected.P99Us), us(p.Uncorrected.MaxUs))
		fmt.Fprintf(w, "prober: send lag behind due time    p50 %s p99 %s max %s\n", us(p.SendLag.P50Us), us(p.SendLag.P99Us), us(p.SendLag.MaxUs))
	case r.PerConn != nil:
		p := r.PerConn
		v := stall.Judge(stall.From(p), r.Params.StallBlock.D(), stall.Machine{})
		switch {
		case v.Judged && v.FromData:
			fmt.Fprintf(w, "prober: stalled %d of %d: %s\n", v.Count, len(p.Conns), v.Said)
			fmt.Fprintf(w, "prober: (%s; --block judges them against a known call)\n", stall.RuleFromData)
		case v.Judged:
			fmt.Fprintf(w, "prober: stalled %d of %d (%s; here from %s)\n", v.Count, len(p.Conns), stall.Rule, v.Above)
		default:
			fmt.Fprintf(w, "prober: %s\n", v.Why)
		}
		for i, c := range p.Conns {
			mark := ""
			if v.Stalled[i] {
				mark = "  STALLED"
			}
			fmt.Fprintf(w, "prober:   conn %2d loop %2d: server wait p50 %9s, from due p50 %9s p95 %9s max %9s, %d of %d due answered, %d censored%s\n", c.Conn, c.Loop,
				us(c.ServerWait.P50Us), us(c.Latency.P50Us), us(c.Latency.P95Us), us(c.Latency.MaxUs), c.Samples, c.Due, c.Censored, mark)
		}
	case r.Trace != nil:
		t := r.Trace
		fmt.Fprintf(w, "prober: %d samples; p50: accepted %s, continuation lateness %s, return %s, total %s\n",
			t.Total.Count, us(t.Accepted.P50Us), us(t.Lateness.P50Us), us(t.Return.P50Us), us(t.Total.P50Us))
		fmt.Fprintf(w, "prober: p99: accepted %s, continuation lateness %s, return %s, total %s\n",
			us(t.Accepted.P99Us), us(t.Lateness.P99Us), us(t.Return.P99Us), us(t.Total.P99Us))
	}
	if r.Partial {
		fmt.Fprintf(w, "prober: PARTIAL result: %s\n", r.PartialReason)
	}
}

func us(v float64) string {
	return time.Duration(v * float64(time.Microsecond)).Round(time.Microsecond).String()
}
