package experiment

import (
	"math"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/hist"
	"github.com/bystander-kit/bystander/internal/live"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/stall"
)

// TestLiveWaitIsTheReports: the wait a stall screen's cell shows live is
// the one the report gives for the same connection, one computation: the
// prober records each answered probe's wait in its histogram and findings
// take its p50 (stall.From); the stage's judge, fed the same probes as the
// prober's --live-out lines, ends on the same number for each connection.
// The waits are chosen where an exact median and the histogram's part
// (an even count, and values past the histogram's 1 us steps).
func TestLiveWaitIsTheReports(t *testing.T) {
	waits := map[int][]time.Duration{
		0: {250 * time.Microsecond, 310 * time.Microsecond, 280*time.Microsecond + 400, 9 * time.Millisecond},
		1: {903123456, 851234567, 98765432, 120000001, 450000000, 451000000},
		2: {},
	}
	judge := newLiveJudge(Step{ID: "stall-x-k1"})
	last := map[int]*float64{}
	pc := &results.PerConn{}
	for conn := range 3 {
		h := hist.New() // as the prober records it
		for _, w := range waits[conn] {
			h.Record(w)
			ev, _ := judge.add(live.Probe{Conn: conn, Loop: conn, WaitMs: float64(w) / 1e6}) // as the prober writes its line
			if ev.Conn != conn || ev.ID != "stall-x-k1" {
				t.Fatalf("probe on %d: event %+v", conn, ev)
			}
			last[conn] = ev.WaitMs
		}
		if len(waits[conn]) == 0 { // answered nothing: failed probes
			ev, _ := judge.add(live.Probe{Conn: conn, Loop: conn, Failed: true})
			last[conn] = ev.WaitMs
		}
		pc.Conns = append(pc.Conns, results.ConnStat{Conn: conn, Loop: conn, ServerWait: h.Summary()})
	}
	for i, c := range stall.From(pc) {
		got := last[c.ID]
		if !c.FromServer {
			if got != nil {
				t.Errorf("connection %d: the server said no wait, the stage shows %v ms", c.ID, *got)
			}
			continue
		}
		want := float64(c.Wait) / 1e6
		if got == nil || math.Abs(*got-want) > 1e-9 {
			t.Errorf("connection %d: the stage ends on %v ms, the report on %v ms (%d waits)", c.ID, got, want, len(waits[i]))
		}
	}
}
