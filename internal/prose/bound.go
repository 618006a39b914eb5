package prose

import (
	"fmt"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/words"
)

// The words of a bound: what limits a measurement's throughput, said from
// the rule and the figures findings' BoundOf decided it on.

// BoundLine is the bound's text with its notes, for a table cell ("-"
// without a bound).
func BoundLine(b *findings.Bound) string {
	if b == nil {
		return "-"
	}
	s := BoundText(b)
	for _, n := range BoundNotes(b) {
		s += "; " + n
	}
	return s
}

// BoundText says the rule that decided the bound, with its figures.
func BoundText(b *findings.Bound) string {
	switch b.Case {
	case findings.BoundCPUMachine:
		return fmt.Sprintf("CPU: the machine uses %.2f of %.0f cores, the generators %.2f (the server's own share is not measured: no pid=)",
			b.MachineCores, b.Cores, b.GeneratorCores)
	case findings.BoundGenerator, findings.BoundAsIsGenerator:
		return fmt.Sprintf("the load generator: the kit's processes use %.2f of %.0f cores, the generators %.2f against the server's %.2f; not the server's figure",
			b.KitCores, b.Cores, b.GeneratorCores, b.ServerCores)
	case findings.BoundCPUKit:
		return fmt.Sprintf("CPU: the kit's processes use %.2f of %.0f cores, the server %.2f at %.1f us per request", b.KitCores, b.Cores, b.ServerCores, b.ServerCPUUs)
	case findings.BoundWorkers:
		return fmt.Sprintf("workers: %s / %s %s = %.0f req/s; at %.0f%% of it", canBlock(b.Workers, b.LoopsUsed), boundMs(b), blockWord(b), b.WorkersCeiling, 100*b.Share)
	case findings.BoundCallers:
		return fmt.Sprintf("offered concurrency: %d callers / %s %s = %.0f req/s (Little's law); at %.0f%% of it", b.Conc, boundMs(b), blockWord(b), b.CallersCeiling, 100*b.Share)
	case findings.BoundNone:
		lowName := "workers"
		if b.LowestCallers {
			lowName = "callers"
		}
		return fmt.Sprintf("no ceiling near: %.0f%% of the lowest (%s, %.0f req/s); likely %s", 100*b.Share, lowName, b.Lowest, noneCause(b))
	case findings.BoundSlip:
		return fmt.Sprintf("two calls, %s then %s: each side against its own ceiling in the slip's figures", b.Asked, b.SlipBlock)
	}
	return asIsBoundText(b)
}

// asIsBoundText says the bound of a server measured as it is.
func asIsBoundText(b *findings.Bound) string {
	call := b.MeasuredBlock
	switch b.Case {
	case findings.BoundAsIsCPU:
		s := fmt.Sprintf("CPU: the machine uses %.2f of %.0f cores", b.MachineCores, b.Cores)
		if !b.ServerNotMeasured {
			s += fmt.Sprintf(", the server %.2f at %.1f us per request", b.ServerCores, b.ServerCPUUs)
		}
		return s
	case findings.BoundAsIsNoCall:
		return "not known: the call's own time (the sweep at 1 caller) was not measured"
	case findings.BoundAsIsWorkers:
		ceiling := fmt.Sprintf("%s / %s = %s", words.Plural(b.AsIsWorkers, "worker"), words.Round(call), words.PerS(b.WorkersCeiling))
		return fmt.Sprintf("workers: the %s it behaves as; at %.0f%% of it", ceiling, 100*b.Share)
	case findings.BoundAsIsCallers:
		return fmt.Sprintf("offered concurrency: %d callers / the call's %s = %.0f req/s (Little's law); at %.0f%% of it", b.Conc, words.Round(call), b.CallersCeiling, 100*b.Share)
	case findings.BoundAsIsNone:
		return fmt.Sprintf("no ceiling near: %.0f%% of the lowest (%.0f req/s); a request took %s on average against the call's %s at 1 caller: queueing and handing over",
			100*b.Share, b.Lowest, b.MeanLatency.Round(10*time.Microsecond), words.Round(call))
	}
	return ""
}

// boundMs is the block the ceilings were computed with, for reading.
func boundMs(b *findings.Bound) time.Duration { return b.MeasuredBlock.Round(10 * time.Microsecond) }

// blockWord says which block the ceilings used.
func blockWord(b *findings.Bound) string {
	if !b.BlockMeasured {
		return "requested block (the server did not say how long it blocked)"
	}
	return "measured block"
}

