package prose

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/stall"
	"github.com/bystander-kit/bystander/internal/words"
)

// The words of a server measured as it is, said from the figures
// findings' asis.go computes.

// AsIsClosed says that the service closed the load's connections, when it
// did (its callers dialled more than twice each): "" when it kept them.
func AsIsClosed(st findings.AsIsStep) string {
	if !st.Closed() {
		return ""
	}
	closed := fmt.Sprintf("the service closed the load's connections: %s dials for its %s", num(st.Dials, "%.0f"), words.Plural(st.Step.Conc, "caller"))
	if !st.PerClose.OK() || st.PerClose.Median() < 2 {
		return closed + ": each answer paid for a connection's setup"
	}
	// Tomcat closes a kept-alive connection after its 100th request
	// (maxKeepAliveRequests): a setup that often costs little.
	return fmt.Sprintf("%s, one closed every %s requests", closed, num(st.PerClose, "%.0f"))
}

// AsIsPlateau is its highest throughput and where: "17,189 req/s at 64
// callers", or "not measured".
func AsIsPlateau(a findings.AsIs) string {
	if a.Plateau <= 0 {
		return "not measured"
	}
	return fmt.Sprintf("%s at %s", words.PerS(a.Plateau), words.Plural(a.PlateauAt, "caller"))
}

// asIsAt is a's step at conc callers (nil: not measured).
func asIsAt(a findings.AsIs, conc int) *findings.AsIsStep {
	for i := range a.Steps {
		if a.Steps[i].Step.Conc == conc {
			return &a.Steps[i]
		}
	}
	return nil
}

// connsOffset begins the why of a repetition not judged because its 12
// connections' window did not lie over the load's.
const connsOffset = "the 12 connections' window began "

// AsIsUnjudged says why a repetition of st was not judged, "repetition 2:
// " first when st has more than one.
func AsIsUnjudged(st findings.AsIsStep, u findings.AsIsUnjudged) string {
	why := u.Why
	switch {
	case u.Offset > 0:
		why = fmt.Sprintf(connsOffset+"%s after the load's (their prober placed them late): it ran on past the load's end, unloaded, which would lower a stalled connection's median", u.Offset.Round(time.Millisecond))
	case u.Offset < 0:
		why = fmt.Sprintf(connsOffset+"%s before the load's (the load started late): its start was unloaded, which would lower a stalled connection's median", (-u.Offset).Round(time.Millisecond))
	}
	if len(st.Reps) > 1 {
		why = fmt.Sprintf("repetition %d: %s", u.Repeat, why)
	}
	return why
}

// asIsUnjudged says why each repetition of st not judged was not (nil:
// none).
func asIsUnjudged(st findings.AsIsStep) []string {
	var out []string
	for _, u := range st.Unjudged {
		out = append(out, AsIsUnjudged(st, u))
	}
	return out
}

// AsIsStalled is the step's stalled column: "3 of 12", or why not judged.
func AsIsStalled(st findings.AsIsStep) string {
	switch {
	case !st.Stalled.OK() && len(st.Unjudged) > 0:
		if st.Unjudged[0].Busy {
			return stall.TooBusy
		}
		return "not judged"
	case !st.Stalled.OK():
		return "-"
	}
	return stalledOf(st.Stalled, st.Probed, st.Judged, len(st.Unjudged))
}

