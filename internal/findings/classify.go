package findings

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bystander-kit/bystander/internal/words"
)

// What a server did with a blocking call, as the run measured it, not as
// its documentation says: its stall phase (did k blockers stall the
// connections that share a loop with them?), its cliff (does its
// throughput stop growing with the callers at some size?) and the threads
// it held meanwhile (/proc).
const (
	ClassLoop     = "loop"     // k blocked loops stalled exactly their connections
	ClassPool     = "pool"     // forgives up to a measured number of blocked callers, then queues
	ClassThreads  = "threads"  // forgives every caller measured, an OS thread held per blocked request
	ClassForgives = "forgives" // forgives every caller measured, without a thread each (the goroutine parks)
	ClassUnknown  = "unknown"  // the run cannot say (not measured, too busy to judge, or not by whole loops)
)

// Class is one server's classification, with the figures that decided it.
type Class struct {
	Server string `json:"server"`
	Class  string `json:"class"`
	// Text is the classification in words, with its figures.
	Text string `json:"text"`
	// Stalled is the stall phase by k, "0, 3, 6, 9, 12 of 12" (StallLine).
	Stalled string `json:"stalled,omitempty"`
	// Loops is how many loops the server's X-Loop named in the stall phase.
	Loops int `json:"loops,omitempty"`
	// ServedAtOnce is how many callers a pool's cliff served at once at
	// its most, as measured (its throughput times its measured block; 0: no
	// pool found, or not measured); Configured the slots the server says it
	// has (0: not declared). The measured figure is not a size: a pool of
	// 200 measures about 193 when its callers spend a moment between calls.
	ServedAtOnce int `json:"served_at_once,omitempty"`
	Configured   int `json:"configured,omitempty"`
	// Callers and Threads are the cliff's most callers and the server's
	// threads then.
	Callers int `json:"callers,omitempty"`
	Threads int `json:"threads,omitempty"`
	// Sweep is its /slow at the sweep's most callers and what bound it;
	// Fast the /fast bystander's p50 from due meanwhile.
	Sweep string `json:"sweep,omitempty"`
	Fast  string `json:"fast,omitempty"`
	// CPU, for a server measured as it is, says whether its call ran on a
	// CPU (AsIs.CPUText).
	CPU string `json:"cpu,omitempty"`
}

// poolBelow: a server whose cliff served fewer than this share of its
// callers at once (throughput x block) has a pool.
const poolBelow = 0.9

// threadsPerCaller: a server that forgave every caller holds an OS thread
// per blocked request when its threads reach this share of the callers.
const threadsPerCaller = 0.9

// Classes classifies every server the run measured, in its order.
func (f *Findings) Classes() []Class {
	var out []Class
	for _, sv := range f.Servers {
		out = append(out, f.classify(sv))
	}
	return out
}

func (f *Findings) classify(sv ServerSummary) Class {
	c := Class{Server: sv.Name, Class: ClassUnknown}
	for _, a := range f.AsIs {
		if a.Server == sv.Name {
			// Measured as it is: decided from its sweep alone.
			c.Class, c.Text, c.ServedAtOnce = a.Class, a.Text, int(math.Round(a.Workers))
			c.Stalled = a.StalledLine()
			if a.Plateau > 0 {
				c.Sweep = fmt.Sprintf("%s at %d callers (its plateau)", words.PerS(a.Plateau), a.PlateauAt)
			}
			c.CPU = a.CPUText()
			return c
		}
	}
	f.sweepOf(&c, sv)
	st := f.stallsOf(sv)
	c.Loops = st.loops
	if st.line != "" {
		c.Stalled = st.line
		if sv.Kind != "loop" {
			c.Stalled = fmt.Sprintf("%s with %d blocking callers", c.Stalled, st.blockers)
		}
	}
	switch {
	case st.rows == nil:
		c.Text = "not classified: the stall phase was not measured"
		return c
	case st.judged == 0:
		c.Text = "not classified: " + stallTooBusy(st.rows)
		return c
	case st.stalls && st.exact && c.Loops > 0:
		c.Class = ClassLoop
		c.Text = fmt.Sprintf("a loop server: k blocked loops stalled exactly the connections on them (%s; %s, from X-Loop)", c.Stalled, words.Plural(c.Loops, "loop"))
		return c
	case st.stalls:
		c.Text = "not classified: its stalls are not whole loops (" + c.Stalled + ")"
		return c
	}
	f.forgiven(&c, sv, st.blockers)
	return c
}

