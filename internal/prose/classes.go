package prose

import (
	"fmt"
	"strings"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/words"
)

// The words of the classes: what each server did with a blocking call,
// said from the case and the figures findings' classify.go decided it on.

// FaceClass is one server's class as findings.json holds it: the class,
// in words with its figures.
type FaceClass struct {
	Server string `json:"server"`
	Class  string `json:"class"`
	// Text is the classification in words, with its figures.
	Text string `json:"text"`
	// Stalled is the stall phase by k, "0, 3, 6, 9, 12 of 12".
	Stalled string `json:"stalled,omitempty"`
	// Loops is how many loops the server's X-Loop named in the stall phase.
	Loops int `json:"loops,omitempty"`
	// ServedAtOnce, Configured, Callers, Threads: findings.Class's.
	ServedAtOnce int `json:"served_at_once,omitempty"`
	Configured   int `json:"configured,omitempty"`
	Callers      int `json:"callers,omitempty"`
	Threads      int `json:"threads,omitempty"`
	// Sweep is its /slow at the sweep's most callers and what bound it;
	// Fast the /fast bystander's p50 from due meanwhile.
	Sweep string `json:"sweep,omitempty"`
	Fast  string `json:"fast,omitempty"`
	// CPU, for a server measured as it is, says whether its call ran on a
	// CPU.
	CPU string `json:"cpu,omitempty"`
}

// ClassesText is the classification table's heading words.
var ClassesText = strings.Join([]string{
	"a loop server when k blockers stalled exactly the connections on their k loops",
	fmt.Sprintf("a pool when its cliff served at most N callers at once, under %.0f %% of them (N as measured; its size as configured, where the server declares it)", 100*findings.PoolBelow),
	fmt.Sprintf("one OS thread per blocked request when it served every caller and held %.0f %% as many threads or more", 100*findings.ThreadsPerCaller),
}, "; ")

// Classes are the run's classes in words, in its order.
func Classes(f *findings.Findings) []FaceClass {
	var out []FaceClass
	for _, c := range f.Classes() {
		out = append(out, classWords(c))
	}
	return out
}

func classWords(c findings.Class) FaceClass {
	x := FaceClass{Server: c.Server, Class: c.Class, Loops: c.Loops, ServedAtOnce: c.ServedAtOnce, Configured: c.Configured, Callers: c.Callers, Threads: c.Threads}
	if a := c.AsIs; a != nil {
		x.Text, x.Stalled, x.CPU = AsIsClass(*a), AsIsStalledLine(*a), AsIsCPU(*a)
		if a.Plateau > 0 {
			x.Sweep = fmt.Sprintf("%s at %d callers (its plateau)", words.PerS(a.Plateau), a.PlateauAt)
		}
		return x
	}
	if r := c.Top; r != nil {
		x.Sweep = fmt.Sprintf("%s at %d callers", words.PerS(r.Throughput.Median()), r.Step.Conc)
		if b := r.Bound(); b != nil {
			x.Sweep += ", " + boundShort(b, r.Step.Conc)
		}
		if r.Fast.P50.OK() {
			x.Fast = FastText(r.LoadRow, r.Fast.P50)
		}
	}
	if len(c.Stalls) > 0 {
		var texts []string
		for _, r := range c.Stalls {
			text := StallStalled(r)
			if text == "" {
				text = Short(r.Group)
			}
			texts = append(texts, text)
		}
		x.Stalled = StallLine(texts)
		if c.Kind != "loop" {
			x.Stalled = fmt.Sprintf("%s with %d blocking callers", x.Stalled, c.Blockers)
		}
	}
	x.Text = classText(c, x.Stalled)
	return x
}

// classText is the classification in words, with its figures.
func classText(c findings.Class, stalled string) string {
	measured := fmt.Sprintf("its cliff served at most %d callers at once (its throughput x the measured block, over the cliff's %s callers), then queued the rest",
		c.ServedAtOnce, words.Ints(c.CliffCallers, ", "))
	switch c.Case {
	case findings.ClassedNoStall:
		return "not classified: the stall phase was not measured"
	case findings.ClassedTooBusy:
		if r := c.TooBusy; r != nil && len(r.Unjudged) > 0 {
			return "not classified: " + StallUnjudged(r.Unjudged[0])
		} else if r != nil {
			return "not classified: " + GroupWhy(r.Group)
		}
		return "not classified: no stall measurement could be judged"
	case findings.ClassedWholeLoops:
		return fmt.Sprintf("a loop server: k blocked loops stalled exactly the connections on them (%s; %s, from X-Loop)", stalled, words.Plural(c.Loops, "loop"))
	case findings.ClassedNotWhole:
		return "not classified: its stalls are not whole loops (" + stalled + ")"
	case findings.ClassedNoCliff:
		s := fmt.Sprintf("forgives the %d blocking callers of the stall phase (nobody stalled); how many more it forgives was not measured (no cliff)", c.Blockers)
		if c.Kind == "pool" && c.Workers > 0 {
			s += fmt.Sprintf("; it says it has %d slots", c.Workers)
		}
		return s
	case findings.ClassedPoolDB:
		behind := "a goroutine per request"
		if c.Kind == "pool" && c.Workers > 0 {
			behind = fmt.Sprintf("%d slots", c.Workers)
		}
		return fmt.Sprintf("a pool of %d: its %d database connections, as configured, behind %s: %s", c.Configured, c.DBConns, behind, measured)
	case findings.ClassedPoolSlots:
		return fmt.Sprintf("a pool of %d slots, as configured: %s", c.Configured, measured)
	case findings.ClassedPoolUndeclared:
		return "a pool, its size not declared: " + measured
	case findings.ClassedThreadEach:
		return fmt.Sprintf("forgives: one OS thread per blocked request (%d threads at %d callers; no pool up to %d callers)", c.Threads, c.Callers, c.Callers)
	case findings.ClassedForgivesAll:
		return fmt.Sprintf("forgives every caller measured (no pool up to %d callers), without a thread each (%d threads at %d callers)", c.Callers, c.Threads, c.Callers)
	}
	return ""
}

// boundShort is a bound in a few words: "99% of its workers' 788",
// "97% of its 64 callers' 12,405 (Little's law)".
func boundShort(b *findings.Bound, callers int) string {
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

// StallLine is stall counts in one line: "3, 6, 9, 12 of 12" when every k
// has the same connections, else each as it is, by k.
func StallLine(stalled []string) string {
	var counts []string
	of := ""
	for _, t := range stalled {
		n, rest, ok := strings.Cut(t, " of ")
		if !ok || strings.ContainsAny(rest, " ([") || strings.ContainsAny(n, " [") || of != "" && rest != of {
			var parts []string
			for k, t := range stalled {
				parts = append(parts, fmt.Sprintf("k=%d: %s", k+1, t))
			}
			return strings.Join(parts, "; ")
		}
		of = rest
		counts = append(counts, n)
	}
	return strings.Join(counts, ", ") + " of " + of
}
