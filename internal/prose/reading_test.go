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

// TestGroupWords: a step that left no figures says its first miss in full
// (a failure's first line, or the file not read) and in a table's cell by
// its status; one with no miss that says why is "no result".
func TestGroupWords(t *testing.T) {
	failed := &findings.Group{Miss: &findings.Miss{M: results.Measurement{Status: "failed", Reason: "the server died: exit status 2\nlog follows"}}}
	unread := &findings.Group{Miss: &findings.Miss{M: results.Measurement{Status: "ok"}, Unread: &findings.Unread{Field: "probe_file", File: "fifo.json", Why: "not a regular file"}}}
	for _, tc := range []struct {
		g          *findings.Group
		why, short string
	}{
		{failed, "failed: the server died: exit status 2", "failed (see below)"},
		{unread, `not read: its probe_file "fifo.json": not a regular file`, "not read (see below)"},
		{&findings.Group{}, "", "no result (see below)"},
	} {
		if why, short := GroupWhy(tc.g), Short(tc.g); why != tc.why || short != tc.short {
			t.Errorf("%+v: %q %q, want %q %q", tc.g.Miss, why, short, tc.why, tc.short)
		}
	}
	ps := findings.PhaseStatus{Phase: "stall", N: 3, OK: 1, Misses: []findings.Miss{*failed.Miss, *unread.Miss}}
	ps.Misses[0].M.ID, ps.Misses[1].M.ID = "stall-pool-k1", "stall-pool-k2"
	want := []string{"stall-pool-k1: failed: the server died: exit status 2", `stall-pool-k2: not read: its probe_file "fifo.json": not a regular file`}
	if st, p := PhaseStatus(ps), PhaseProblems(ps); st != "1 of 3 measurements; the others below" || !slices.Equal(p, want) {
		t.Errorf("phase: %q %q", st, p)
	}
	for _, tc := range []struct {
		ps   findings.PhaseStatus
		want string
	}{{findings.PhaseStatus{}, "not run"}, {findings.PhaseStatus{N: 2, OK: 2}, "2 of 2 measurements"}} {
		if got := PhaseStatus(tc.ps); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.ps, got, tc.want)
		}
	}
}
