package prose

import (
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
)

// TestSlipWords: a slip's ceilings and its sentence say its figures (the
// figures: findings' TestSlip); a slip whose sides were not told apart
// says why, and one with neither figures nor why says nothing.
func TestSlipWords(t *testing.T) {
	g := &findings.Group{Step: results.Step{ID: "slip-loop-gnet", Server: results.Server{Name: "loop-gnet", Kind: "loop", Workers: 4}}}
	r := findings.SlipRow{Group: g, Workers: 4, Binds: findings.WorkerLoops,
		Before:    findings.SlipHalf{Block: 5 * time.Millisecond, Ceiling: 800, PerS: findings.Figure{770}, Share: findings.Figure{770.0 / 800}},
		After:     findings.SlipHalf{Block: 50 * time.Millisecond, Ceiling: 80, PerS: findings.Figure{80}, Share: findings.Figure{1}},
		AfterFrom: findings.Figure{float64(2200 * time.Millisecond)}, Settling: findings.Figure{float64(150 * time.Millisecond)}}
	if got, want := SlipCeiling(r), "4 loops: 5ms -> 50ms = 800 -> 80 req/s"; got != want {
		t.Errorf("ceiling %q, want %q", got, want)
	}
	want := "loop-gnet fell 9.6x (770 -> 80.0 req/s, 96% and 100% of 4 loops / the measured block), its ceiling 10x; its after side starts at 2.2s, " +
		"once the last answer asked for 5ms came back (150.0ms after the step)."
	if got := SlipSentence(r); got != want {
		t.Errorf("sentence\n%q, want\n%q", got, want)
	}
	pool := r
	pool.Workers, pool.Binds, pool.Before.Ceiling, pool.After.Ceiling = 64, findings.WorkerCallers, 12800, 1280
	if got, want := SlipCeiling(pool), "64 callers: 5ms -> 50ms = 12,800 -> 1,280 req/s"; got != want {
		t.Errorf("ceiling %q, want %q", got, want)
	}
	r.After.PerS, r.NotSplit = nil, findings.SlipNotSettled
	if got, want := SlipSentence(r), "loop-gnet: the two sides not told apart: the requests asked for 5ms before the step were still being answered when the window ended."; got != want {
		t.Errorf("sentence %q, want %q", got, want)
	}
	r.NotSplit = findings.SlipNoSteps
	if got, want := SlipSentence(r), "loop-gnet: the two sides not told apart: its load result has no steps (loadgen --tick) or no moment of the slip."; got != want {
		t.Errorf("sentence %q, want %q", got, want)
	}
	if r.NotSplit = findings.SlipSplit; SlipSentence(r) != "" {
		t.Errorf("nothing to say: %q", SlipSentence(r))
	}
}

// TestSlipMoment: a run given on stage slowed the call at the presenter's
// key, any other halfway through each window.
func TestSlipMoment(t *testing.T) {
	f := &findings.Findings{}
	if got := SlipMoment(f); got != "from halfway through each window" {
		t.Errorf("a run's moment: %q", got)
	}
	f.Params.Stage = true
	if got := SlipMoment(f); got != "at the presenter's key (each side from when it came)" {
		t.Errorf("a stage run's moment: %q", got)
	}
}

// TestSlipNotSplitRow: a slip measured whose two sides could not be told
// apart says why in its row of the tables.
func TestSlipNotSplitRow(t *testing.T) {
	g := &findings.Group{Step: results.Step{ID: "slip-pool", Phase: "slip", Conc: 64, Server: results.Server{Name: "pool", Kind: "pool", Workers: 200}},
		Load: []*results.Result{{}}}
	r := findings.SlipRow{Group: g, Workers: 64, Binds: findings.WorkerCallers, NotSplit: findings.SlipNotSettled,
		Before: findings.SlipHalf{Block: 5 * time.Millisecond, PerS: findings.Figure{9000}}, After: findings.SlipHalf{Block: 50 * time.Millisecond}}
	var sb strings.Builder
	WriteTables(&sb, &findings.Findings{Run: &results.Run{}, Slip: []findings.SlipRow{r}})
	if want := "pool    the two sides not told apart: the requests asked for 5ms before the step were still being answered when the window ended"; !strings.Contains(sb.String(), want) {
		t.Errorf("the row does not say why:\n%s", sb.String())
	}
}
