package stage

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Schema names the recording's format; its first line says it, and a
// replay refuses a recording that does not.
const Schema = "bystander.stage/v1"

// Event is one thing the stage saw. Each kind is a struct of its own;
// on the wire it is a JSON object whose "k" names the kind.
type Event interface{ Kind() string }

// Hello tells the page the run's shape.
type Hello struct {
	Loops        int                `json:"loops"`
	Slots        int                `json:"slots"`
	BlockMs      float64            `json:"block_ms"`
	StallBlockMs float64            `json:"stall_block_ms"`
	Conc         []int              `json:"conc"`
	ServersKind  map[string]string  `json:"servers_kind"`
	Ceiling      map[string]float64 `json:"ceiling"`
	// CeilingText is each ceiling in words, as the report labels it;
	// Colors each server's hue, the report's (internal/palette); Pale
	// the same, paler (its offloaded variant).
	CeilingText map[string]string `json:"ceiling_text"`
	Colors      map[string]string `json:"colors"`
	Pale        map[string]string `json:"pale"`
	StallConns  int               `json:"stall_conns"`
	Engines     []string          `json:"engines"`
	// Rule is the stall rule in words (internal/stall).
	Rule string `json:"rule"`
	// Screens is how many screens the talk has (5 when not said);
	// SlipBlockMs the slip's slowed call (screen 6).
	Screens     int     `json:"screens,omitempty"`
	SlipBlockMs float64 `json:"slip_block_ms,omitempty"`
	// AsIs: a talk on services measured as they are (--load): Load and
	// Bystander are their requests' names, as the user gave them (text,
	// never markup), and Skips says, screen by screen, why a screen that
	// needs the kit's protocol shows nothing of them, in the room's words.
	AsIs      bool           `json:"as_is,omitempty"`
	Load      string         `json:"load,omitempty"`
	Bystander string         `json:"bystander,omitempty"`
	Skips     map[int]string `json:"skips,omitempty"`
}

// Screen: the presenter moved to screen Screen; on a screen of several
// slides (screen 4, one k each), Focus is the step the slide shows.
type Screen struct {
	Screen int    `json:"screen"`
	Focus  string `json:"focus,omitempty"`
}

// State is a line of what the stage is doing.
type State struct {
	State string `json:"state"`
}

// Step says a measurement began (State "start") or ended ("end"); at its
// end Row carries its figures as internal/findings computed them.
type Step struct {
	ID       string   `json:"id"`
	Phase    string   `json:"phase"`
	Server   string   `json:"server"`
	Conc     int      `json:"conc"`
	K        int      `json:"kk"`
	Variant  string   `json:"variant"`
	Endpoint string   `json:"endpoint"`
	State    string   `json:"state"`
	Screen   int      `json:"screen"`
	Workers  int      `json:"workers"`
	Ceiling  float64  `json:"ceiling"`
	Status   string   `json:"status,omitempty"`
	Row      *StepRow `json:"row,omitempty"`
}

// StepRow is a finished measurement's figures, from internal/findings: the
// same the tables and the report show.
type StepRow struct {
	// A load: its throughput; the /fast bystander's p50 from due, a lower
	// bound (AtLeast) when it saturated.
	RPS         float64 `json:"rps,omitempty"`
	FastP50Ms   float64 `json:"fast_p50_ms,omitempty"`
	FastAtLeast bool    `json:"fast_at_least,omitempty"`
	// A stall measurement: the stall rule's verdict.
	Stall *Verdict `json:"stall,omitempty"`
	// A slip: req/s before the call slowed and after (the drain between
	// on neither side), and when it slowed, ms into the measured window.
	SlipBefore float64 `json:"slip_before,omitempty"`
	SlipAfter  float64 `json:"slip_after,omitempty"`
	SlipAtMs   float64 `json:"slip_at_ms,omitempty"`
	// NotRead says which of its files was not read, and why: its figures
	// are then not known, and the page says so rather than show the live
	// rate or a 0.
	NotRead string `json:"not_read,omitempty"`
}

// Throughput is a load's live rate.
type Throughput struct {
	ID  string  `json:"id"`
	RPS float64 `json:"rps"`
}