// sweepOf fills the sweep at its most callers, and the bystander beside it.
func (f *Findings) sweepOf(c *Class, sv ServerSummary) {
	var top *SweepRow
	for i, r := range f.Sweep {
		if r.Step.Server.Name == sv.Name && r.Throughput.OK() && (top == nil || r.Step.Conc > top.Step.Conc) {
			top = &f.Sweep[i]
		}
	}
	if top == nil {
		return
	}
	c.Sweep = fmt.Sprintf("%s at %d callers", words.PerS(top.Throughput.Median()), top.Step.Conc)
	if b := top.Bound(); b != nil {
		c.Sweep += ", " + boundShort(b, top.Step.Conc)
	}
	if top.Fast.P50.OK() {
		c.Fast = fastText(top.LoadRow, top.Fast.P50)
	}
}

// serverStalls is what the stall phase said of one server: whole loops,
// or nobody.
type serverStalls struct {
	rows                    []StallRow
	stalls, exact           bool
	judged, blockers, loops int
	line                    string // "0 of 12, 3 of 12, ..."
}

func (f *Findings) stallsOf(sv ServerSummary) serverStalls {
	st := serverStalls{exact: true}
	for _, r := range f.Stall {
		if r.Step.Server.Name == sv.Name {
			st.rows = append(st.rows, r)
		}
	}
	loops := map[int]bool{}
	hs := HeadlineStall{}
	for _, r := range st.rows {
		for _, cell := range r.Cells {
			if cell.Loop >= 0 {
				loops[cell.Loop] = true
			}
		}
		if r.Step.K == 0 {
			continue
		}
		text := r.StalledText()
		if text == "" {
			text = r.Short()
		}
		hs.Stalled = append(hs.Stalled, text)
		if r.Judged == 0 {
			continue
		}
		st.judged++
		st.blockers = max(st.blockers, r.Step.K)
		if r.Stalled.Median() > 0 {
			st.stalls = true
		}
		if !r.Match {
			st.exact = false
		}
	}
	st.loops = len(loops)
	if len(hs.Stalled) > 0 {
		st.line = hs.Line()
	}
	return st
}

