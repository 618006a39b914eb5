package experiment

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/bystander-kit/bystander/internal/results"
)

// progress shows a bar per phase and the overall time left on a terminal,
// and plain lines elsewhere (CI logs, pipes).
type progress struct {
	w         io.Writer
	tty       bool
	plan      Plan
	total     int
	done      int
	left      time.Duration
	phase     string
	bar       *progressbar.ProgressBar
	stepStart time.Time
}

func newProgress(w io.Writer, plan Plan) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progress{w: w, tty: tty, plan: plan, total: (len(plan.Steps) - len(plan.Skips)) * plan.Options.Repeat, left: plan.Expected()}
}

// Observe shows the run's events: a measurement's start and end, a line
// of the run's, the end of measuring.
func (p *progress) Observe(ev Event) {
	switch ev := ev.(type) {
	case StepStarted:
		p.begin(ev.Step, ev.Rep)
	case StepEnded:
		p.end(ev.M, ev.Said)
	case Said:
		p.say(ev.Line)
	case Finished:
		p.finish()
	}
}

func (p *progress) phaseSteps(phase string) int {
	n := 0
	for _, s := range p.plan.Steps {
		if s.Phase == phase {
			n++
		}
	}
	return n
}

func (p *progress) begin(s Step, rep int) {
	p.stepStart = time.Now()
	if s.Phase != p.phase {
		p.phase = s.Phase
		if p.tty {
			if p.bar != nil {
				_ = p.bar.Finish()
				fmt.Fprintln(p.w)
			}
			p.bar = progressbar.NewOptions(p.phaseSteps(s.Phase),
				progressbar.OptionSetWriter(p.w),
				progressbar.OptionSetDescription(fmt.Sprintf("%-8s", s.Phase)),
				progressbar.OptionShowCount(),
				progressbar.OptionSetWidth(24),
				progressbar.OptionSetPredictTime(false),
				progressbar.OptionClearOnFinish(),
			)
		}
	}
	if p.tty && p.bar != nil {
		p.bar.Describe(fmt.Sprintf("%-8s %-26s overall: %d/%d, about %s left", s.Phase, label(s, rep), p.done, p.total, p.left.Round(time.Second)))
	}
}

// end says a measurement ended; said is its figure ("" for none).
func (p *progress) end(m results.Measurement, said string) {
	p.done++
	p.left -= m.Warmup + m.Duration + startCost
	if p.left < 0 {
		p.left = 0
	}
	line := fmt.Sprintf("[%d/%d %s] %s: %s", p.done, p.total, m.Phase, label(m.Step, m.Repeat), outcome(m, said))
	if p.tty && p.bar != nil {
		_ = p.bar.Add(1)
		if m.Status != "ok" {
			fmt.Fprintf(p.w, "\n%s\n", line)
		}
		return
	}
	fmt.Fprintf(p.w, "%s (took %s, about %s left)\n", line, time.Since(p.stepStart).Round(100*time.Millisecond), p.left.Round(time.Second))
}

// say prints a line of the run's own between the measurements' lines.
func (p *progress) say(line string) {
	if p.tty && p.bar != nil {
		fmt.Fprintf(p.w, "\n%s\n", line)
		return
	}
	fmt.Fprintln(p.w, line)
}

func (p *progress) finish() {
	if p.tty && p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.w)
	}
}

func label(s Step, rep int) string {
	l := s.Server.Name
	switch s.Phase {
	case "stall":
		l += fmt.Sprintf(" k=%d", s.K)
	case "offload":
		l += " " + s.Endpoint
		if s.Variant != "pool" { // a pool's /slow is the variant it names
			l += " (" + s.Variant + ")"
		}
	default:
		l += fmt.Sprintf(" %d callers", s.Conc)
		if s.Variant == results.Watched {
			l += " (watched)"
		}
	}
	if rep > 1 {
		l += fmt.Sprintf(" (rep %d)", rep)
	}
	return l
}

func outcome(m results.Measurement, said string) string {
	if m.Status != "ok" {
		return m.Status + ": " + m.Reason
	}
	return cmp.Or(said, "ok")
}
