package experiment

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/words"
)

// Describe prints the plan.
func (p Plan) Describe(w io.Writer) {
	o := p.Options
	fmt.Fprintf(w, "bystander: %s x %s, expected %s; results in %s\n",
		words.Plural(len(p.Steps), "measurement"), words.Plural(o.Repeat, "repetition"), p.Expected().Round(time.Second), o.Out)
	if len(o.Servers) > 0 {
		fmt.Fprintf(w, "  servers %s (engines %s; %d loops, %d slots); block %s for sweep and offload, %s for stall, trace and cliff, mode %s\n",
			strings.Join(o.Servers, ","), strings.Join(o.Engines, ","), o.Loops, o.Slots, o.Block, o.StallBlock, o.BlockMode)
	} else {
		fmt.Fprintf(w, "  block %s for sweep and offload, %s for stall, trace and cliff (asked with ?block=)\n", o.Block, o.StallBlock)
	}
	for _, t := range o.Targets {
		fmt.Fprintf(w, "  target %s at %s: %s\n", t.Name, t.URL, t.Server.Facts)
		if t.Server.AsIs() {
			fmt.Fprintf(w, "  target %s as it is: the sweep loads %s at %s callers; the bystander %s is probed every %s, and on %d connections every %s\n",
				t.Name, t.Server.Load, words.Ints(o.sweepConc(t.Server), ","), t.Server.Bystander, o.ProbeInterval, asIsConns, stallInterval)
			fmt.Fprintf(w, "  target %s: %s\n", t.Name, watchPlan(t, slices.Max(o.sweepConc(t.Server))))
		}
	}
	if o.BlockMode == "postgres" {
		fmt.Fprintf(w, "  each server's blocking call is SELECT pg_sleep on one of %s of its own (pgx; HikariCP for Java) to %s\n",
			words.Plural(o.DBPool, "database connection"), cmp.Or(o.dbDesc, "PostgreSQL"))
	}
	if o.usesJava() {
		mode := "block with Thread.sleep (not --block-mode), and"
		if o.BlockMode == "postgres" {
			mode = "call the database through HikariCP, and"
		}
		fmt.Fprintf(w, "  the Java servers %s are loaded on every endpoint for %s after each\n"+
			"  start, before they are measured: a JVM compiles the code that runs hot, and its first seconds are several times slower (--jvm-warmup)\n", mode, o.JVMWarmup)
	}
	for _, phase := range allPhases {
		var n int
		var d time.Duration
		for _, s := range p.Steps {
			if s.Phase == phase && p.Skips[s.ID] == "" {
				n++
				d += p.cost(s)
			}
		}
		if n > 0 {
			fmt.Fprintf(w, "  %-8s %15s, about %s: %s\n", phase, words.Plural(n, "measurement"), d.Round(time.Second), o.story(phase))
		}
	}
}

// story is one line on what a phase does, with this run's values.
func (o Options) story(phase string) string {
	switch phase {
	case "sweep":
		asIs := fmt.Sprintf("the --target's own request (--load) at 1 caller and each concurrency, its bystander (--bystander) probed every %s and on %d connections every %s meanwhile",
			o.ProbeInterval, asIsConns, stallInterval)
		switch {
		case o.Load != "" && len(o.Servers) == 0:
			return asIs
		case o.Load != "":
			return fmt.Sprintf("%s at each concurrency with a /fast bystander probing every %s meanwhile; on %s", o.SweepEndpoint, o.ProbeInterval, asIs)
		}
		return fmt.Sprintf("%s at each concurrency with a /fast bystander probing every %s meanwhile", o.SweepEndpoint, o.ProbeInterval)
	case "stall":
		from, pools := 0, fmt.Sprintf("0 and %d", o.Loops)
		if o.Stage {
			from, pools = 1, fmt.Sprint(o.Loops) // the stage shows k = 1 and up
		}
		if len(o.Targets) > 0 {
			return fmt.Sprintf("%d /async connections per loop, then k = %d up to every loop kept blocked (without loops: %s callers)", stallConnsPerLoop, from, pools)
		}
		return fmt.Sprintf("%d /async connections, then k = %d..%d loops (or k pool callers) kept blocked", stallConnsPerLoop*o.Loops, from, o.Loops)
	case "offload":
		return "at the highest concurrency: /slow on the loops, /offload on the loops, /slow on a pool"
	case "trace":
		return fmt.Sprintf("/async taken apart while %d callers block on /slow", o.TraceCallers)
	case "cliff":
		return fmt.Sprintf("each pool with callers at %s of its slots, /fast probed meanwhile", words.Percents(findings.CliffShares))
	case "slip":
		when := "from halfway"
		if o.Stage {
			when = "from the presenter's key"
		}
		return fmt.Sprintf("/slow at %d callers asking for %s, then %s %s (the bad afternoon), /fast probed meanwhile", slices.Max(o.Conc), o.Block, o.SlipBlock, when)
	}
	return ""
}
