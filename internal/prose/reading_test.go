package prose

import (
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/findings"
)

// TestBystanderWords: a saturated bystander is said with its rates and
// repetitions, censored probes with their count, a misaligned window with
// its offset to the millisecond; a bystander with none of these says
// nothing.
func TestBystanderWords(t *testing.T) {
	b := findings.Bystander{Saturated: true, SaturatedReps: 1, Due: findings.Figure{120, 100}, Censored: findings.Figure{75, 0},
		AnswersPerS: findings.Figure{7.5}, DuePerS: findings.Figure{20}, Misaligned: -41600 * time.Microsecond}
	if got := Saturated(b); !strings.HasPrefix(got, saturatedText) || !strings.HasSuffix(got, "(7.5 answers per second against 20.0 probes due, in 1 of 2 repetitions)") {
		t.Errorf("saturated: %q", got)
	}
	if got := Censored(b); !strings.HasPrefix(got, "38 of 110 due probes were unanswered when the window ended") {
		t.Errorf("censored: %q", got)
	}
	if got := Misaligned(b); !strings.HasPrefix(got, "the bystander's window began -42ms from the load's") {
		t.Errorf("misaligned: %q", got)
	}
	quiet := findings.Bystander{Due: findings.Figure{120}, Censored: findings.Figure{0}}
	if Saturated(quiet)+Censored(quiet)+Misaligned(quiet) != "" {
		t.Errorf("a quiet bystander says %q %q %q", Saturated(quiet), Censored(quiet), Misaligned(quiet))
	}
}
