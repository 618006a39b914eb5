package results

import (
	"fmt"

	"github.com/bystander-kit/bystander/internal/culprit"
)

// LagSchema names the format of a measurement's loop-lag file: what a loop
// server's /lag stream said while the measurement ran.
const LagSchema = "bystander.lag/v1"

// LagEvent is one line of a loop server's live lag stream (GET /lag on its
// admin address, made by lag.Monitor): every loop's lag and blocked time
// over the window that ended at TimeNs. It is also what the experiment
// keeps of each measured window (LagTrace).
type LagEvent struct {
	TimeNs     int64          `json:"t_unix_ns"`
	WindowNs   int64          `json:"window_ns"`
	IntervalNs int64          `json:"interval_ns"`
	WarnNs     int64          `json:"block_warn_ns"`
	Loops      []LagLoopEvent `json:"loops"`
}

// LagLoopEvent is one loop in a LagEvent. Lag figures are over the beats that
// ran in the window and the one still waiting, so a loop held through the
// whole window shows its lag growing, not nothing.
type LagLoopEvent struct {
	Loop         int     `json:"loop"`
	Beats        int     `json:"beats"`
	LagP50Ns     int64   `json:"lag_p50_ns"`
	LagMaxNs     int64   `json:"lag_max_ns"`
	BlockedNs    int64   `json:"blocked_ns"`
	BlockedShare float64 `json:"blocked_share"`
	BlockedNow   bool    `json:"blocked_now"`
	Route        string  `json:"route,omitempty"` // the ongoing block's
	// Counts since the server started: a reader diffs two events to count
	// the blocks between them.
	Blocks        int64            `json:"blocks_total"`
	BlocksByRoute map[string]int64 `json:"blocks_by_route"`
	Starved       int64            `json:"starved_total"`
	WaitingForP   int64            `json:"waiting_for_p_total"`
	Unknown       int64            `json:"unknown_total"`    // holds the detector could not judge: not blocks
	UnknownNs     int64            `json:"unknown_ns_total"` // how long the ones that ended held the loop
	// UnknownByRoute counts them by the route they began in: a loop held
	// in /slow and not judged was still held there.
	UnknownByRoute map[string]int64 `json:"unknown_by_route,omitempty"`
	// Culprit is the loop's last block with a stack, in the first event
	// after it was found and again when it ended (not in every event: a
	// reader keeps the last it saw; its start says whether it is in the
	// reader's window).
	Culprit *culprit.Record `json:"culprit,omitempty"`
}

// LagTrace is one measurement's loop lag: every event the server streamed
// (one per 100 ms), and the measured window the experiment used, so a
// reader keeps the events inside it.
type LagTrace struct {
	Schema      string     `json:"schema"`
	Server      string     `json:"server"`
	StartUnixNs int64      `json:"start_unix_ns"`
	EndUnixNs   int64      `json:"end_unix_ns"`
	Events      []LagEvent `json:"events"`
}

// InWindow is the events that end inside the measured window and began
// after its start.
func (t *LagTrace) InWindow() []LagEvent {
	var out []LagEvent
	for _, ev := range t.Events {
		if ev.TimeNs-ev.WindowNs >= t.StartUnixNs && ev.TimeNs <= t.EndUnixNs {
			out = append(out, ev)
		}
	}
	return out
}

// ReadLagIn reads the loop-lag file rel names in run directory dir,
// confined and capped, strictly, and refuses other schema versions.
func ReadLagIn(dir, rel string) (*LagTrace, error) {
	var t LagTrace
	if err := ReadIn(dir, rel, MaxFileBytes, &t); err != nil {
		return nil, err
	}
	if t.Schema != LagSchema {
		return nil, fmt.Errorf("results: %s: schema %q, this program reads %q", rel, t.Schema, LagSchema)
	}
	for i := range t.Events {
		for j := range t.Events[i].Loops {
			if c := t.Events[i].Loops[j].Culprit; c != nil { // a stranger's stack: capped
				clean := c.Clean()
				t.Events[i].Loops[j].Culprit = &clean
			}
		}
	}
	return &t, nil
}
