package prose

import (
	"fmt"
	"slices"
	"time"

	"github.com/bystander-kit/bystander/internal/findings"
)

// The words of reading a run: the bystander's saturation and window,
// said from the figures findings' load.go keeps.

// saturatedText is how a saturated bystander is reported in words.
const saturatedText = "the bystander's queue grows without bound: its latency is set by the run's length"

// Saturated says why the bystander saturated, with the rates ("" when it
// did not).
func Saturated(b findings.Bystander) string {
	if !b.Saturated {
		return ""
	}
	return fmt.Sprintf("%s (%.1f answers per second against %.1f probes due, in %d of %d repetitions)",
		saturatedText, b.AnswersPerS.Median(), b.DuePerS.Median(), b.SaturatedReps, len(b.Due))
}

// Censored says what the censored probes mean, or "" with none.
func Censored(b findings.Bystander) string {
	if !slices.ContainsFunc(b.Censored, func(n float64) bool { return n > 0 }) {
		return ""
	}
	return fmt.Sprintf("%.0f of %.0f due probes were unanswered when the window ended and count at their wait so far: the percentiles from due are lower bounds",
		b.Censored.Median(), b.Due.Median())
}

// Misaligned says that the bystander's window did not begin with the
// load's, or "" when it did.
func Misaligned(b findings.Bystander) string {
	if b.Misaligned == 0 {
		return ""
	}
	return fmt.Sprintf("the bystander's window began %s from the load's (one of them started late): its figures cover a slightly different stretch", b.Misaligned.Round(time.Millisecond))
}
