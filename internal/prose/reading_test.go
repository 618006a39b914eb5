package prose

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
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

// TestRunNotes: what the orchestrator noticed and what was not measured
// are said measurement by measurement with their id and repetition, the
// files not read before the measurements that did not succeed; a run with
// neither says nothing (nil: findings.json's null).
func TestRunNotes(t *testing.T) {
	ok := results.Measurement{Step: results.Step{ID: "sweep-pool-c4"}, Repeat: 1, Status: "ok", Notes: []string{"the prober started late; /proc not read for it"}}
	failed := results.Measurement{Step: results.Step{ID: "stall-pool-k1"}, Repeat: 2, Status: "failed", Reason: "the server died\nexit status 2"}
	f := &findings.Findings{Run: &results.Run{Measurements: []results.Measurement{failed, ok}},
		Unread: []findings.Unread{{ID: "sweep-pool-c8", Repeat: 1, Field: "load_file", File: "../x.json", Why: "outside the run directory"}}}
	if got, want := Noticed(f), []string{"sweep-pool-c4 (rep 1): the prober started late; /proc not read for it"}; !slices.Equal(got, want) {
		t.Errorf("noticed %q, want %q", got, want)
	}
	want := []string{`sweep-pool-c8 (rep 1): not read: its load_file "../x.json" was not read: outside the run directory`,
		"stall-pool-k1 (rep 2): failed: the server died\nexit status 2"}
	if got := NotMeasured(f); !slices.Equal(got, want) {
		t.Errorf("not measured %q, want %q", got, want)
	}
	if got := Unread(f.Unread[0]); got != want[0] {
		t.Errorf("unread %q", got)
	}
	quiet := &findings.Findings{Run: &results.Run{Measurements: []results.Measurement{{Status: "ok"}}}}
	if Noticed(quiet) != nil || NotMeasured(quiet) != nil {
		t.Errorf("a quiet run says %q %q", Noticed(quiet), NotMeasured(quiet))
	}
}
