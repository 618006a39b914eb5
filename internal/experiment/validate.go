package experiment

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/block"
	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/outside"
	"github.com/bystander-kit/bystander/internal/request"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/serverflags"
)

// maxSlots is the largest pool the cliff can drive at its largest share.
func maxSlots() int { return client.MaxConns * 100 / slices.Max(findings.CliffShares) }

// Validate says what is wrong with o, one thing, in the words of run.sh's
// flags, whatever built o (the command from its flags, a test by fields):
// the values out of their range first, then the flags that go together,
// then the lists. It reads each target's facts the run needs (its
// address, its requests), as the plan and the run expect them.
func (o *Options) Validate() error {
	for _, check := range []func() error{o.validateRanges, o.validateTogether, o.validateLists} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateRanges: each value within its range.
func (o *Options) validateRanges() error {
	bad := func(f string, a ...any) error { return fmt.Errorf("run.sh: "+f, a...) }
	switch {
	case o.Block <= 0 || o.Block.D() > 10*time.Second:
		return bad("--block %s: want more than 0 and at most 10s", o.Block)
	case o.StallBlock <= 0 || o.StallBlock.D() > 10*time.Second:
		return bad("--stall-block %s: want more than 0 and at most 10s", o.StallBlock)
	case o.SlipBlock <= 0 || o.SlipBlock.D() > 10*time.Second:
		return bad("--slip-block %s: want more than 0 and at most 10s", o.SlipBlock)
	case o.Duration < 500*time.Millisecond || o.Duration > 10*time.Minute:
		return bad("--duration %s: want 500ms to 10m", o.Duration)
	case o.Warmup < 0 || o.Warmup > time.Minute:
		return bad("--warmup %s: want 0 to 1m", o.Warmup)
	case o.Repeat < 1 || o.Repeat > 20:
		return bad("--repeat %d: want 1 to 20", o.Repeat)
	case len(o.Conc) == 0:
		return bad("--conc: give at least one concurrency")
	case o.Delay < 0 || o.Delay > 10*time.Second:
		return bad("--delay %s: want 0 to 10s", o.Delay)
	case o.Loops < 1 || o.Loops > 64:
		return bad("--loops %d: want 1 to 64", o.Loops)
	case o.Slots < 1 || o.Slots > maxSlots():
		return bad("--slots %d: want 1 to %d (the cliff drives %d%% of the slots, one connection each, and a load generator opens at most %d)",
			o.Slots, maxSlots(), slices.Max(findings.CliffShares), client.MaxConns)
	case o.ProbeInterval < time.Millisecond || o.ProbeInterval > 10*time.Second:
		return bad("--probe-interval %s: want 1ms to 10s", o.ProbeInterval)
	case o.TraceCallers < 1 || o.TraceCallers > client.MaxConns:
		return bad("--trace-callers %d: want 1 to %d", o.TraceCallers, client.MaxConns)
	case o.JVMWarmup < 0 || o.JVMWarmup > 10*time.Minute:
		return bad("--jvm-warmup %s: want 0 to 10m", o.JVMWarmup)
	}
	return nil
}

// validateTogether: the flags that go together given together: the
// stage's, the database's.
func (o *Options) validateTogether() error {
	bad := func(f string, a ...any) error { return fmt.Errorf("run.sh: "+f, a...) }
	switch {
	case o.AutoWait < 0:
		return bad(fmt.Sprintf("--auto-wait %s: want a duration of 0 or more", o.AutoWait))
	case o.AutoWait != AutoWait && !o.Auto:
		return bad("--auto-wait goes with --auto")
	case !o.Stage && (o.Auto || o.Replay != "" || o.StageAddr != "127.0.0.1:8300"):
		return bad("--auto, --replay and --stage-addr go with --stage")
	case o.Stage && o.Repeat > 1:
		return bad("--stage runs each measurement once; repeat a screen with R instead of --repeat")
	case o.Stage && o.Replay == "" && !slices.Equal(o.Phases, stagePhases):
		return bad("--stage measures the phases %s in its own order; leave --phases out", strings.Join(stagePhases, ","))
	}
	if o.SweepEndpoint != "/slow" && o.SweepEndpoint != "/offload" {
		return bad("--sweep-endpoint %q: want /slow or /offload", o.SweepEndpoint)
	}
	if _, err := block.ParseMode(o.BlockMode); err != nil {
		return bad("--block-mode %q: want syscall, sleep, spin or postgres", o.BlockMode)
	}
	if o.BlockMode != "postgres" && (o.PGURL != "" || o.DBPool != serverflags.DefaultDBPool) {
		return bad("--pg-url and --db-pool go with --block-mode postgres")
	}
	if o.DBPool < 1 || o.DBPool > block.MaxDBConns {
		return bad("--db-pool %d: want 1 to %d", o.DBPool, block.MaxDBConns)
	}
	if o.PGURL != "" {
		hosts, err := block.DBHosts(o.PGURL)
		if err != nil {
			return bad("--pg-url: %v", err)
		}
		for _, h := range hosts {
			if !strings.HasPrefix(h, "/") && !client.IsLoopback(h) && !o.AllowRemote {
				return bad("--pg-url: %s is not a loopback address or a unix socket: the kit's database is on this machine unless --allow-remote", h)
			}
		}
	}
	return nil
}

// validateLists: what the lists name exists, once each, and the targets
// are measurable.
func (o *Options) validateLists() error {
	bad := func(f string, a ...any) error { return fmt.Errorf("run.sh: "+f, a...) }
	for _, e := range o.Engines {
		if !slices.Contains(LoopEngines, e) {
			return bad("--engines: %q is not an engine (want %s)", e, strings.Join(LoopEngines, ", "))
		}
	}
	for _, s := range o.Servers {
		if !slices.Contains(kitServerNames(), s) {
			return bad("--servers: %q is not a server (want any of %s)", s, strings.Join(kitServerNames(), ", "))
		}
	}
	if len(o.Servers) == 0 && len(o.Targets) == 0 {
		return bad("nothing to measure: --servers is empty and no --target is given")
	}
	switch {
	case o.Load == "" && o.Bystander != "":
		return bad("--bystander goes with --load: the bystander of a --target measured as it is (the kit's servers keep /fast)")
	case o.Load != "" && o.Bystander == "":
		return bad("--load goes with --bystander: what everyone else asks while the load runs, such as --bystander 'GET /health'")
	case o.Load != "" && len(o.Targets) == 0:
		return bad("--load measures a --target as it is: give one (--target NAME=http://127.0.0.1:PORT); the kit's own servers keep /slow and /fast")
	case o.Load != "" && o.Stage && len(o.Servers) > 0:
		return bad("--stage with --load gives the talk on your service alone: add --servers= (the kit's own servers give their talk without --load)")
	}
	if err := o.validateTargets(); err != nil {
		return err
	}
	for _, p := range o.Phases {
		if !slices.Contains(allPhases, p) {
			return bad("--phases: %q is not a phase (want %s)", p, strings.Join(allPhases, ", "))
		}
	}
	if dupe(o.Engines) || dupe(o.Servers) || dupe(o.Phases) {
		return bad("a list names the same thing twice")
	}
	if len(dupeInts(o.Conc)) > 0 {
		return bad("--conc names %v twice", dupeInts(o.Conc))
	}
	return nil
}

func dupe(s []string) bool {
	seen := map[string]bool{}
	for _, v := range s {
		if seen[v] {
			return true
		}
		seen[v] = true
	}
	return false
}

func dupeInts(s []int) []int {
	seen := map[int]bool{}
	var d []int
	for _, v := range s {
		if seen[v] {
			d = append(d, v)
		}
		seen[v] = true
	}
	return d
}

// validateTargets checks what can be known before anything runs.
func (o *Options) validateTargets() error {
	seen := map[string]bool{}
	for i := range o.Targets {
		t := &o.Targets[i]
		if slices.Contains(kitNames, t.Name) || seen[t.Name] {
			return fmt.Errorf("run.sh: --target %s: the name is taken (the kit's servers are %s); give another", t.Name, strings.Join(kitNames, ", "))
		}
		seen[t.Name] = true
		pt, err := client.ParseTarget(t.URL, o.AllowRemote)
		if err != nil {
			return fmt.Errorf("run.sh: --target %s: %v (--allow-remote measures another machine)", t.Name, err)
		}
		t.Addr = pt.Addr
		if o.Load != "" {
			// Read for each target (an http:// URL in a file must name its
			// host:port), and before anything runs: a bad line is one
			// error with its number.
			if t.load, err = request.Parse(o.Load, t.Addr); err != nil {
				return fmt.Errorf("run.sh: --load: %v", err)
			}
			if t.bystander, err = request.Parse(o.Bystander, t.Addr); err != nil {
				return fmt.Errorf("run.sh: --bystander: %v", err)
			}
			// What the plan knows of it before its check (resolveAsIs).
			t.Server = results.Server{Name: t.Name, Kind: "other", External: true, URL: t.URL, PID: t.PID, OffloadWorkers: t.Offload,
				Load: t.load.String(), Bystander: t.bystander.String()}
			t.Skips = asIsSkipsFor(o.Phases)
		}
		if t.Pprof != "" {
			if o.Load == "" {
				return fmt.Errorf("run.sh: --target %s: pprof= watches a service measured as it is, at the sweep's top step: give --load and --bystander, or leave pprof= out", t.Name)
			}
			if _, err := client.ParseTarget(t.Pprof, o.AllowRemote); err != nil {
				return fmt.Errorf("run.sh: --target %s: pprof=: %v (--allow-remote watches another machine's)", t.Name, err)
			}
			t.Server.Pprof = t.Pprof
		}
		host, _, _ := net.SplitHostPort(pt.Addr)
		t.Remote = !client.IsLoopback(host)
		if t.PID > 0 {
			if t.Remote {
				return fmt.Errorf("run.sh: --target %s: pid=%d names a process on this machine, but the server is remote", t.Name, t.PID)
			}
			if !processRuns(t.PID) {
				return fmt.Errorf("run.sh: --target %s: pid=%d: no such process", t.Name, t.PID)
			}
			t.jvm = outside.IsJVM(t.PID)
		}
	}
	return nil
}
