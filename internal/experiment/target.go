package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/conform"
	"github.com/bystander-kit/bystander/internal/proc"
	"github.com/bystander-kit/bystander/internal/request"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/words"
)

// resolve checks every target's protocol (internal/conform), writes each
// check into the run directory, and decides what the plan measures on it:
// its kind and workers, and the phases it skips. A target that fails a
// check a planned phase needs is refused, with the reasons.
func resolve(ctx context.Context, o *Options, w io.Writer) error {
	for i := range o.Targets {
		t := &o.Targets[i]
		err := client.AwaitListen(ctx, t.Addr, client.StartWait, func() {
			fmt.Fprintf(w, "waiting for %s to listen at %s (up to %v: a server started a moment ago) ...\n", t.Name, t.Addr, client.StartWait)
		})
		if errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("run.sh: --target %s: nothing is listening at %s (connection refused for %v): start the server first, or check the URL", t.Name, t.Addr, client.StartWait)
		}
		if err != nil {
			return fmt.Errorf("run.sh: --target %s: cannot connect to %s: %v", t.Name, t.Addr, err)
		}
		if t.PID > 0 {
			// The figures of pid= are the server's cost: it must be the
			// process that listens there, not pid 1 or a shell.
			ok, err := proc.Listens(t.PID, t.Addr)
			switch {
			case err != nil:
				return fmt.Errorf("run.sh: --target %s: pid=%d cannot be checked against %s (%v): leave pid= out, or run as the server's user", t.Name, t.PID, t.Addr, err)
			case !ok:
				return fmt.Errorf("run.sh: --target %s: pid=%d does not hold the listening socket at %s (from /proc): not that server's process; give its own pid, or leave pid= out", t.Name, t.PID, t.Addr)
			}
		}
		if t.load != nil {
			if err := resolveAsIs(ctx, o, t, w); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(w, "checking %s at %s (prober --mode check) ...\n", t.Name, t.URL)
		rep := conform.Run(ctx, t.Addr, conform.Options{Loops: t.Loops})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t.Check = rep
		if err := os.WriteFile(filepath.Join(o.Out, "check-"+t.Name+".json"), rep.JSON(), 0o644); err != nil {
			return fmt.Errorf("run.sh: %v", err)
		}
		// Each failing check once, with every planned phase that needs it.
		var refused []string
		needs := map[string][]string{}
		t.Skips = map[string]string{}
		for _, ph := range o.Phases {
			for _, c := range rep.Checks {
				if !slices.Contains(c.Needs, ph) || (c.Status != conform.Fail && c.Status != conform.Missing) {
					continue
				}
				why := fmt.Sprintf("check %s %s: %s", c.ID, c.Status, c.Reason)
				if c.Status == conform.Fail {
					if needs[why] == nil {
						refused = append(refused, why)
					}
					needs[why] = append(needs[why], ph)
				} else if t.Skips[ph] == "" {
					t.Skips[ph] = why
				}
			}
		}
		if len(refused) > 0 {
			rep.Write(w)
			for i, why := range refused {
				refused[i] = fmt.Sprintf("%s (needed by %s)", why, strings.Join(needs[why], ", "))
			}
			return fmt.Errorf("run.sh: --target %s does not speak the protocol where the phases need it:\n  %s\n"+
				"fix the server (docs/protocol.md), or leave those phases out with --phases", t.Name, strings.Join(refused, "\n  "))
		}
		s := results.Server{Name: t.Name, External: true, URL: t.URL, PID: t.PID, OffloadWorkers: t.Offload}
		switch {
		case t.Loops > 0:
			s.Kind, s.Workers, s.Facts = "loop", t.Loops, fmt.Sprintf("%s (given, and seen in X-Loop)", words.Plural(t.Loops, "loop"))
		case t.Workers > 0:
			s.Kind, s.Workers, s.Facts = "pool", t.Workers, fmt.Sprintf("%d workers (given)", t.Workers)
		case rep.Loops > 0:
			s.Kind, s.Workers, s.Facts = "loop", rep.Loops, fmt.Sprintf("%s (learned: distinct X-Loop values)", words.Plural(rep.Loops, "loop"))
		default:
			s.Kind, s.Facts = "other", "no X-Loop and no workers= given: workers unknown"
			if slices.Contains(o.Phases, "cliff") {
				t.Skips["cliff"] = "the cliff runs callers at shares of the pool's workers: give workers=N"
			}
		}
		s.Facts += costFacts(t)
		if s.Kind != "pool" && t.Offload == 0 {
			s.Facts += "; offload pool size unknown (offload=N sets it)"
		}
		t.Server = s
		checked := "every check passed"
		if np := rep.NotPassed(); len(np) > 0 {
			checked = fmt.Sprintf("%d of %d checks did not pass, none that refuses it:\n    %s\n ", len(np), len(rep.Checks), strings.Join(np, "\n    "))
		}
		fmt.Fprintf(w, "  %s: %s; %s\n", t.Name, checked, s.Facts)
		for _, ph := range o.Phases {
			if why := t.Skips[ph]; why != "" {
				fmt.Fprintf(w, "  %s: the %s phase skips it: %s\n", t.Name, ph, why)
			}
		}
	}
	return nil
}

// costFacts says how the target's own cost is measured.
func costFacts(t *Target) string {
	switch {
	case t.Remote:
		return "; remote: server CPU, context switches and pinning not measured, the load and probes come from this machine"
	case t.PID > 0:
		return fmt.Sprintf("; pid %d: server cost from /proc", t.PID)
	}
	return "; no pid=: server CPU and context switches not measured (external)"
}

