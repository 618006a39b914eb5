package experiment

import (
	"strings"
	"testing"
)

// TestRepeat: with --repeat the variants alternate within each repetition.
// (The tables' medians and spread: internal/findings' TestTablesOfRepeats.)
func TestRepeat(t *testing.T) {
	o := opts(t, func(o *Options) { o.Repeat, o.Phases, o.Conc = 2, []string{"sweep"}, []int{4, 16} })
	run := newRun(BuildPlan(o), now)
	var order []string
	for _, m := range run.Measurements {
		order = append(order, m.ID+"/"+string(rune('0'+m.Repeat)))
	}
	want := "sweep-loop-gnet-c4/1 sweep-pool-c4/1 sweep-loop-gnet-c16/1 sweep-pool-c16/1 sweep-loop-gnet-c4/2 sweep-pool-c4/2 sweep-loop-gnet-c16/2 sweep-pool-c16/2"
	if got := strings.Join(order, " "); got != want {
		t.Fatalf("order %s\nwant  %s", got, want)
	}
}
