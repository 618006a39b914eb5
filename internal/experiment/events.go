package experiment

import "github.com/bystander-kit/bystander/internal/results"

// The runner tells its observers what happens, as it happens, in a small
// set of typed events: the terminal's progress (progress.go) and the
// stage (stagesource.go) are observers, and see nothing else of the run.

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
