package experiment

import (
	"time"

	"github.com/bystander-kit/bystander/internal/results"
)

// The runner tells its observers what happens, as it happens, in a small
// set of typed events: the terminal's progress (progress.go) and the
// stage (stagesource.go) are observers, and see nothing else of the run.
// An observer that wants what the tools see while a step runs (the
// stage) is a LiveObserver too, and is told the live samples below.

// Event is one of StepStarted, StepEnded, Said and Finished.
type Event interface{ event() }

// StepStarted: a step is about to be measured, its Rep-th time.
type StepStarted struct {
	Step Step
	Rep  int
}

// StepEnded: a step was measured and its measurement recorded in
// run.json; Said is its figure for the progress line ("" for none).
type StepEnded struct {
	M    results.Measurement
	Said string
}

// Said is a line of the run's own between the measurements' lines (a
// watched step's findings, the private database's death).
type Said struct{ Line string }

// Finished: measuring is over; the write-up follows.
type Finished struct{}

func (StepStarted) event() {}
func (StepEnded) event()   {}
func (Said) event()        {}
func (Finished) event()    {}

// Observer is told every event, in order, on the runner's goroutine.
type Observer interface{ Observe(Event) }

// Live is one of LiveRate, LiveProbe, LiveConn, LiveVerdict and LiveLag:
// what a step's tools (their --live-out lines, tailed) and its server's
// /lag stream say while the step runs.
type Live interface{ live() }

// LiveRate: step ID's load answered RPS requests a second over the last
// second (or since its clock started).
type LiveRate struct {
	ID  string
	RPS float64
}

// LiveProbe: a /fast probe of step ID on Server, answered Ms after it was
// due.
type LiveProbe struct {
	ID, Server string
	Ms         float64
}

// LiveConn: a connection of stall step ID (on Loop) as seen so far: its
// slowest answer from due (Ms), the median of what the server made its
// probes wait (WaitMs, nil when the server said none), whether the stall
// rule, as it last judged, says it stalled, and how many of its probes
// were due so far (Due: the newest sample of a connection says most).
type LiveConn struct {
	ID         string
	Conn, Loop int
	Ms         float64
	WaitMs     *float64
	Stalled    bool
	Due        int64
}

// LiveVerdict: the stall rule (internal/stall) on stall step ID's
// connections so far: Stalled of Conns, or not Judged and Why.
type LiveVerdict struct {
	ID             string
	Judged         bool
	Stalled, Conns int
	Why            string
}

// LiveLag: a loop's largest lag (Ms) in a window of Server's /lag
// stream, the window ending At; Where the server's detector saw it held
// and for how long (HeldMs), for a block that began in the last second.
type LiveLag struct {
	Server  string
	Loop    int
	Ms      float64
	Blocked bool
	At      time.Time
	Where   string
	HeldMs  float64
}

func (LiveRate) live()    {}
func (LiveProbe) live()   {}
func (LiveConn) live()    {}
func (LiveVerdict) live() {}
func (LiveLag) live()     {}

// LiveObserver is an Observer that takes the live samples too. The
// runner asks its tools for them and reads them only when one of its
// observers is a LiveObserver; ObserveLive is called as they come, from
// the goroutines that read them (one per tool, and the /lag stream's
// reader), at once.
type LiveObserver interface {
	Observer
	ObserveLive(Live)
}
