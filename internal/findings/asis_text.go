package findings

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/stall"
	"github.com/bystander-kit/bystander/internal/words"
)

// The words of a server measured as it is: its columns and lines, said
// from the figures asis.go computes.

// StalledText is the step's stalled column: "3 of 12", or why not judged.
func (st AsIsStep) StalledText() string {
	switch {
	case !st.Stalled.OK() && len(st.Unjudged) > 0:
		if strings.HasPrefix(st.Unjudged[0], stall.TooBusy) {
			return stall.TooBusy
		}
		return "not judged"
	case !st.Stalled.OK():
		return "-"
	}
	s := num(st.Stalled, "%.0f") + fmt.Sprintf(" of %.0f", st.Probed.Median())
	if len(st.Unjudged) > 0 {
		s += fmt.Sprintf(" (%d of %d repetitions judged)", st.Judged, st.Judged+len(st.Unjudged))
	}
	return s
}

// WhoText names the stalled connections of the first judged repetition:
// "1, 5, 9", "all", "none" ("" when not judged).
func (st AsIsStep) WhoText() string {
	if st.Cells == nil {
		return ""
	}
	var who []int
	for _, c := range st.Cells {
		if c.Stalled {
			who = append(who, c.Conn)
		}
	}
	switch {
	case len(who) == 0:
		return "none"
	case len(who) == len(st.Cells):
		return "all"
	}
	return words.Ints(who, ", ")
}

// Short is its class in a few words, with the workers it behaves as.
func (a AsIs) Short() string {
	var s string
	switch {
	case a.Class == ClassLoop && strings.HasPrefix(a.Text, "a thread "):
		s = "a thread the load holds"
	case a.Class == ClassLoop:
		s = "a few threads the load holds"
	case a.Class == ClassPool:
		s = fmt.Sprintf("a pool that forgives it up to %s", words.Plural(a.Forgives, "caller"))
	default:
		s = "its class not told"
	}
	if a.Workers > 0 {
		w := fmt.Sprintf("%.1f", a.Workers)
		if a.AtLeast {
			w = "at least " + w
		}
		s += "; behaves as " + w + " workers"
	}
	return s
}

// StalledLine is every step's stalled connections: "3 of 12 at 1
// caller, 12 of 12 at 4, machine too busy to judge at 16".
func (a AsIs) StalledLine() string {
	var parts []string
	for i, st := range a.Steps {
		at := fmt.Sprintf("at %d", st.Step.Conc)
		if i == 0 {
			at = "at " + words.Plural(st.Step.Conc, "caller")
		}
		parts = append(parts, st.StalledText()+" "+at)
	}
	return strings.Join(parts, ", ")
}

// CPUText says whether the call ran on a CPU, with the figures, or that
// the machine's starvation left it not told.
func (a AsIs) CPUText() string {
	switch s1 := a.step(1); {
	case s1 == nil || !s1.OK():
		return "CPU: not known (the sweep at 1 caller was not measured)"
	case !a.CPUKnown:
		return "CPU: not measured (no pid=: the server's threads are not read)"
	}
	switch {
	case !a.CPUTold && a.CPUShare+a.RunqShare < cpuBoundShare:
		return fmt.Sprintf("CPU: cannot tell: the load kept a call running only %.0f%% of the window at 1 caller (between its calls a thread sleeps, whatever its call does): its busiest thread (%s) was on a CPU %.0f%% of the window and waiting for one %.0f%%, the server used %.2f cores",
			100*a.Running, a.CPUThread, 100*a.CPUShare, 100*a.RunqShare, a.Cores)
	case !a.CPUTold:
		return fmt.Sprintf("CPU: cannot tell: the machine kept its busiest thread (%s) waiting for a CPU %.0f%% of the window at 1 caller, on a CPU %.0f%%, the server used %.2f cores: "+
			"a call that waits (for a CPU at each wake-up) and one on a CPU (between the others' slices) look alike", a.CPUThread, 100*a.RunqShare, 100*a.CPUShare, a.Cores)
	}
	figures := fmt.Sprintf("at 1 caller its busiest thread (%s) was on a CPU %.0f%% of the window and waiting for one %.0f%% of it, the server used %.2f cores",
		a.CPUThread, 100*a.CPUShare, 100*a.RunqShare, a.Cores)
	if a.CPUBound {
		return fmt.Sprintf("on a CPU: %s (a call that waits cannot run %.0f%% of the window)", figures, 100*cpuBoundShare)
	}
	return fmt.Sprintf("off the CPU (it waits): %s (a call on a CPU keeps its thread wanting one while it runs)", figures)
}

// WorkersText is the workers it behaves as, in words: "4.0 workers (its
// plateau 788 req/s x the call's 5.08ms, Little's law)".
func (a AsIs) WorkersText() string {
	if a.Workers <= 0 {
		return "not known"
	}
	s := fmt.Sprintf("%.1f workers (its plateau %s at %s x the call's %s, Little's law)", a.Workers, words.PerS(a.Plateau), words.Plural(a.PlateauAt, "caller"), words.Round(a.CallTime()))
	if a.AtLeast {
		s = "at least " + s + ": it served the sweep's most callers at once"
	}
	return s
}

// CeilingText is its ceiling: "4 workers / 5.08ms = 787 req/s".
func (a AsIs) CeilingText() string {
	if a.Ceiling <= 0 {
		if a.AtLeast {
			return fmt.Sprintf("not reached: over %s", words.PerS(a.Plateau))
		}
		return "not known"
	}
	return fmt.Sprintf("%s / %s = %s", words.Plural(max(1, int(math.Round(a.Workers))), "worker"), words.Round(a.CallTime()), words.PerS(a.Ceiling))
}

// rise says how the bystander's median went with the load: "from 0.32ms
// unloaded to 1.0ms at 1 caller and 34ms at 16".
func (a AsIs) rise() string {
	var parts []string
	for i := range a.Steps {
		if p, ok := bystanderP50(&a.Steps[i]); ok {
			parts = append(parts, fmt.Sprintf("%s at %s", words.Round(time.Duration(p*1e3)), words.Plural(a.Steps[i].Step.Conc, "caller")))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	s := "its bystander's median from due: " + strings.Join(parts, ", ")
	if u := a.Unloaded(); u > 0 {
		s += fmt.Sprintf(" (unloaded %s)", words.Round(time.Duration(u*1e3)))
	}
	return s
}

// Closed says whether the service closed the load's connections: its
// callers dialled more than twice each.
func (st AsIsStep) Closed() bool {
	return st.Dials.OK() && st.Dials.Median() > 2*float64(st.Step.Conc)
}