// AsIsWho names the stalled connections of the first judged repetition:
// "1, 5, 9", "all", "none" ("" when not judged).
func AsIsWho(st findings.AsIsStep) string {
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

// AsIsShort is its class in a few words, with the workers it behaves as.
func AsIsShort(a findings.AsIs) string {
	var s string
	switch {
	case a.Class == findings.ClassLoop && a.Case == findings.AsIsOneThread:
		s = "a thread the load holds"
	case a.Class == findings.ClassLoop:
		s = "a few threads the load holds"
	case a.Class == findings.ClassPool:
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

// AsIsStalledLine is every step's stalled connections: "3 of 12 at 1
// caller, 12 of 12 at 4, machine too busy to judge at 16".
func AsIsStalledLine(a findings.AsIs) string {
	var parts []string
	for i, st := range a.Steps {
		at := fmt.Sprintf("at %d", st.Step.Conc)
		if i == 0 {
			at = "at " + words.Plural(st.Step.Conc, "caller")
		}
		parts = append(parts, AsIsStalled(st)+" "+at)
	}
	return strings.Join(parts, ", ")
}

// AsIsCPU says whether the call ran on a CPU, with the figures, or that
// the machine's starvation left it not told.
func AsIsCPU(a findings.AsIs) string {
	switch s1 := asIsAt(a, 1); {
	case s1 == nil || !s1.OK():
		return "CPU: not known (the sweep at 1 caller was not measured)"
	case !a.CPUKnown:
		return "CPU: not measured (no pid=: the server's threads are not read)"
	}
	switch {
	case !a.CPUTold && a.CPUShare+a.RunqShare < findings.CPUBoundShare:
		return fmt.Sprintf("CPU: cannot tell: the load kept a call running only %.0f%% of the window at 1 caller (between its calls a thread sleeps, whatever its call does): its busiest thread (%s) was on a CPU %.0f%% of the window and waiting for one %.0f%%, the server used %.2f cores",
			100*a.Running, a.CPUThread, 100*a.CPUShare, 100*a.RunqShare, a.Cores)
	case !a.CPUTold:
		return fmt.Sprintf("CPU: cannot tell: the machine kept its busiest thread (%s) waiting for a CPU %.0f%% of the window at 1 caller, on a CPU %.0f%%, the server used %.2f cores: "+
			"a call that waits (for a CPU at each wake-up) and one on a CPU (between the others' slices) look alike", a.CPUThread, 100*a.RunqShare, 100*a.CPUShare, a.Cores)
	}
	figures := fmt.Sprintf("at 1 caller its busiest thread (%s) was on a CPU %.0f%% of the window and waiting for one %.0f%% of it, the server used %.2f cores",
		a.CPUThread, 100*a.CPUShare, 100*a.RunqShare, a.Cores)
	if a.CPUBound {
		return fmt.Sprintf("on a CPU: %s (a call that waits cannot run %.0f%% of the window)", figures, 100*findings.CPUBoundShare)
	}
	return fmt.Sprintf("off the CPU (it waits): %s (a call on a CPU keeps its thread wanting one while it runs)", figures)
}

// AsIsWorkers is the workers it behaves as, in words: "4.0 workers (its
// plateau 788 req/s x the call's 5.08ms, Little's law)".
func AsIsWorkers(a findings.AsIs) string {
	if a.Workers <= 0 {
		return "not known"
	}
	s := fmt.Sprintf("%.1f workers (its plateau %s at %s x the call's %s, Little's law)", a.Workers, words.PerS(a.Plateau), words.Plural(a.PlateauAt, "caller"), words.Round(a.CallTime()))
	if a.AtLeast {
		s = "at least " + s + ": it served the sweep's most callers at once"
	}
	return s
}

// AsIsCeiling is its ceiling: "4 workers / 5.08ms = 787 req/s".
func AsIsCeiling(a findings.AsIs) string {
	if a.Ceiling <= 0 {
		if a.AtLeast {
			return fmt.Sprintf("not reached: over %s", words.PerS(a.Plateau))
		}
		return "not known"
	}
	return fmt.Sprintf("%s / %s = %s", words.Plural(max(1, int(math.Round(a.Workers))), "worker"), words.Round(a.CallTime()), words.PerS(a.Ceiling))
}

// asIsRise says how the bystander's median went with the load: "from
// 0.32ms unloaded to 1.0ms at 1 caller and 34ms at 16".
func asIsRise(a findings.AsIs) string {
	var parts []string
	for _, st := range a.Steps {
		if st.Fast.P50.OK() {
			parts = append(parts, fmt.Sprintf("%s at %s", words.Round(time.Duration(st.Fast.P50.Median()*1e3)), words.Plural(st.Step.Conc, "caller")))
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

// AsIsClass says its class with the figures that decided it (findings'
// AsIsCase), or why it cannot tell.
func AsIsClass(a findings.AsIs) string {
	s1 := asIsAt(a, 1)
	switch a.Case {
	case 0:
		return ""
	case findings.AsIsNotMeasured:
		why := "the sweep at 1 caller was not measured"
		if s1 != nil && s1.Group != nil && GroupWhy(s1.Group) != "" {
			why += " (" + GroupWhy(s1.Group) + ")"
		}
		return "cannot tell: " + why
	case findings.AsIsCallShort:
		return fmt.Sprintf("cannot tell: its call takes %s at 1 caller, under the %s from which a wait can be told from the machine's noise: it holds nobody long enough to see whom",
			words.Round(a.CallTime()), stall.Floor)
	case findings.AsIsNotJudged:
		why := "no verdict on its 12 connections"
		if len(s1.Unjudged) > 0 {
			why = AsIsUnjudged(*s1, s1.Unjudged[0])
		}
		return "cannot tell: at 1 caller, " + why
	}
	figures := []string{"behaves as " + AsIsWorkers(a)}
	if r := asIsRise(a); r != "" {
		figures = append(figures, r)
	}
	switch a.Case {
	case findings.AsIsOneThread:
		return fmt.Sprintf("a thread the load holds: at 1 caller every one of its %.0f connections stalled behind the call", s1.Probed.Median()) + "; " + strings.Join(figures, "; ")
	case findings.AsIsFewThreads:
		return fmt.Sprintf("a few threads the load holds: at 1 caller %s of %.0f connections stalled (%s), the others did not", num(s1.Stalled, "%.0f"), s1.Probed.Median(), AsIsWho(*s1)) +
			"; " + strings.Join(figures, "; ")
	}
	text := fmt.Sprintf("a pool that forgives it up to %s: none of its connections stalled up to there", words.Plural(a.Forgives, "caller"))
	if st := asIsAt(a, a.Forgives); st != nil {
		if r, ok := a.WaitOverUnloaded(*st); ok {
			text += fmt.Sprintf(", its 12 connections' median wait %.1fx their wait unloaded", r)
		}
	}
	// The first step past those it forgave: not judged, or its callers
	// queued.
	for _, st := range a.Steps {
		if st.Step.Conc <= a.Forgives {
			continue
		}
		if st.Judged == 0 {
			text += fmt.Sprintf("; at %s %s", words.Plural(st.Step.Conc, "caller"), AsIsStalled(st))
		} else {
			text += fmt.Sprintf("; at %s %s stalled: its callers queued", words.Plural(st.Step.Conc, "caller"), AsIsStalled(st))
		}
		break
	}
	return text + "; " + strings.Join(figures, "; ")
}