// checkTimeout bounds each request of the check of a server measured as
// it is.
const checkTimeout = 10 * time.Second

// asIsSkips says why each phase that needs the protocol skips a server
// measured as it is, one line each.
var asIsSkips = map[string]string{
	"stall":   "it needs the protocol's /async and /slow: with --load the sweep's 12-connection prober tells which connections the load stalls instead",
	"offload": "it needs the protocol's /offload (the call moved to a pool): the service's own fix is not the kit's to ask for",
	"trace":   "it needs the protocol's timing headers (X-Handler-Start, X-Continuation-Start) on /async",
	"cliff":   "it needs the protocol's /slow and a declared pool: with --load the sweep's plateau says how many callers the service serves at once",
	"slip":    "it needs the protocol's /slow?block= to slow the call mid-window",
}

// asIsSkipsFor is why each of phases skips a server measured as it is.
func asIsSkipsFor(phases []string) map[string]string {
	out := map[string]string{}
	for _, ph := range phases {
		if why := asIsSkips[ph]; why != "" {
			out[ph] = why
		}
	}
	return out
}

// resolveAsIs checks a target measured as it is (--load): it needs no
// protocol, only that each request of --load and --bystander is answered
// (2xx or 3xx), once, on a keep-alive connection; and decides what the
// plan measures on it: the sweep, every other phase skipped, saying why.
func resolveAsIs(ctx context.Context, o *Options, t *Target, w io.Writer) error {
	fmt.Fprintf(w, "checking %s at %s as it is: each request of --load and --bystander once ...\n", t.Name, t.URL)
	loops := map[int64]bool{}
	asked, closed := 0, 0
	for _, x := range []struct {
		flag string
		spec *request.Spec
	}{{"--load", t.load}, {"--bystander", t.bystander}} {
		c := client.New(t.Addr, "/", checkTimeout)
		c.Use(x.spec.Mix())
		// Each request once, and twice at least on a connection: whether
		// the service keeps it open is seen on the second.
		for range max(2, len(x.spec.Requests)) {
			if ctx.Err() != nil {
				c.Close()
				return ctx.Err()
			}
			var r client.Response
			err := c.Do(&r)
			if err != nil {
				c.Close()
				return fmt.Errorf("run.sh: --target %s: %s's %s %s", t.Name, x.flag, where(x.spec, c.Sent()), notAnswered(&r, err))
			}
			if r.Loop >= 0 {
				loops[r.Loop] = true
			}
			asked++
			if r.Close {
				closed++
			}
		}
		c.Close()
	}
	if closed == asked {
		return fmt.Errorf("run.sh: --target %s: it closed the connection after every answer (Connection: close, HTTP/1.0, or a body ended by the close), %d of %d: "+
			"the kit's bystanders keep their connections, each on the thread the service dealt it, and tell which of them stall; turn keep-alive on in the service, then measure it", t.Name, closed, asked)
	}
	s := t.Server
	s.Facts = "as it is (--load): its own requests, no protocol; how many callers it serves at once is inferred from the sweep"
	switch {
	case t.Loops > 0:
		s.Kind, s.Workers = "loop", t.Loops
		s.Facts += fmt.Sprintf("; %s (given)", words.Plural(t.Loops, "loop"))
	case t.Workers > 0:
		s.Kind, s.Workers = "pool", t.Workers
		s.Facts += fmt.Sprintf("; %d workers (given)", t.Workers)
	}
	s.Facts += costFacts(t)
	t.Server = s
	fmt.Fprintf(w, "  %s: every request answered; %s\n", t.Name, s.Facts)
	for _, ph := range o.Phases {
		if why := t.Skips[ph]; why != "" {
			fmt.Fprintf(w, "  %s: the %s phase skips it: %s\n", t.Name, ph, why)
		}
	}
	if len(loops) == 0 {
		fmt.Fprintf(w, "  %s: loop placement by X-Loop is skipped: the service sends no X-Loop, so each connection is known by its number, not its loop\n", t.Name)
	}
	return nil
}

// where names a request of spec for a message: "POST /login", or in a
// targets file "POST /login (targets.txt line 3)".
func where(spec *request.Spec, w *request.Wire) string {
	if w == nil {
		return "request"
	}
	s := "request " + w.Label
	if spec.File != "" {
		s += fmt.Sprintf(" (%s line %d)", spec.File, spec.Requests[w.Index].Line)
	}
	return s
}

// notAnswered says how a request of the check went wrong, and what to do.
func notAnswered(r *client.Response, err error) string {
	switch client.KindOf(err) {
	case client.BadStatus:
		// The client's error says the status and the first line of the
		// body ("status 404: \"no such page\"").
		var ce *client.Error
		said := fmt.Sprintf("was answered %d", r.Status)
		if errors.As(err, &ce) {
			said = "was answered " + strings.TrimPrefix(ce.Err.Error(), "status ")
		}
		return said + ": give requests the service answers with 2xx or 3xx (its own path, method, headers and body)"
	case client.Refused:
		return fmt.Sprintf("was refused (%v): nothing listens there any more", err)
	}
	return fmt.Sprintf("was not answered: %v", err)
}

// targetServers are the targets as the run index records them.
func targetServers(ts []Target) []results.Server {
	var out []results.Server
	for _, t := range ts {
		out = append(out, t.Server)
	}
	return out
}