// canBlock says what can block for a step: "4 loops", "200 slots", "its
// 10 database connections (behind 200 slots)", "the 3 of 4 loops the
// callers were dealt to (loop 0: 2, ...)".
func canBlock(w findings.CanBlock, used int) string {
	what := fmt.Sprintf("%d loops", w.N)
	if w.N == 1 {
		what = "1 loop"
	}
	if w.Kind == "pool" {
		what = fmt.Sprintf("%d slots", w.N)
	}
	if w.Offload {
		what = fmt.Sprintf("%d offload workers", w.N)
	}
	switch {
	case w.DBConns > 0:
		behind := what
		if w.Kind == "goroutine" {
			behind = "a goroutine per request"
		}
		return fmt.Sprintf("its %d database connections (behind %s)", w.DBConns, behind)
	case len(w.Dealt) > 0:
		var spread []string
		for _, c := range w.Dealt {
			spread = append(spread, fmt.Sprintf("loop %d: %d", c.Loop, c.Count))
		}
		return fmt.Sprintf("the %d of %d loops the callers were dealt to (%s)", used, w.N, strings.Join(spread, ", "))
	}
	return what
}

// noneCause says what likely held a measurement that no ceiling bounds.
func noneCause(b *findings.Bound) string {
	cpu := fmt.Sprintf("%.1f us CPU per request", b.ServerCPUUs)
	if b.ServerNotMeasured {
		cpu = "the server's CPU not measured: no pid="
	}
	switch b.Cause {
	case findings.CauseShared:
		return fmt.Sprintf("other processes using %.2f of the machine's %.0f cores", b.OtherCores, b.Cores)
	case findings.CauseTurnaround:
		return fmt.Sprintf("the client's turnaround: the callers spent %.0f%% of the window between requests", 100*(1-b.Little))
	case findings.CauseOwnTime:
		return fmt.Sprintf("the server's own time: a request took %s on average against the %s block, the rest queueing and handing over (%s)",
			b.MeanLatency.Round(10*time.Microsecond), boundMs(b), cpu)
	}
	return fmt.Sprintf("the client's turnaround or the server's own cost (%s)", cpu)
}

// BoundNotes is what a reader of the bound must know beside it.
func BoundNotes(b *findings.Bound) []string {
	var notes []string
	asIs := b.Case.AsIs()
	if b.NoWorkers {
		notes = append(notes, "workers not known (a --target without loops=, workers= or offload=): no workers ceiling")
	}
	if off := BlockOffText(b.Asked, b.BlockedNs); b.BlockMeasured && off != "" {
		notes = append(notes, off)
	}
	if b.Shared {
		notes = append(notes, fmt.Sprintf("machine shared: %.0f%% used by other processes", 100*b.OtherCores/b.Cores))
	}
	switch {
	case asIs || b.Little <= 0 || b.LittleOK:
	case b.Little < 1:
		notes = append(notes, fmt.Sprintf("Little's law off by %.1f%%: throughput x mean latency / callers = %.3f, so the callers spent that share of the window between requests",
			100*(1-b.Little), b.Little))
	default:
		notes = append(notes, fmt.Sprintf("Little's law off by %.1f%%: throughput x mean latency / callers = %.3f, more requests in flight than callers: the window's counts and latencies disagree",
			100*(b.Little-1), b.Little))
	}
	return notes
}

// BlockOffText says how far measured (ns, the server's X-Blocked-Ns) is
// from the asked block when it is more than findings' tolerance off, else
// "".
func BlockOffText(asked time.Duration, measuredNs float64) string {
	r, off := findings.BlockOff(asked, measuredNs)
	if !off {
		return ""
	}
	return fmt.Sprintf("the server blocked %s where %s was asked (%+.0f%%)", words.Round(time.Duration(measuredNs)), asked, 100*r)
}

// BlockedText is a load row's measured block (the median of the servers'
// X-Blocked-Ns), with how far it is from the asked block when more than
// the tolerance; "not said" when the server sent none.
func BlockedText(r findings.LoadRow) string {
	if !r.MeasuredBlock.OK() {
		return "not said"
	}
	m := r.MeasuredBlock.Median()
	s := words.Round(time.Duration(m)).String()
	asked := r.Step.Block.D()
	if off, ok := findings.BlockOff(asked, m); ok {
		s += fmt.Sprintf(" (%+.0f%% of the %s asked)", 100*off, asked)
	}
	return s
}
