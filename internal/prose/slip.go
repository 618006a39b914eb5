package prose

import (
	"fmt"
	"time"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/words"
)

// The words of a slip: its ceilings and its sentence, said from the
// figures findings' slip.go computes.

// SlipCeiling is the step of the ceiling that binds, in words: "4 loops:
// 5ms -> 50ms = 800 -> 80 req/s".
func SlipCeiling(r findings.SlipRow) string {
	return fmt.Sprintf("%s: %s -> %s = %s -> %s req/s", Workers(r.Workers, r.Binds), r.Before.Block, r.After.Block, words.Thousands(r.Before.Ceiling), words.Thousands(r.After.Ceiling))
}

// SlipSentence says the slip of one server in words, with its figures:
// how far it fell against its ceiling, and where its after side starts.
func SlipSentence(r findings.SlipRow) string {
	name := r.Step.Server.Name
	if !r.Before.PerS.OK() || !r.After.PerS.OK() {
		if why := SlipNotSplit(r); why != "" {
			return fmt.Sprintf("%s: the two sides not told apart: %s.", name, why)
		}
		return ""
	}
	return fmt.Sprintf("%s fell %.1fx (%s -> %s req/s, %s and %s of %s), its ceiling %.0fx; its after side starts at %s, "+
		"once the last answer asked for %s came back (%s after the step).",
		name, r.Fell(), perS(r.Before.PerS), perS(r.After.PerS), pct(r.Before.Share), pct(r.After.Share), Workers(r.Workers, r.Binds)+" / the measured block",
		r.CeilingFell(), time.Duration(r.AfterFrom.Median()), r.Before.Block, ms(us(r.Settling)))
}

// SlipNotSplit says why a slip's two sides could not be told apart ("" when
// they were).
func SlipNotSplit(r findings.SlipRow) string {
	switch r.NotSplit {
	case findings.SlipNoSteps:
		return "its load result has no steps (loadgen --tick) or no moment of the slip"
	case findings.SlipNotSettled:
		return fmt.Sprintf("the requests asked for %s before the step were still being answered when the window ended", r.Before.Block)
	}
	return ""
}

// SlipMoment says when the call slowed, for a caption: halfway through
// each window, or in a run given on stage at the presenter's key (the
// plan's moment at the latest).
func SlipMoment(f *findings.Findings) string {
	if f.Params.Stage {
		return "at the presenter's key (each side from when it came)"
	}
	return "from halfway through each window"
}