// forgiven classifies a server that stalled nobody: how many blocked
// callers does it forgive, and how?
func (f *Findings) forgiven(c *Class, sv ServerSummary, blockers int) {
	var cliff []LoadRow
	for _, r := range f.Cliff {
		if r.Step.Server.Name == sv.Name && r.Throughput.OK() {
			cliff = append(cliff, r)
		}
	}
	if len(cliff) == 0 {
		c.Class = ClassForgives
		c.Text = fmt.Sprintf("forgives the %d blocking callers of the stall phase (nobody stalled); how many more it forgives was not measured (no cliff)", blockers)
		if sv.Kind == "pool" && sv.Workers > 0 {
			c.Text += fmt.Sprintf("; it says it has %d slots", sv.Workers)
		}
		return
	}
	busiest, at := 0.0, cliff[0]
	for _, r := range cliff {
		block := r.Step.Block.D()
		if b := r.Bound(); b != nil && b.MeasuredBlock > 0 {
			block = b.MeasuredBlock
		}
		busiest = max(busiest, r.Throughput.Median()*block.Seconds()) // callers served at once (Little's law)
		if r.Step.Conc > at.Step.Conc {
			at = r
		}
	}
	c.Callers = at.Step.Conc
	c.Threads = f.threadsOf(at.Step.ID)
	switch {
	case busiest < poolBelow*float64(c.Callers):
		c.Class, c.ServedAtOnce = ClassPool, int(math.Round(busiest))
		measured := fmt.Sprintf("its cliff served at most %d callers at once (its throughput x the measured block, over the cliff's %s callers), then queued the rest",
			c.ServedAtOnce, cliffCallers(cliff))
		switch {
		case sv.DBConns > 0 && (sv.Workers == 0 || sv.DBConns < sv.Workers || sv.Kind != "pool"):
			// Behind fewer database connections than slots, the pool that
			// binds is the database's.
			c.Configured = sv.DBConns
			behind := "a goroutine per request"
			if sv.Kind == "pool" && sv.Workers > 0 {
				behind = fmt.Sprintf("%d slots", sv.Workers)
			}
			c.Text = fmt.Sprintf("a pool of %d: its %d database connections, as configured, behind %s: %s", c.Configured, sv.DBConns, behind, measured)
		case sv.Kind == "pool" && sv.Workers > 0:
			c.Configured = sv.Workers
			c.Text = fmt.Sprintf("a pool of %d slots, as configured: %s", c.Configured, measured)
		default:
			c.Text = "a pool, its size not declared: " + measured
		}
	case c.Threads >= int(threadsPerCaller*float64(c.Callers)):
		c.Class = ClassThreads
		c.Text = fmt.Sprintf("forgives: one OS thread per blocked request (%d threads at %d callers; no pool up to %d callers)", c.Threads, c.Callers, c.Callers)
	default:
		c.Class = ClassForgives
		c.Text = fmt.Sprintf("forgives every caller measured (no pool up to %d callers), without a thread each (%d threads at %d callers)", c.Callers, c.Threads, c.Callers)
	}
}

// threadsOf is the most threads the server had at the end of any
// repetition of the measurement id (/proc), 0 when not read.
func (f *Findings) threadsOf(id string) int {
	n := 0
	for _, r := range f.Cost {
		if r.ID == id && r.Cost != nil && !r.Cost.ServerNotMeasured {
			n = max(n, r.Cost.Threads)
		}
	}
	return n
}

func cliffCallers(rows []LoadRow) string {
	var cs []int
	for _, r := range rows {
		if !slices.Contains(cs, r.Step.Conc) {
			cs = append(cs, r.Step.Conc)
		}
	}
	slices.Sort(cs)
	return words.Ints(cs, ", ")
}

// stallTooBusy says why no stall measurement could be judged.
func stallTooBusy(rows []StallRow) string {
	for _, r := range rows {
		if len(r.Unjudged) > 0 {
			return r.Unjudged[0]
		}
		if r.Why != "" {
			return r.Why
		}
	}
	return "no stall measurement could be judged"
}

// boundShort is a bound in a few words: "99% of its workers' 788",
// "97% of its 64 callers' 12,405 (Little's law)".
func boundShort(b *Bound, callers int) string {
	switch b.Kind {
	case "workers":
		return fmt.Sprintf("%.0f%% of its workers' %s", 100*b.Share, words.Thousands(b.WorkersCeiling))
	case "callers":
		return fmt.Sprintf("%.0f%% of its %d callers' %s (Little's law)", 100*b.Share, callers, words.Thousands(b.CallersCeiling))
	case "cpu":
		return "held by the CPU"
	case "generator":
		return "held by the load generator"
	}
	return "near no ceiling"
}

// ClassesText is the classification table's heading words.
var ClassesText = strings.Join([]string{
	"a loop server when k blockers stalled exactly the connections on their k loops",
	fmt.Sprintf("a pool when its cliff served at most N callers at once, under %.0f %% of them (N as measured; its size as configured, where the server declares it)", 100*poolBelow),
	fmt.Sprintf("one OS thread per blocked request when it served every caller and held %.0f %% as many threads or more", 100*threadsPerCaller),
}, "; ")
