package results

import (
	"fmt"

	"github.com/bystander-kit/bystander/internal/lag"
)

// LagSchema names the format of a measurement's loop-lag file: what a loop
// server's /lag stream said while the measurement ran.
const LagSchema = "bystander.lag/v1"

// LagTrace is one measurement's loop lag: every event the server streamed
// (one per 100 ms), and the measured window the experiment used, so a
// reader keeps the events inside it.
type LagTrace struct {
	Schema      string      `json:"schema"`
	Server      string      `json:"server"`
	StartUnixNs int64       `json:"start_unix_ns"`
	EndUnixNs   int64       `json:"end_unix_ns"`
	Events      []lag.Event `json:"events"`
}

// InWindow is the events that end inside the measured window and began
// after its start.
func (t *LagTrace) InWindow() []lag.Event {
	var out []lag.Event
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