// Probe is a /fast probe answered Ms after it was due.
type Probe struct {
	ID     string  `json:"id"`
	Server string  `json:"server"`
	Ms     float64 `json:"ms"`
}

// Conn is a stall connection as the stage has seen it so far: the median
// of what the server made its probes wait (WaitMs, by the server's own
// clock: the figure the stall rule judges and the report's heatmap
// shows; nil when the server said none), its slowest answer from due
// (Ms), and whether the stall rule, on what it has seen so far, says it
// stalled. A recording made before WaitMs has Ms only: the frame's
// slowest answer.
type Conn struct {
	ID      string   `json:"id"`
	Conn    int      `json:"conn"`
	Loop    int      `json:"loop"`
	Ms      float64  `json:"ms"`
	WaitMs  *float64 `json:"wait_ms,omitempty"`
	Stalled bool     `json:"stalled"`
}

// Cell is a stall connection at its step's end, as the report's heatmap
// gives it (internal/findings): the median wait the server made it, by
// its own clock, and whether the rule says it stalled.
type Cell struct {
	Conn    int     `json:"conn"`
	Loop    int     `json:"loop"`
	WaitMs  float64 `json:"wait_ms"`
	Stalled bool    `json:"stalled"`
}

// Verdict is the stall rule's (internal/stall) on a stall measurement:
// live, on the probes so far, then at the step's end, on all of them.
type Verdict struct {
	ID      string `json:"id"`
	Judged  bool   `json:"judged"`
	Stalled int    `json:"stalled"`
	Conns   int    `json:"conns"`
	Why     string `json:"why,omitempty"`
	// Final: the step's end, as the tables and the report say it.
	Final bool `json:"final,omitempty"`
	// Seen is what the outside view found held in the step (a server the
	// kit looked at from /proc and a JVM's stacks), a line each: the
	// threads and where, then how many of each family.
	Seen []string `json:"seen,omitempty"`
	// Cells are the connections at the step's end (Final), as the
	// report's heatmap gives them.
	Cells []Cell `json:"cells,omitempty"`
}

// Lag is one loop's largest lag in a window of the server's /lag stream.
type Lag struct {
	Server  string  `json:"server"`
	Loop    int     `json:"loop"`
	Ms      float64 `json:"ms"`
	Blocked bool    `json:"blocked"`
	At      int64   `json:"at"`
	// Where is where the server's detector saw the loop held, for a block
	// that began in the last second ("in syscall at block.nanosleep
	// (block/block.go:82)"), and HeldMs how long (so far, while it holds).
	Where  string  `json:"where,omitempty"`
	HeldMs float64 `json:"held_ms,omitempty"`
}

// Slip: the presenter slowed the slip's call, At ms into the stage.
type Slip struct {
	ID string `json:"id"`
	At int64  `json:"at"`
}

// Done: the run ended; its report and directory.
type Done struct {
	Report string `json:"report"`
	Dir    string `json:"dir"`
}

func (Hello) Kind() string      { return "hello" }
func (Screen) Kind() string     { return "screen" }
func (State) Kind() string      { return "state" }
func (Step) Kind() string       { return "step" }
func (Throughput) Kind() string { return "tp" }
func (Probe) Kind() string      { return "probe" }
func (Conn) Kind() string       { return "conn" }
func (Verdict) Kind() string    { return "verdict" }
func (Lag) Kind() string        { return "lag" }
func (Done) Kind() string       { return "done" }
func (Slip) Kind() string       { return "slip" }

// Kinds are the events a recording may hold.
var Kinds = []string{"hello", "screen", "state", "step", "tp", "probe", "conn", "verdict", "lag", "done", "slip"}

// encode writes ev as a JSON object with its kind in "k" first.
func encode(ev Event) (json.RawMessage, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	if len(b) < 2 || b[0] != '{' {
		return nil, fmt.Errorf("stage: %T is not an object", ev)
	}
	k, _ := json.Marshal(ev.Kind())
	var out bytes.Buffer
	out.WriteString(`{"k":`)
	out.Write(k)
	if len(b) > 2 {
		out.WriteByte(',')
	}
	out.Write(b[1:])
	return out.Bytes(), nil
}
